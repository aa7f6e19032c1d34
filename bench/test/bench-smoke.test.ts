import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testEnv } from '@svc/testing';

/**
 * The bench scripts must never rot: every scenario runs here through the real `npm run bench`
 * script, at a tiny size, against this test run's Postgres and Redis (its databases and keys are
 * named inside the run's namespace, so the global teardown drops whatever a failure leaves).
 * No timing is asserted: only that each scenario produced its figures.
 */
const ROOT = path.resolve(__dirname, '..', '..');

interface Row {
  figure: string;
  unit: string;
  platform: number | null;
  baseline: number | null;
  ratio: number | null;
  target: unknown;
  totalExact?: boolean;
}
interface Scenario {
  id: string;
  error?: string;
  rows: Row[];
  rss?: Record<string, number>;
  complete?: boolean;
  totalExact?: boolean;
  details?: Record<string, any>;
}
interface Results {
  scale: number;
  host: { cores: number; memoryGiB: number };
  scenarios: Scenario[];
}

/**
 * The whole tiny-scale bench: about 40 s on an idle 2-core host, several times that when the
 * suite's other files and neighbours load it (its work is mostly process starts). Interrupted
 * before jest's own limit so that it still drops its databases.
 */
const BENCH_LIMIT_MS = 300_000;
let results: Results;
let output = '';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-smoke-'));
/** The generated part of BENCHMARKS.md goes into a file of this run, never the repository's. */
const markdownFile = path.join(tmp, 'BENCHMARKS.md');

beforeAll(async () => {
  const env = testEnv();
  const out = path.join(tmp, 'results.json');
  const args = [
    path.join(ROOT, 'scripts', 'bench.mjs'),
    '--scale', '0.01', '--no-build', '--markdown-file', markdownFile, '--out', out, '--log-level', 'warn',
    '--log-dir', path.join(tmp, 'logs'),
    '--db-name', `svc_test_${env.runId}_bench`.toLowerCase(),
    '--redis-prefix', `${env.redisPrefix}:bench`,
  ];
  let interrupted = false;
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: env.adminUrl, REDIS_URL: env.redisUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      interrupted = true;
      child.kill('SIGINT');
    }, BENCH_LIMIT_MS);
    child.on('close', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  // an interrupted bench drops its databases under the running scenario: its results say nothing
  if (interrupted) throw new Error(`the bench did not finish within ${BENCH_LIMIT_MS / 1000} s:\n${output.slice(-4000)}`);
  try {
    results = JSON.parse(readFileSync(out, 'utf8')) as Results;
  } catch {
    throw new Error(`the bench wrote no results (exit ${code}):\n${output.slice(-4000)}`);
  }
}, BENCH_LIMIT_MS + 20_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function scenario(id: string): Scenario {
  const s = results.scenarios.find((x) => x.id === id);
  if (!s) throw new Error(`no ${id} in the results:\n${output.slice(-3000)}`);
  if (s.error) throw new Error(`${id} failed: ${s.error}\n${output.slice(-3000)}`);
  return s;
}

function expectFigures(s: Scenario, withBaseline = true): void {
  expect(s.rows.length).toBeGreaterThan(0);
  for (const r of s.rows) {
    expect(r.platform).toBeGreaterThan(0);
    if (withBaseline) {
      expect(r.baseline).toBeGreaterThan(0);
      expect(r.ratio).toBeGreaterThan(0);
    }
  }
}

