import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRedis, createSql, migrate, type Redis, type Sql } from '@svc/core';
import { contextOn, testEnv, type TestContext } from './context';
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
  destroy(): void;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const admin = createRedis(url);
  const destroy = () => {
    admin.disconnect();
    proc.kill('SIGKILL');
  };
  try {
    await waitFor('the private redis', async () => (await admin.ping()) === 'PONG');
  } catch (err) {
    destroy();
    throw err;
  }
  return { url, port, admin, destroy };
}
