// `npm run bench`: the benchmark suite of BENCHMARKS.md. Builds, finds or starts Postgres and
// Redis, creates a dedicated database (one clone per scenario) and Redis prefix, runs each
// scenario next to its raw baseline, prints a table, writes bench/results/latest.json and, after
// a full run, rewrites the generated part of BENCHMARKS.md (between its markers: the run and its
// host, every figure with its raw baseline, where the time goes; bench/lib/report.mjs).
// Everything it created is dropped.
//
//   npm run bench                          all scenarios, full size
//   npm run bench -- --only B1,B5          some scenarios (B6 comes from B1 and B3)
//   npm run bench -- --only B7 --scale 0.1 B3 on 1 vs 2 dispatchers and on a single Redis vs a local
//                                         3-primary Redis Cluster (docs/scaling.md)
//   npm run bench -- --only B8             1,000 idle robots (raw WebSockets of one process) on one API
//                                         process: its RSS, CPU per 1,000 heartbeats, trigger → job.start
//   npm run bench -- --only B9             GET …/items/export of 1,000,000 items: items/s and the API's peak RSS
//   npm run bench -- --only B10            the retention soak: 200 items/s for 30 minutes with a
//                                         5-minute retention; not in the default run for its length.
//                                         --minutes N, --rate N (items/s), --retention-min N,
//                                         --retention-action delete|archive, --hold-rr-from M --hold-rr-minutes N
//                                         (a repeatable-read snapshot held from minute M for N minutes);
//                                         --scale 0.1 is a 3-minute run (BENCHMARKS.md, B10)
//   npm run bench -- --only B11            a neighbour's flood: one workspace bulk-adds 100,000 items at 4,500/s
//                                         while another does one thing at a time; the other's p99s quiet and during.
//                                         --b11-connections N: the flood as fast as N connections add (not paced)
//   npm run bench -- --scale 0.1           every size and duration × 0.1
//   npm run bench -- --profile api,dispatcher   --cpu-prof those processes (files in the log folder)
//   --node-args '--trace-gc'               node flags for the platform's processes (investigations)
//   --tracing                             the platform's processes trace (OpenTelemetry on, exporting over
//                                         OTLP/HTTP to a sink in this process that drops the spans)
//   --vacuum-ms 5000                      B3: vacuum the queue tables this often (what autovacuum would do)
//   --prefetch 10                         B3: items a consumer holds at once (agent-sim; auto as shipped)
//   --b3-retention 3000000                B3 while the retention pass deletes that many expired rows of another queue, next to
//                                         B3 on the same rows kept (nothing to remove), in the order A B B A (replaces the rest of B3)
//   --b3-retention-flow 2000              with --b3-retention: in B the other queue's items expire at that rate from the run's
//                                         start (the pass's steady state) instead of all at once (a backlog)
//   --b3-env CLAIM_FLOOR=on               B3 with these settings for the platform's processes next to B3 without, A B B A
//   --b3-order AB                         with --b3-retention or --b3-env: the runs' order, A without and B with (default ABBA)
//   --b5-seen 10000000                    B5: the queue has first seen this many items in all, those beyond B5's own
//                                         ended long ago and removed by the retention pass before B5 seeds and measures
//   --b5-reindex                          with --b5-seen: rebuild the table's indexes after that pass (REINDEX CONCURRENTLY)
//   --b5-retention 4000000                B5 while the dispatcher's retention pass deletes that many expired rows of another
//                                         queue of the workspace (passes every second)
//   --b5-retention-flow 1500              with --b5-retention: those rows expire at that rate from the measurement's start (the
//                                         pass's steady state) instead of all at once (a backlog)
//   --b5-retention-kept                   with --b5-retention: the same rows, kept (nothing expires): the side to compare with
//   other options: --out FILE, --markdown | --no-markdown (write the generated part of BENCHMARKS.md
//                  after any run | never; default: after a full run only), --markdown-file FILE (write it
//                  into FILE instead of BENCHMARKS.md; implies --markdown), --log-level LEVEL, --log-dir DIR,
//                  --keep (keep the databases and Redis keys), --no-build, --db-name NAME, --redis-prefix PREFIX
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureInstalledAndBuilt, ensureServices, hostInfo, ROOT, SetupError } from './services.mjs';