describe('npm run bench at a tiny scale', () => {
  it('records the host and the scale of the run', () => {
    expect(results.scale).toBe(0.01);
    expect(results.host.cores).toBeGreaterThan(0);
    expect(results.host.memoryGiB).toBeGreaterThan(0);
  });

  it('B1 measures added items against the bare Koa echo server and stores every accepted item', () => {
    const s = scenario('B1');
    expectFigures(s);
    expect(s.rows.map((r) => r.figure)).toEqual(['requests/s', 'p50', 'p99']);
    expect(s.details!.api.non2xx).toBe(0);
    expect(s.details!.api.stored).toBeGreaterThanOrEqual(s.details!.api.ok);
  });

  it('B2 measures bulk items/s against raw multi-row inserts', () => {
    const s = scenario('B2');
    expectFigures(s);
    expect(s.details!.api.non2xx).toBe(0);
    expect(s.details!.api.stored).toBeGreaterThanOrEqual(s.details!.api.ok * 1000);
  });

  it('B3 processes every added item to completed on the simulated machines and on raw BullMQ', () => {
    const s = scenario('B3');
    const webhookRows = s.rows.filter((r) => /webhook/.test(r.figure));
    expectFigures({ ...s, rows: s.rows.filter((r) => !webhookRows.includes(r)) });
    expect(s.complete).toBe(true);
    expect(s.details!.completed).toBe(s.details!.total);
    // the run with a webhook subscription: every completion's event delivered once, its rate and delays
    expect(webhookRows.map((r) => r.figure)).toEqual([
      'completed items/s with a webhook subscription (baseline: without)', 'item.completed webhooks delivered/s (one deliverer process)',
      'webhook deliverer CPU per 1,000 events', 'change → webhook delivered, p50', 'change → webhook delivered, p99',
    ]);
    const hooked = s.details!.webhook;
    expect(hooked.completed).toBe(hooked.total);
    expect(hooked.webhook.distinct).toBe(hooked.completed);
    // delivered by a process of its own, whose CPU was measured
    expect(hooked.webhook.delivererCpuMs).toBeGreaterThan(0);
    for (const r of webhookRows) expect(r.platform).toBeGreaterThanOrEqual(0);
  });

  it('B4 measures trigger → running and stop → stopped next to raw BullMQ and pub/sub, and the legs of trigger → running', () => {
    const s = scenario('B4');
    const legRows = s.rows.filter((r) => r.figure.startsWith('trigger → running, '));
    expectFigures({ ...s, rows: s.rows.filter((r) => !legRows.includes(r)) });
    expect(legRows.map((r) => r.figure)).toEqual([
      'trigger → running, request → transaction begins, p50', 'trigger → running, transaction → on the machine queue, p50',
      'trigger → running, queue → the API\'s worker takes it, p50', 'trigger → running, worker → start statement, p50',
    ]);
    // every measured try found on its machine queue
    for (const values of Object.values(s.details!.legs as Record<string, number[]>)) expect(values).toHaveLength(s.details!.tries);
    expect(s.details!.toRunning).toHaveLength(s.details!.tries);
    expect(s.details!.toStopped).toHaveLength(s.details!.tries);
  });

  it('B5 lists pages with and without status and meta.total is exact', () => {
    const s = scenario('B5');
    const consoleRows = s.rows.filter((r) => r.figure.startsWith('console '));
    expectFigures({ ...s, rows: s.rows.filter((r) => !consoleRows.includes(r)) });
    expect(s.totalExact).toBe(true);
    // the console: its gzipped JavaScript, and a cold load of the overview showing the queue's count
    expect(consoleRows.map((r) => r.figure)).toEqual(['console JavaScript, gzipped', 'console overview rendered, median of 1 cold load']);
    expect(consoleRows[0]!.platform).toBeGreaterThan(10);
    if (process.env.SVC_CHROMIUM) {
      expect(consoleRows[1]!.platform).toBeGreaterThan(0);
      expect(s.details!.console.overview.countExact).toBe(true);
    } else {
      expect(consoleRows[1]!.platform).toBeNull();
    }
    for (const v of Object.values<any>(s.details!.variants)) expect(v.metaTotal).toBe(v.expectedTotal);
  });

  it('B7 runs B3 on one and two dispatchers and on a single Redis and a 3-primary Redis Cluster, every item completed', () => {
    const s = scenario('B7');
    expect(s.complete).toBe(true);
    const [cluster, twoDispatchers, clusterCommands, twoCommands, idleCommands, itemMemory, jobMemory] = s.rows;
    for (const r of [cluster, twoDispatchers, clusterCommands, twoCommands]) {
      expect(r!.platform).toBeGreaterThan(0);
      expect(r!.baseline).toBeGreaterThan(0);
      expect(r!.ratio).toBeGreaterThan(0);
    }
    expect(cluster!.figure).toMatch(/Redis Cluster of 3 primaries/);
    expect(twoDispatchers!.figure).toMatch(/2 dispatcher processes/);
    // each set-up ran on the Redis it names, and that Redis counted the platform's commands
    const runs = s.details!.runs as Record<string, Array<{ completed: number; total: number; dispatchers: number; redis: { kind: string; commands: { total: number } } }>>;
    expect(runs.cluster1![0]!.redis.kind).toBe('Redis Cluster, 3 primaries');
    expect(runs.single1![0]!.redis.kind).toBe('single Redis');
    expect(runs.single2![0]!.dispatchers).toBe(2);
    for (const r of Object.values(runs).flat()) {
      expect(r.completed).toBe(r.total);
      expect(r.redis.commands.total).toBeGreaterThan(0);
    }
    // an idle dispatcher still polls its BullMQ queue and renews its epoch marker
    expect(idleCommands!.platform).toBeGreaterThan(0);
    // a job waiting on an offline machine holds its BullMQ entry in Redis
    expect(s.details!.memory.jobs.count).toBeGreaterThan(0);
    expect(jobMemory!.platform).toBeGreaterThan(0);
    expect(itemMemory!.figure).toMatch(/per waiting item/);
  });

  it('B8 connects idle robots to one API process, reads its memory and times a robot\'s trigger → job.start', () => {
    const s = scenario('B8');
    expect(s.complete).toBe(true);
    expect(s.details!.connected).toBe(s.details!.robots);
    const [connected, rss, , , startP50, startP99, runningP50, runningP99] = s.rows;
    expect(connected!.platform).toBe(s.details!.robots);
    expect(rss!.platform).toBeGreaterThan(0);
    expect(rss!.baseline).toBeGreaterThan(0);
    // at this size the heartbeats of the short window may all fall outside it: no CPU figure asserted
    for (const r of [startP50, startP99, runningP50, runningP99]) expect(r!.platform).not.toBeNull();
    expect(s.details!.toStart).toHaveLength(s.details!.tries);
    expect(s.details!.completed).toBe(s.details!.tries);
  });

  it('B9 exports every item of its queue as NDJSON and CSV and reads the API\'s peak memory', () => {
    const s = scenario('B9');
    expect(s.totalExact).toBe(true);
    expect(s.rows.map((r) => r.figure)).toEqual([
      'items exported per second, NDJSON', 'items exported per second, CSV', 'API peak RSS while exporting (VmHWM)',
    ]);
    for (const r of s.rows) expect(r.platform).toBeGreaterThan(0);
    for (const format of ['ndjson', 'csv']) expect(s.details!.formats[format].received).toBe(s.details!.total);
  });

  it('B11 times the neighbour\'s work quiet and during the flood, and the flood drains every item with the neighbour and alone', () => {
    const s = scenario('B11');
    expect(s.complete).toBe(true);
    const legRows = s.rows.filter((r) => / → .*, p99 during the flood/.test(r.figure) && !/ p99 during/.test(r.figure.split(',')[0]!));
    expect(legRows.map((r) => r.figure.split(',')[0])).toEqual([
      'neighbour: add → item row written', 'neighbour: item row → its consumer job created (the dispatcher)', 'neighbour: consumer job created → running on the robot',
      'neighbour: consumer running → item taken', 'neighbour: taken → processed',
      'neighbour: trigger → job row written', 'neighbour: job row → running',
    ]);
    for (const r of legRows) expect(r.platform).toBeGreaterThanOrEqual(0);
    expect(s.rows.filter((r) => !legRows.includes(r)).map((r) => r.figure)).toEqual([
      'neighbour: add → processed p99 during the flood (baseline: quiet)', 'neighbour: settings read p99 during the flood (baseline: quiet)',
      'neighbour: trigger → running p99 during the flood (baseline: quiet)', 'neighbour: stop → stopped p99 during the flood (baseline: quiet)',
      'flood: items drained/s with the neighbour busy (baseline: alone)',
    ]);
    expectFigures({ ...s, rows: s.rows.filter((r) => !legRows.includes(r)) });
    for (const phase of ['withNeighbour', 'alone']) expect(s.details![phase].completed).toBe(s.details!.perRound);
    for (const phase of ['quiet', 'busy']) {
      for (const k of ['addToProcessed', 'settingsRead', 'triggerToRunning', 'stopToStopped']) expect(s.details![phase][k].length).toBeGreaterThanOrEqual(5);
      for (const values of Object.values(s.details![phase].legs as Record<string, number[]>)) expect(values.length).toBe(s.details![phase].addToProcessed.length);
    }
  });

  it('writes the generated part of BENCHMARKS.md: the run and its host, every figure, where the time goes', () => {
    const text = readFileSync(markdownFile, 'utf8');
    const start = text.indexOf('<!-- bench:results:start -->');
    const end = text.indexOf('<!-- bench:results:end -->');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const section = text.slice(start, end);
    // a run at a tiny scale says it is not the full run the file's figures are for
    expect(section).toMatch(/^Run: .*scale 0\.01.*\(NOT a full run\)\.$/m);
    expect(section).toMatch(/^Host: \d+ cores .*Node v\d+.*PostgreSQL .*autovacuum (on|off).*Redis /m);
    for (const id of ['B1', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7', 'B8', 'B9', 'B11']) expect(section).toContain(`| ${id} | `);
    for (const heading of ['### Figures', '### CPU by process', '### Resident memory (MB)', '### B3: Postgres per completed item', '### B7: Redis commands per completed item']) {
      expect(section).toContain(heading);
    }
    // CPU per 1,000 requests of B1's platform, by process (API, dispatcher, Postgres backends …)
    expect(section).toMatch(/^\| B1 \| platform \| 1,000 requests \| [\d,.]+ \| [\d,.]+ \|/m);
  });

  it('B6 reports the peak memory of the API and the dispatcher during B1 and B3', () => {
    const s = scenario('B6');
    expect(s.rows.map((r) => r.figure)).toEqual([
      'API peak RSS during B1', 'dispatcher peak RSS during B1', 'API peak RSS during B3', 'dispatcher peak RSS during B3',
    ]);
    for (const r of s.rows) expect(r.platform).toBeGreaterThan(0);
  });
});
