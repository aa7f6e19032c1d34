// The platform as a user runs it: the API, the dispatcher and the simulated machines, each a
// process of its own started from the compiled dist/.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { core } from './core.mjs';
import { cpuMeter, freePort, peakRssMb, startNode, stop, waitUntil } from './proc.mjs';
import { APPS, robotEnv } from '../../scripts/apps.mjs';
import { benchRedis } from './services.mjs';

/**
 * Starts what `parts` names ('api', 'dispatcher', 'deliverer', 'agents') against the scenario's database and
 * Redis prefix. `agents`: {machines: [{machineKey}], config: {...agent-sim config file}}, or a list
 * of such groups, each in a process of its own (`agents`, `agents-2`, …: two tenants' robots on
 * their own hosts).
 * `profile`: names of parts to run with --cpu-prof (profiles land in `<logDir>/profiles`).
 * `dispatchers`: how many dispatcher processes (`dispatcher`, `dispatcher-2`, …: replicas, as
 * docs/decisions/replicas.md runs them). `redis`: a private Redis of B7 (bench/lib/redis-servers.mjs)
 * instead of the run's.
 */
export async function startPlatform(run, { databaseUrl, redisPrefix, parts, agents, profile = [], env: extraEnv = {}, dispatchers = 1, redis = null }) {
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: run.redisUrl,
    ...(redis ? redis.env : {}),
    REDIS_PREFIX: redisPrefix,
    ASSET_ENCRYPTION_KEY: run.encryptionKey,
    LOG_LEVEL: run.logLevel,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    ...extraEnv,
  };
  const nodeArgs = (part, app) => [
    ...app.nodeArgs,
    ...(run.nodeArgs ?? []),
    ...(profile.includes(part) ? ['--cpu-prof', `--cpu-prof-dir=${path.join(run.logDir, 'profiles')}`, `--cpu-prof-name=${part}-${Date.now()}.cpuprofile`] : []),
  ];
  const procs = {};
  const platform = {
    procs,
    baseUrl: null,
    peakRss() {
      const out = {};
      for (const [name, p] of Object.entries(procs)) if (p.pid) out[name] = peakRssMb(p.pid);
      return out;
    },
    async stop() {
      // agents first (they hold work), then the dispatchers, then the API
      const order = [...Object.keys(procs).filter((n) => n.startsWith('agents')), ...Object.keys(procs).filter((n) => n.startsWith('dispatcher')), 'deliverer', 'api'];
      for (const name of order) if (procs[name]) await stop(procs[name]);
    },
  };
  try {
    if (parts.includes('api')) {
      const port = await freePort();
      procs.api = startNode('api', path.join(run.root, APPS.api.script), [], { env: { ...env, PORT: String(port) }, logDir: run.logDir, nodeArgs: nodeArgs('api', APPS.api) });
      platform.baseUrl = `http://127.0.0.1:${port}`;
      await waitUntil('the API to answer /ready', async () => {
        try {
          return (await fetch(`${platform.baseUrl}/ready`)).ok;
        } catch {
          return false;
        }
      }, { procs: [procs.api], timeoutMs: 30_000, everyMs: 100 });
    }
    // with a 'deliverer' part, webhook delivery runs in a process of its own, as deployed
    const dispatcherEnv = parts.includes('deliverer') ? { ...env, DISPATCHER_ROLE: 'dispatch' } : env;
    if (parts.includes('dispatcher')) {
      procs.dispatcher = startNode('dispatcher', path.join(run.root, APPS.dispatcher.script), [], { env: dispatcherEnv, logDir: run.logDir, nodeArgs: nodeArgs('dispatcher', APPS.dispatcher) });
      // started: it writes the dispatch epoch once its schedulers are in place (whatever the log level)
      const client = benchRedis(redis?.target ?? run.redisUrl);
      try {
        const epochKeys = await core.epochKeys(client, core.redisKeys(redisPrefix).dispatchEpoch);
        await waitUntil('the dispatcher to start', async () => (await Promise.all(epochKeys.map((k) => client.exists(k)))).every((n) => n === 1), { procs: [procs.dispatcher], timeoutMs: 30_000, everyMs: 100 });
      } finally {
        client.disconnect();
      }
      // the markers are written already: a further replica is started once its metrics answer
      // (served from its first moments, packages/core/src/metrics/)
      for (let i = 2; i <= dispatchers; i++) {
        const metricsPort = await freePort();
        const name = `dispatcher-${i}`;
        procs[name] = startNode(name, path.join(run.root, APPS.dispatcher.script), [], { env: { ...dispatcherEnv, METRICS_PORT: String(metricsPort) }, logDir: run.logDir, nodeArgs: nodeArgs('dispatcher', APPS.dispatcher) });
        await waitUntil(`${name} to start`, async () => {
          try {
            await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
            return true;
          } catch {
            return false;
          }
        }, { procs: [procs[name]], timeoutMs: 30_000, everyMs: 100 });
      }
    }
    if (parts.includes('deliverer')) {
      // started once its metrics answer (served from its first moments, whatever the log level)
      const metricsPort = await freePort();
      procs.deliverer = startNode('deliverer', path.join(run.root, APPS.dispatcher.script), [], {
        env: { ...env, DISPATCHER_ROLE: 'deliver', METRICS_PORT: String(metricsPort) }, logDir: run.logDir, nodeArgs: nodeArgs('deliverer', APPS.dispatcher),
      });
      await waitUntil('the deliverer to start', async () => {
        try {
          await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
          return true;
        } catch {
          return false;
        }
      }, { procs: [procs.deliverer], timeoutMs: 30_000, everyMs: 100 });
    }
    if (parts.includes('agents')) {
      // robots hold the platform's URL and their keys only: they reach it over the machine protocol
      if (!platform.baseUrl) throw new Error("the 'agents' part needs the 'api' part (robots connect to it)");
      for (const [i, group] of (Array.isArray(agents) ? agents : [agents]).entries()) {
        const name = i === 0 ? 'agents' : `agents-${i + 1}`;
        const configFile = path.join(run.logDir, `${name}-config-${Date.now()}.json`);
        writeFileSync(configFile, JSON.stringify(group.config ?? {}, null, 2));
        const args = ['--config', configFile, ...group.machines.flatMap((m) => ['--machine-key', m.machineKey])];
        procs[name] = startNode(name, path.join(run.root, APPS.agent.script), args, { env: { ...robotEnv(env), SVC_URL: platform.baseUrl }, logDir: run.logDir, nodeArgs: nodeArgs('agents', APPS.agent) });
      }
    }
    return platform;
  } catch (err) {
    await platform.stop();
    throw err;
  }
}