const SCENARIOS = ['B1', 'B2', 'B3', 'B4', 'B5', 'B7', 'B8', 'B9', 'B10', 'B11'];
/** Run only when named with --only: the soak lasts half an hour at scale 1. */
const NOT_BY_DEFAULT = ['B10'];

function parseArgs(argv) {
  const o = { soak: {}, prefetch: 0, b3Retention: 0, b3RetentionFlow: 0, b3Env: null, b3Order: 'ABBA', b11Connections: 0, b5Seen: 0, b5Retention: 0, b5RetentionFlow: 0, b5RetentionKept: false, b5Reindex: false, vacuumMs: 0, nodeArgs: [], only: null, scale: 1, out: null, markdown: null, markdownFile: null, profile: [], logLevel: 'info', logDir: null, keep: false, build: true, dbName: null, redisPrefix: null };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new SetupError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--only': o.only = value().toUpperCase().split(',').map((s) => s.trim()).filter(Boolean); break;
      case '--scale': o.scale = Number(value()); break;
      case '--out': o.out = path.resolve(value()); break;
      case '--markdown': o.markdown = true; break;
      case '--no-markdown': o.markdown = false; break;
      case '--markdown-file': o.markdownFile = path.resolve(value()); break;
      case '--profile': o.profile = value().split(',').map((s) => s.trim()); break;
      case '--log-level': o.logLevel = value(); break;
      case '--log-dir': o.logDir = path.resolve(value()); break;
      case '--keep': o.keep = true; break;
      case '--vacuum-ms': o.vacuumMs = Number(value()); break;
      case '--prefetch': o.prefetch = Number(value()); break;
      case '--b5-seen': o.b5Seen = positive(flag, value()); break;
      case '--b5-retention': o.b5Retention = positive(flag, value()); break;
      case '--b5-retention-flow': o.b5RetentionFlow = positive(flag, value()); break;
      case '--b5-retention-kept': o.b5RetentionKept = true; break;
      case '--b5-reindex': o.b5Reindex = true; break;
      case '--b3-retention': o.b3Retention = positive(flag, value()); break;
      case '--b3-retention-flow': o.b3RetentionFlow = positive(flag, value()); break;
      case '--b11-connections': o.b11Connections = Number(value()); if (!Number.isInteger(o.b11Connections) || o.b11Connections < 1) throw new SetupError('--b11-connections: a whole number from 1'); break;
      case '--b3-order': o.b3Order = value(); if (!/^[AB]*A[AB]*$/.test(o.b3Order) || !o.b3Order.includes('B')) throw new SetupError('--b3-order: A and B, at least one of each (ABBA)'); break;
      case '--b3-env': o.b3Env = value(); if (!/^[A-Z_][A-Z0-9_]*=[^,]*(,[A-Z_][A-Z0-9_]*=[^,]*)*$/.test(o.b3Env)) throw new SetupError('--b3-env: KEY=VALUE[,KEY=VALUE]'); break;
      case '--node-args': o.nodeArgs = value().split(' ').filter(Boolean); break;
      case '--no-build': o.build = false; break;
      case '--db-name': o.dbName = value(); break;
      case '--redis-prefix': o.redisPrefix = value(); break;
      case '--tracing': o.tracing = true; break;
      case '--minutes': o.soak.minutes = positive(flag, value()); break;
      case '--rate': o.soak.rate = positive(flag, value()); break;
      case '--retention-min': o.soak.retentionMin = positive(flag, value()); if (o.soak.retentionMin < 1) throw new SetupError('--retention-min: 1 or more (each minute is counted after it ends, before retention removes it)'); break;
      case '--retention-action': o.soak.action = value(); break;
      case '--hold-rr-from': o.soak.holdFrom = nonNegative(flag, value()); break;
      case '--hold-rr-minutes': o.soak.holdMinutes = positive(flag, value()); break;
      default: throw new SetupError(`unknown option ${flag} (see the top of scripts/bench.mjs)`);
    }
  }
  if (o.markdownFile && o.markdown === false) throw new SetupError('--markdown-file and --no-markdown: one or the other');
  if (o.markdownFile) o.markdown = true;
  if (o.soak.action !== undefined && !['delete', 'archive'].includes(o.soak.action)) throw new SetupError('--retention-action: delete or archive');
  if (o.b3RetentionFlow && !o.b3Retention) throw new SetupError('--b3-retention-flow needs --b3-retention (the other queue\'s items)');
  if ((o.b5RetentionFlow || o.b5RetentionKept) && !o.b5Retention) throw new SetupError('--b5-retention-flow and --b5-retention-kept need --b5-retention (the other queue\'s items)');
  if (o.b5RetentionFlow && o.b5RetentionKept) throw new SetupError('--b5-retention-flow or --b5-retention-kept, not both');
  if (o.soak.holdMinutes !== undefined && o.soak.holdFrom === undefined) throw new SetupError('--hold-rr-minutes needs --hold-rr-from');
  for (const [flag, v] of [['--minutes', o.soak.minutes], ['--hold-rr-from', o.soak.holdFrom], ['--hold-rr-minutes', o.soak.holdMinutes]]) {
    if (v !== undefined && !Number.isInteger(v)) throw new SetupError(`${flag}: a whole number of minutes`);
  }
  if (!(o.scale > 0 && o.scale <= 10)) throw new SetupError('--scale must be a number in (0, 10]');
  if (o.only) {
    const bad = o.only.filter((s) => ![...SCENARIOS, 'B6'].includes(s));
    if (bad.length) throw new SetupError(`unknown scenario ${bad.join(', ')}: choose from ${[...SCENARIOS, 'B6'].join(', ')}`);
    if (o.only.includes('B6')) o.only.push('B1', 'B3');
  }
  if (o.dbName && !/^[a-z0-9_]{1,50}$/.test(o.dbName)) throw new SetupError('--db-name: lowercase letters, digits and _ only');
  return o;
}

