import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRedis, createSql, migrate, type RedisClient, type Sql } from '@svc/core';
import type { RedisTarget } from '@svc/core/internals';
import { keySlot, type Cluster, type Redis } from '@svc/core/internals';
import { contextOn, onRedisCluster, redisChildEnv, testEnv, type TestContext } from './context';
import { freePort, waitFor } from './wait';

/**
 * A private Postgres server for tests that restart or stop it (never the shared one): its own
 * data folder under the system temp folder, its own port, one migrated database `svc`. Started
 * from the installed binaries, as the `postgres` OS user when the tests run as root (the server
 * refuses root), like scripts/services.mjs does for `npm start`.
 */
export interface PrivatePostgres {
  url: string;
  port: number;
  /** `pg_ctl restart -m fast`: every session is terminated (57P01), the server is back in well under a second */
  restartFast(): Promise<void>;
  /** stops the server (fast shutdown); `start` brings it back */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** the server's log (for a failing test) */
  log(): string;
  destroy(): void;
}

function pgBin(name: string): string {
  const base = '/usr/lib/postgresql';
  const dirs = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)).map((v) => path.join(base, v, 'bin')) : [];
  for (const dir of [...dirs, ...(process.env.PATH ?? '').split(':')]) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  throw new Error(`${name} not found: install PostgreSQL to run this test`);
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function pgCommand(bin: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

function runPg(bin: string, args: string[]): void {
  const [cmd, argv] = pgCommand(bin, args);
  const res = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
  if (res.status !== 0) throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${(res.stderr || res.stdout || '').trim()}`);
}

/** Like runPg, without blocking the test's event loop (its clients keep going meanwhile). */
function runPgAsync(bin: string, args: string[]): Promise<void> {
  const [cmd, argv] = pgCommand(bin, args);
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${(stderr || stdout || err.message).trim()}`));
      else resolve();
    });
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'svc-pg-'));
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  mkdirSync(dataDir);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
    chownSync(dataDir, uid, gid);
  }
  const port = await freePort();
  const logFile = path.join(root, 'server.log');
  runPg(pgBin('initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${root} -c fsync=off -c max_connections=200`;
  const pgCtl = pgBin('pg_ctl');
  const startArgs = ['-D', dataDir, '-l', logFile, '-w', '-o', serverOptions, 'start'];
  runPg(pgCtl, startArgs);
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await admin.unsafe('create database svc');
  } finally {
    await admin.end();
  }
  const url = `postgres://postgres@127.0.0.1:${port}/svc`;
  const sql = createSql(url, { max: 1 });
  try {
    await migrate(sql);
  } finally {
    await sql.end();
  }
  return {
    url,
    port,
    restartFast: () => runPgAsync(pgCtl, ['-D', dataDir, '-l', logFile, '-w', '-m', 'fast', '-o', serverOptions, 'restart']),
    stop: () => runPgAsync(pgCtl, ['-D', dataDir, '-w', '-m', 'fast', 'stop']),
    start: () => runPgAsync(pgCtl, startArgs),
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    destroy() {
      try {
        runPg(pgCtl, ['-D', dataDir, '-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * A test context (see createTestContext) on a private Postgres: its database, and a fresh Redis
 * prefix on the run's Redis. The test's own pool reconnects by itself after a restart.
 */
export function privateTestContext(pg: PrivatePostgres): TestContext {
  return contextOn(pg.url, `${testEnv().redisPrefix}:${randomBytes(4).toString('hex')}`, { max: 4 });
}

/**
 * After the server ended their sessions, postgres.js hands the first query of each connection
 * that was busy then a stale "terminating connection due to administrator command" (the query
 * was never sent). The engine's processes retry such errors; a test's own direct queries call
 * this first, which uses up those stale errors on throwaway queries.
 */
export async function clearStaleSessionErrors(sql: Sql, connections = 4): Promise<void> {
  for (let round = 0; round < 3; round++) {
    const res = await Promise.allSettled(Array.from({ length: connections * 2 }, () => sql`select 1`));
    if (res.every((r) => r.status === 'fulfilled')) return;
  }
}

/**
 * A private redis-server for tests that flush or stop it (never the shared one): its own port,
 * no persistence. `admin` is a client of it for the test's own commands.
 */
export interface PrivateRedis {
  url: string;
  port: number;
  admin: Redis;
  /** SIGKILL: every connection drops, and what it held is gone (no persistence) */
  kill(): Promise<void>;
  /** a new, empty redis-server on the same port */
  restart(): Promise<void>;
  destroy(): void;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const spawnServer = () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  let proc = spawnServer();
  const url = `redis://127.0.0.1:${port}`;
  const admin = createRedis(url) as Redis;
  admin.on('error', () => undefined);
  const up = () => waitFor('the private redis', async () => (await admin.ping().catch(() => null)) === 'PONG');
  const destroy = () => {
    admin.disconnect();
    proc.kill('SIGKILL');
  };
  try {
    await up();
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    url, port, admin, destroy,
    async kill() {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGKILL');
      await exited;
    },
    async restart() {
      proc = spawnServer();
      await up();
    },
  };
}

/**
 * A private Redis of the test file's kind, for tests that flush or stop it: a redis-server, or a
 * private three-primary cluster when the file runs on the run's cluster (useRedisCluster). `env`
 * points a child process at it; flush it with flushEveryPrimary (packages/testing/src/redis.ts).
 */
export interface PrivateRedisLikeFile {
  target: RedisTarget;
  env: Record<string, string>;
  admin: RedisClient;
  destroy(): void;
}

export async function startPrivateRedisLikeFile(): Promise<PrivateRedisLikeFile> {
  if (onRedisCluster()) {
    const cluster = await startPrivateRedisCluster();
    return { target: cluster.target, env: redisChildEnv(cluster.target), admin: cluster.admin, destroy: cluster.destroy };
  }
  const server = await startPrivateRedis();
  const target: RedisTarget = { mode: 'single', url: server.url };
  return { target, env: redisChildEnv(target), admin: server.admin, destroy: server.destroy };
}

/**
 * A private local Redis Cluster (never the shared Redis): `primaries` primaries with `replicas`
 * replicas each, started from the installed redis-server with no persistence, joined with
 * `redis-cli --cluster create`, ready once every node says `cluster_state:ok`.
 */
export interface PrivateRedisCluster {
  /** `REDIS_CLUSTER_NODES` for the platform's processes */
  seeds: string;
  target: RedisTarget;
  /** environment for a child process: the cluster, `REDIS_URL` unused */
  env: Record<string, string>;
  /** a cluster client for the test's own commands */
  admin: Cluster;
  ports: number[];
  /** a direct connection to the primary that holds `key`'s slot */
  primaryOf(key: string): Promise<Redis>;
  /** SIGKILLs the node of that connection (a failover test) */
  kill(node: Redis): void;
  /** waits until every live node says `cluster_state:ok` again */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  destroy(): void;
}

/**
 * A port p with p + 10000 (its cluster bus) also free, chosen at random in 20000–29999 so the two
 * jest workers (and ephemeral ports, above 32768) rarely meet; a clash shows as a node that does
 * not start, and startPrivateRedisCluster tries again on other ports.
 */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 10000);
    if (taken.has(port)) continue;
    if ((await portIsFree(port)) && (await portIsFree(port + 10000))) return port;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export async function startPrivateRedisCluster(options: { primaries?: number; replicas?: number } = {}): Promise<PrivateRedisCluster> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startClusterOnce(options.primaries ?? 3, options.replicas ?? 0);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function startClusterOnce(primaryCount: number, replicas: number): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-redis-cluster-'));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < primaryCount * (1 + replicas); i++) {
    const p = await clusterPort(taken);
    taken.add(p);
    ports.push(p);
  }
  const procs = ports.map((port) =>
    spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000',
      // a replica starved of CPU on a loaded host may lose its link long enough to count as too stale
      // to take over (validity factor × node timeout): here any replica may always fail over
      '--cluster-replica-validity-factor', '0',
    ], { stdio: 'ignore' }),
  );
  const direct = ports.map((port) => createRedis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 1 }) as Redis);
  // refused until the node listens, gone once a test kills it: the commands' own errors say so
  for (const d of direct) d.on('error', () => undefined);
  let admin: Cluster | null = null;
  const destroy = () => {
    admin?.disconnect();
    for (const d of direct) d.disconnect();
    for (const p of procs) p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const exited = new Promise<never>((_, reject) => {
      for (const p of procs) p.once('exit', (code) => reject(new Error(`a redis-server of the cluster exited (${code}): its port was taken?`)));
    });
    exited.catch(() => undefined);
    await Promise.race([exited, waitFor('the cluster nodes', async () => (await Promise.all(direct.map((d) => d.ping().catch(() => null)))).every((r) => r === 'PONG'), 20_000)]);
    await new Promise<void>((resolve, reject) => {
      execFile('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
        { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`redis-cli --cluster create failed: ${stderr || stdout}`)) : resolve()));
    });
    await Promise.race([exited, waitFor('the cluster to be ok on every node', async () => {
      const infos = await Promise.all(direct.map((d) => d.cluster('INFO').catch(() => '') as Promise<string>));
      return infos.every((i) => /cluster_state:ok/.test(i) && new RegExp(`cluster_known_nodes:${ports.length}\\b`).test(i));
    }, 30_000, 100)]);
    const killed = new Set<number>();
    const live = () => direct.filter((_, i) => !killed.has(i));
    const slotMap = async () => (await live()[0]!.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
    const seeds = ports.map((p) => `127.0.0.1:${p}`).join(',');
    const target: RedisTarget = { mode: 'cluster', nodes: ports.map((port) => ({ host: '127.0.0.1', port })) };
    admin = createRedis(target) as Cluster;
    const a = admin;
    await waitFor('the cluster client', async () => (await a.ping().catch(() => null)) === 'PONG');
    return {
      seeds,
      target,
      env: { REDIS_CLUSTER_NODES: seeds },
      admin: a,
      ports,
      async primaryOf(key: string) {
        const slot = keySlot(key);
        const ranges = await slotMap();
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to);
        if (!owner) throw new Error(`no node holds slot ${slot}`);
        return direct[ports.indexOf(owner[2][1])]!;
      },
      kill(node: Redis) {
        const i = direct.indexOf(node);
        killed.add(i);
        procs[i]!.removeAllListeners('exit');
        procs[i]!.kill('SIGKILL');
      },
      async waitUntilOk(timeoutMs = 60_000) {
        // a dead primary is still in the slot map until the others agree it failed (node timeout)
        const dead = new Set([...killed].map((i) => ports[i]));
        await waitFor('the cluster to be ok again', async () => {
          const infos = await Promise.all(live().map((d) => d.cluster('INFO').catch(() => '') as Promise<string>));
          const maps = await Promise.all(live().map((d) => (d.cluster('SLOTS') as Promise<unknown>).catch(() => null)));
          return infos.every((info) => /cluster_state:ok/.test(info))
            && maps.every((m) => Array.isArray(m) && (m as Array<[number, number, [string, number]]>).every(([, , primary]) => !dead.has(primary[1])));
        }, timeoutMs, 100);
      },
      destroy,
    };
  } catch (err) {
    destroy();
    throw err;
  }
}