/** Waits until every machine of `ids` is online (its agent heartbeats). */
export async function waitMachinesOnline(sql, ids, procs, timeoutMs = 30_000) {
  await waitUntil('the simulated machines to come online', async () => {
    const [r] = await sql`select count(*)::int as n from machines where id = any(${ids}) and status in ('online', 'busy')`;
    return r.n === ids.length;
  }, { procs, timeoutMs, everyMs: 100 });
}

/**
 * Where the CPU of a measured phase goes: the platform's processes, the Postgres backends of the
 * scenario's database (`autovacuum`: its vacuum workers, counted in `postgres` too), and the
 * Redis server (shared with anything else running on the host).
 */
export function platformCpuMeter(sql, platform, redisPid, extraGroups = {}) {
  const groups = { ...extraGroups };
  for (const [name, p] of Object.entries(platform.procs)) groups[name] = () => [p.pid];
  // every backend, the meter's own included: the pool asks from any of its connections, and one
  // left out at start() and seen later would count from zero, the seeding it did before included
  groups.postgres = async () => (await sql`select pid from pg_stat_activity where datname = current_database()`).map((r) => r.pid);
  // a part of `postgres`, apart: what vacuum costs, which a workload's deletes and updates cause
  // but no statement of it shows (a worker's rounds shorter than the meter's tick are missed)
  groups.autovacuum = async () => (await sql`select pid from pg_stat_activity where datname = current_database() and backend_type = 'autovacuum worker'`).map((r) => r.pid);
  // the server's own processes (WAL writer, checkpointer, background writer, autovacuum launcher):
  // the WAL and dirty pages a workload leaves are written out there, outside any database's
  // backends; server-wide, so they count other databases' work too on a shared server
  groups.postgresServer = async () => (await sql`select pid from pg_stat_activity where datname is null and backend_type <> 'autovacuum worker'`).map((r) => r.pid);
  // several pids: the primaries of a Redis Cluster
  const redisPids = [redisPid].flat().filter(Boolean);
  if (redisPids.length) groups.redis = () => redisPids;
  return cpuMeter(groups);
}

/** The Redis server's pid when it runs on this host (INFO server: process_id). */
export async function redisServerPid(redisUrl, core) {
  const u = new URL(redisUrl);
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(u.hostname) || process.env.REDIS_CLUSTER_NODES) return null;
  const redis = core.createRedis(redisUrl);
  try {
    return Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]) || null;
  } finally {
    redis.disconnect();
  }
}