function positive(flag, v) {
  const n = Number(v);
  if (!(n > 0)) throw new SetupError(`${flag} must be a number above 0`);
  return n;
}

function nonNegative(flag, v) {
  const n = Number(v);
  if (!(n >= 0)) throw new SetupError(`${flag} must be a number, 0 or more`);
  return n;
}

async function serverVersions(core, dbUrl, databaseUrl, redisUrl) {
  // the maintenance database: the configured one may not exist yet
  const sql = core.createSql(dbUrl(databaseUrl, 'postgres'), { max: 1 });
  const redis = (await import('../bench/lib/services.mjs')).benchRedis(redisUrl);
  try {
    const [{ server_version: pg }] = await sql`show server_version`;
    // the settings that move the figures most (BENCHMARKS.md: a server with default settings)
    const settings = await sql`select name, setting, unit from pg_settings where name = any(${['autovacuum', 'fsync', 'synchronous_commit', 'shared_buffers']}) order by name`;
    const info = await redis.info('server');
    return {
      postgres: pg.split(' ')[0],
      postgresSettings: Object.fromEntries(settings.map((r) => [r.name, r.unit === '8kB' ? `${Math.round((Number(r.setting) * 8) / 1024)} MB` : r.setting])),
      redis: /redis_version:(\S+)/.exec(info)?.[1] ?? '?',
    };
  } finally {
    await sql.end();
    redis.disconnect();
  }
}

/** The databases of this run's scenarios (the template is dropped on its own). */
async function benchDatabases(core, dbUrl, databaseUrl, dbName) {
  const sql = core.createSql(dbUrl(databaseUrl, 'postgres'), { max: 1 });
  try {
    const like = `${dbName.replace(/_/g, '\\_')}\\_%`;
    return (await sql`select datname from pg_database where datname like ${like} and datname <> ${`${dbName}_tpl`}`).map((r) => r.datname);
  } finally {
    await sql.end();
  }
}

