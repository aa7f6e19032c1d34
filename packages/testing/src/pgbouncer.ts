import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPooledSql } from '@svc/core';
import type { TestContext } from './context';
import { freePort, waitFor } from './wait';

/**
 * A private PgBouncer in transaction pooling mode in front of the run's Postgres, for the tests
 * of the platform behind a pooler (docs/decisions/pgbouncer.md). Its own port on 127.0.0.1, its
 * Unix socket, log and configuration in a temp folder; trust authentication (the test Postgres
 * trusts too). PgBouncer refuses to run as root: then it drops to the `postgres` OS user (`-u`).
 * Files that need it are named `*.pgbouncer.test.ts`: without PgBouncer installed `npm test`
 * leaves them out and says so (scripts/pgbouncer.cjs).
 */
export interface PrivatePgBouncer {
  port: number;
  /** server connections per database and user: statements of many clients share these */
  poolSize: number;
  /** `directUrl` (a database of the run's Postgres) reached through this PgBouncer */
  pooledUrl(directUrl: string): string;
  /** the pooler's log (for a failing test) */
  log(): string;
  stop(): Promise<void>;
}

/** jest.config.js finds the binary once (scripts/pgbouncer.cjs) and hands it over in SVC_PGBOUNCER. */
function pgbouncerBin(): string | null {
  const bin = process.env.SVC_PGBOUNCER;
  return bin && existsSync(bin) ? bin : null;
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

export async function startPgBouncer(target: string, options: { poolSize?: number } = {}): Promise<PrivatePgBouncer> {
  const bin = pgbouncerBin();
  if (!bin) throw new Error('pgbouncer not found: install it (apt-get install -y pgbouncer) to run this test');
  const poolSize = options.poolSize ?? 2;
  const server = new URL(target);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const logFile = path.join(dir, 'pgbouncer.log');
  const authFile = path.join(dir, 'users.txt');
  const ini = path.join(dir, 'pgbouncer.ini');
  writeFileSync(authFile, `"${user}" ""\n`);
  writeFileSync(ini, [
    '[databases]',
    // any database name: the run's Postgres database of the same name
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    `unix_socket_dir = ${dir}`,
    'auth_type = trust',
    `auth_file = ${authFile}`,
    `admin_users = ${user}`,
    'pool_mode = transaction',
    `default_pool_size = ${poolSize}`,
    'max_client_conn = 500',
    `logfile = ${logFile}`,
    `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    for (const f of [dir, authFile, ini]) chownSync(f, uid, gid);
  }
  const proc: ChildProcess = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const log = () => `${stderr}${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      // SIGINT: safe shutdown would wait for clients; SIGTERM closes everything at once
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const pooledUrl = (directUrl: string) => {
    const u = new URL(directUrl);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  };
  const probe = createPooledSql({ url: pooledUrl(target), pooler: 'transaction' }, { max: 1 });
  try {
    await waitFor('the private pgbouncer', async () => {
      if (proc.exitCode !== null) throw new Error(`pgbouncer exited with ${proc.exitCode}:\n${log()}`);
      return probe`select 1 as ok`.then(() => true, () => false);
    }, 20_000);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    await probe.end({ timeout: 1 });
  }
  return { port, poolSize, pooledUrl, log, stop };
}

/**
 * The environment of a child process (api, dispatcher, agent-sim, cli) of test context `ctx`
 * that goes through `pgb`: queries pooled, LISTEN and migrations on Postgres itself.
 */
export function pooledChildEnv(ctx: TestContext, pgb: PrivatePgBouncer): Record<string, string> {
  return {
    ...ctx.childEnv,
    DATABASE_URL: pgb.pooledUrl(ctx.databaseUrl),
    DATABASE_DIRECT_URL: ctx.databaseUrl,
    DATABASE_POOLER: 'transaction',
  };
}
