// What every scenario shares: a fresh database cloned from the run's migrated template, a Redis
// prefix of its own, the platform processes it started, and clean-up whatever happens.
import path from 'node:path';
import { core } from './core.mjs';
import { createBenchDatabase, dropBenchDatabase, clearRedisPrefix } from './services.mjs';
import { runJson } from './proc.mjs';

export async function withScenario(run, id, fn) {
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
      await clearRedisPrefix(run.redisUrl, redisPrefix).catch(() => undefined);
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
