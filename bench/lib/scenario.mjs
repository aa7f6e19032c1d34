// What every scenario shares: a fresh database cloned from the run's migrated template, a Redis
// prefix of its own, the platform processes it started, and clean-up whatever happens.
import path from 'node:path';
import { core } from './core.mjs';
import { createBenchDatabase, dropBenchDatabase, clearRedisPrefix } from './services.mjs';
import { runJson } from './proc.mjs';

/**
 * `redis`: a private Redis of B7 (bench/lib/redis-servers.mjs) instead of the run's; its keys are
 * cleared the same way at the end.
 */
export async function withScenario(run, id, fn, { redis = null } = {}) {
  const lower = id.toLowerCase();
  const dbName = `${run.dbName}_${lower}`;
  const databaseUrl = await createBenchDatabase(run.baseDbUrl, dbName, { template: run.templateDb });
  const redisPrefix = `${run.redisPrefix}:${lower}`;
  const sql = core.createSql(databaseUrl, { max: 4 });
  const platforms = [];
  const ctx = {
    id,
    databaseUrl,
    redisPrefix,
    redis,
    sql,
    /** Remembers a started platform so it is stopped even when the scenario throws. */
    track(p) {
      platforms.push(p);
      return p;
    },
  };
  try {
    return await fn(ctx);
  } finally {
    for (const p of platforms.reverse()) await p.stop().catch(() => undefined);
    await sql.end({ timeout: 5 }).catch(() => undefined);
    if (!run.keep) {
      await dropBenchDatabase(run.baseDbUrl, dbName).catch((err) => run.log(`could not drop ${dbName}: ${err.message}`));
      await clearRedisPrefix(redis?.target ?? run.redisUrl, redisPrefix).catch(() => undefined);
    }
  }
}

/** Runs the load generator (bench/load.mjs) in its own process. */
export function load(run, name, input, timeoutMs) {
  return runJson(name, path.join(run.root, 'bench', 'load.mjs'), input, { env: process.env, logDir: run.logDir, timeoutMs });
}

/** Runs a baseline script of bench/raw/ in its own process. */
export function raw(run, name, script, input, timeoutMs) {
  return runJson(name, path.join(run.root, 'bench', 'raw', script), input, { env: process.env, logDir: run.logDir, timeoutMs });
}

export function percentile(values, p) {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export const round = (n, digits = 2) => (n === null || n === undefined || Number.isNaN(n) ? null : Math.round(n * 10 ** digits) / 10 ** digits);

/** A ratio of two figures, or null when either is missing. */
export const ratio = (a, b) => (a && b ? round(a / b, 3) : null);

/** Fails the scenario when the load produced errors a benchmark must not hide. */
export function checkLoad(what, res) {
  if (res.ok === 0) throw new Error(`${what}: no successful response (${JSON.stringify(res.statusCodes)}, errors ${res.errors})`);
}

/** CPU ms per 1,000 operations, by process group (where the time goes). */
export function cpuPer(cpuMsByGroup, operations) {
  const out = {};
  for (const [k, v] of Object.entries(cpuMsByGroup)) if (v !== null && v !== undefined) out[k] = operations ? round((v * 1000) / operations, 0) : null;
  return { msPer1000: out, operations };
}

const median = (xs) => percentile(xs.filter((x) => x !== null && x !== undefined), 50);

/**
 * Measures a baseline and the platform in `rounds` alternating rounds (baseline, platform,
 * baseline, …) so that drift on a shared machine hits both alike. Each side: {warm?, run(i),
 * meter?}; `run` returns a load result ({ok, durationSec, latency, cpuMs, …}). Returns each side
 * merged (sums; latency percentiles are the median of the rounds'), and `ratio(fn)`: the median
 * over rounds of fn(platform) ÷ fn(baseline).
 */
export async function alternate(rounds, sides) {
  const names = Object.keys(sides);
  for (const n of names) if (sides[n].warm) await sides[n].warm();
  const per = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < rounds; i++) {
    for (const n of names) {
      const meter = sides[n].meter?.();
      await meter?.start();
      const r = await sides[n].run(i);
      const cpu = meter ? await meter.stop() : {};
      per[n].push({ ...r, cpuGroups: { ...cpu, ...(r.cpuMs !== undefined ? { load: r.cpuMs } : {}) } });
    }
  }
  const out = { rounds: per };
  for (const n of names) out[n] = mergeRounds(per[n]);
  out.ratio = (fn) => round(median(per[names[1]].map((p, i) => ratioRaw(fn(p), fn(per[names[0]][i])))), 3);
  return out;
}

const ratioRaw = (a, b) => (a && b ? a / b : null);

function mergeRounds(rs) {
  const sum = (k) => rs.reduce((a, r) => a + (r[k] ?? 0), 0);
  const ok = sum('ok');
  const durationSec = sum('durationSec');
  const cpu = {};
  for (const r of rs) for (const [k, v] of Object.entries(r.cpuGroups ?? {})) if (v !== null) cpu[k] = (cpu[k] ?? 0) + v;
  return {
    ok,
    requests: sum('requests'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    durationSec,
    rps: durationSec ? ok / durationSec : 0,
    latency: {
      p50: median(rs.map((r) => r.latency?.p50)),
      p90: median(rs.map((r) => r.latency?.p90)),
      p99: median(rs.map((r) => r.latency?.p99)),
      max: Math.max(...rs.map((r) => r.latency?.max ?? 0)),
    },
    // the meters run through each round's settling too (load.mjs)
    cpu: cpuPer(cpu, ok + sum('settleOk')),
    statusCodes: rs.map((r) => r.statusCodes),
  };
}