/** The checked-out commit, `+` when the tree has uncommitted changes (null outside a git checkout). */
function gitCommit() {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status !== 0) return null;
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' });
  return `${head.stdout.trim()}${dirty.status === 0 && dirty.stdout.trim() ? ' + uncommitted changes' : ''}`;
}

/** Accepts OTLP/HTTP exports and drops them: the cost measured is the platform's, not a collector's. */
async function startOtlpSink() {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return { endpoint: `http://127.0.0.1:${server.address().port}` };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.build) ensureInstalledAndBuilt();
  // imported after the build: they load the compiled core
  const { core } = await import('../bench/lib/core.mjs');
  const { createBenchDatabase, dropBenchDatabase, clearRedisPrefix, dbUrl } = await import('../bench/lib/services.mjs');
  const { killAll } = await import('../bench/lib/proc.mjs');
  const report = await import('../bench/lib/report.mjs');
  const scenarioFns = {
    B1: (await import('../bench/scenarios/b1-add-item.mjs')).b1,
    B2: (await import('../bench/scenarios/b2-bulk.mjs')).b2,
    B3: (await import('../bench/scenarios/b3-end-to-end.mjs')).b3,
    B4: (await import('../bench/scenarios/b4-latency.mjs')).b4,
    B5: (await import('../bench/scenarios/b5-list.mjs')).b5,
    B7: (await import('../bench/scenarios/b7-scaling.mjs')).b7,
    B8: (await import('../bench/scenarios/b8-idle-robots.mjs')).b8,
    B9: (await import('../bench/scenarios/b9-export.mjs')).b9,
    B10: (await import('../bench/scenarios/b10-soak-retention.mjs')).b10,
    B11: (await import('../bench/scenarios/b11-neighbours.mjs')).b11,
  };

  // the platform's processes inherit this environment: with it set they trace, and pay the export
  const sink = opts.tracing ? await startOtlpSink() : null;
  if (sink) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.endpoint;
  const { databaseUrl, redisUrl, stopStarted } = await ensureServices();
  const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const dbName = opts.dbName ?? `svc_bench_${runId}`;
  const run = {
    root: ROOT,
    scale: opts.scale,
    // the smoke run of `npm test`: no warm-ups, no informative extra runs (mostly process starts)
    tiny: opts.scale < 0.1,
    baseDbUrl: databaseUrl,
    redisUrl,
    dbName,
    templateDb: `${dbName}_tpl`,
    redisPrefix: opts.redisPrefix ?? `svc-bench-${runId}`,
    encryptionKey: randomBytes(32).toString('base64'),
    logLevel: opts.logLevel,
    logDir: opts.logDir ?? path.join(os.tmpdir(), `svc-bench-${runId}`),
    profile: opts.profile,
    nodeArgs: opts.nodeArgs,
    vacuumMs: opts.vacuumMs,
    prefetch: opts.prefetch,
    b5Seen: opts.b5Seen,
    b5Retention: opts.b5Retention,
    b5RetentionFlow: opts.b5RetentionFlow,
    b5RetentionKept: opts.b5RetentionKept,
    b5Reindex: opts.b5Reindex,
    b3Retention: opts.b3Retention,
    b3RetentionFlow: opts.b3RetentionFlow,
    b3Env: opts.b3Env,
    b3Order: opts.b3Order,
    b11Connections: opts.b11Connections,
    soak: opts.soak,
    keep: opts.keep,
    log: (m) => console.error(m),
    redisPid: null,
  };
  mkdirSync(run.logDir, { recursive: true });

  let cleaned = false;
  const cleanUp = async () => {
    if (cleaned) return;
    cleaned = true;
    killAll();
    if (!run.keep) {
      // every scenario's database is named `<dbName>_<id>` (B3 and B7 make several)
      for (const name of await benchDatabases(core, dbUrl, databaseUrl, dbName).catch(() => [])) await dropBenchDatabase(databaseUrl, name).catch(() => undefined);
      await dropBenchDatabase(databaseUrl, run.templateDb).catch(() => undefined);
      await clearRedisPrefix(redisUrl, run.redisPrefix).catch(() => undefined);
    }
    await stopStarted();
  };
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error('\nInterrupted: stopping the bench processes and dropping its databases …');
    cleanUp().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  run.redisPid = await (await import('../bench/lib/platform.mjs')).redisServerPid(redisUrl, core).catch(() => null);
  const selected = SCENARIOS.filter((s) => (opts.only ? opts.only.includes(s) : !NOT_BY_DEFAULT.includes(s)));
  // a run at scale 1 of every default scenario, without tracing: the one the generated part of BENCHMARKS.md is for
  const fullRun = !opts.only && opts.scale === 1 && !opts.tracing;
  const results = {
    startedAt: new Date().toISOString(),
    finishedAt: null,
    scale: opts.scale,
    fullRun,
    commit: gitCommit(),
    scenariosRun: selected,
    host: { ...hostInfo(), cpu: os.cpus()[0]?.model?.trim() ?? '?', node: process.version, ...(await serverVersions(core, dbUrl, databaseUrl, redisUrl)) },
    logDir: run.logDir,
    scenarios: [],
  };
  let failures = 0;
  try {
    await createBenchDatabase(databaseUrl, run.templateDb);
    for (const id of selected) {
      if (interrupted) break;
      const t = Date.now();
      console.error(`${id} …`);
      try {
        const r = await scenarioFns[id](run);
        results.scenarios.push(r);
        console.error(`${id} done in ${Math.round((Date.now() - t) / 1000)} s`);
      } catch (err) {
        if (interrupted) break;
        failures++;
        console.error(`${id} failed: ${err.stack ?? err.message}`);
        results.scenarios.push({ id, error: String(err.message ?? err) });
      }
    }
  } finally {
    await cleanUp();
  }
  if (interrupted) return;
  if (run.keep) console.error(`Kept: databases ${dbName}_* and Redis keys ${run.redisPrefix}:*`);
  const b6 = report.b6Rows(results.scenarios);
  if (b6) results.scenarios.push(b6);
  results.finishedAt = new Date().toISOString();
  for (const s of results.scenarios) for (const r of s.rows ?? []) r.met = report.met(r);

  console.log(`\nBenchmarks (${results.host.cores} cores, ${results.host.memoryGiB} GiB, scale ${opts.scale}); ratio = platform ÷ raw baseline\n`);
  console.log(report.consoleTable(results));
  const soak = results.scenarios.find((s) => s.id === 'B10' && s.details);
  if (soak) console.log(`\nB10 per minute (a minute is ${soak.details.options.minuteSec} s at this scale):\n${(await import('../bench/scenarios/b10-soak-retention.mjs')).perMinuteTable(soak.details)}`);
  const out = opts.out ?? path.join(ROOT, 'bench', 'results', opts.tracing ? 'latest-tracing.json' : 'latest.json');
  report.writeJson(out, results);
  console.log(`\nWrote ${path.relative(process.cwd(), out) || out}; process logs${opts.profile.length ? ' and CPU profiles' : ''} in ${run.logDir}`);
  // a run with tracing on is reported next to the table, not into it
  if (opts.markdown ?? fullRun) {
    const file = opts.markdownFile ?? path.join(ROOT, 'BENCHMARKS.md');
    report.refreshMarkdown(file, results);
    const shown = path.relative(process.cwd(), file);
    console.log(`Rewrote the generated part of ${!shown || shown.startsWith('..') ? file : shown}${fullRun ? '' : ' (NOT a full run: it says so)'}`);
  }
  process.exitCode = failures ? 1 : 0;
}

main().catch((err) => {
  console.error(err instanceof SetupError ? err.message : err);
  process.exit(1);
});
