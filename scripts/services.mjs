// Finds or starts Postgres and Redis for `npm start` and `npm test`.
// Uses DATABASE_URL / REDIS_URL when set; otherwise the servers on localhost when they answer;
// otherwise starts private servers from installed binaries with data under .data/ (git-ignored);
// otherwise stops with one sentence naming what to install.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, chownSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { buildConsole } from '../apps/console/build.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_PG = 'postgres://postgres@127.0.0.1:5432/svc';
const DEFAULT_REDIS = 'redis://127.0.0.1:6379';
const LOCAL_PG_PORT = 54329;
const LOCAL_REDIS_PORT = 63799;

export class SetupError extends Error {}

function canConnect(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok) => { socket.destroy(); resolve(ok); };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function which(bin, extraDirs = []) {
  for (const dir of [...(process.env.PATH ?? '').split(':'), ...extraDirs]) {
    const candidate = path.join(dir, bin);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

function pgBinDirs() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return [];
  return readdirSync(base).sort((a, b) => Number(b) - Number(a)).map((v) => path.join(base, v, 'bin'));
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Postgres refuses to run as root: run its tools as the `postgres` user then. */
function runPg(bin, args) {
  const cmd = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const res = spawnSync(cmd[0], cmd[1], { encoding: 'utf8' });
  if (res.status !== 0) throw new SetupError(`${path.basename(bin)} failed: ${(res.stderr || res.stdout || '').trim()}`);
  return res.stdout;
}

async function waitFor(host, port, what, ms = 15000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await canConnect(host, port, 300)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new SetupError(`${what} did not start on ${host}:${port} within ${ms / 1000} s.`);
}

/** `settings`: extra server settings (`-c name=value`), e.g. bench/scaling-profile.mjs's pg_stat_statements. */
export async function startLocalPostgres(dataRoot, port = LOCAL_PG_PORT, { settings = {} } = {}) {
  const dirs = pgBinDirs();
  const initdb = which('initdb', dirs);
  const pgCtl = which('pg_ctl', dirs);
  if (!initdb || !pgCtl) {
    throw new SetupError(
      'Postgres is not answering on 127.0.0.1:5432 and no PostgreSQL server is installed: install PostgreSQL 15 or newer (for example `apt-get install postgresql`) or set DATABASE_URL.',
    );
  }
  const dataDir = path.join(dataRoot, 'postgres');
  mkdirSync(dataRoot, { recursive: true });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    mkdirSync(dataDir, { recursive: true });
    if (isRoot()) chownSync(dataDir, uidOf('postgres'), gidOf('postgres'));
    runPg(initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  }
  if (!(await canConnect('127.0.0.1', port, 300))) {
    const socketDir = isRoot() ? '/tmp' : dataDir;
    runPg(pgCtl, ['-D', dataDir, '-l', path.join(dataDir, 'server.log'), '-w', '-o',
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${socketDir} -c max_connections=300 -c fsync=off` +
        Object.entries(settings).map(([k, v]) => ` -c ${k}=${v}`).join(''), 'start']);
    await waitFor('127.0.0.1', port, 'Postgres');
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/svc`, stop: () => runPg(pgCtl, ['-D', dataDir, '-m', 'fast', 'stop']) };
}

function uidOf(user) {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}
function gidOf(user) {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}

export async function startLocalRedis(dataRoot, port = LOCAL_REDIS_PORT) {
  const redisServer = which('redis-server');
  if (!redisServer) {
    throw new SetupError(
      'Redis is not answering on 127.0.0.1:6379 and redis-server is not installed: install Redis 7 or newer (for example `apt-get install redis-server`) or set REDIS_URL.',
    );
  }
  const dir = path.join(dataRoot, 'redis');
  mkdirSync(dir, { recursive: true });
  if (!(await canConnect('127.0.0.1', port, 300))) {
    const res = spawnSync(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes',
      '--dir', dir, '--appendonly', 'yes', '--maxmemory-policy', 'noeviction', '--logfile', path.join(dir, 'redis.log'),
      '--pidfile', path.join(dir, 'redis.pid')], { encoding: 'utf8' });
    if (res.status !== 0) throw new SetupError(`redis-server failed to start: ${res.stderr.trim()}`);
    await waitFor('127.0.0.1', port, 'Redis');
  }
  const redisCli = which('redis-cli');
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => redisCli && spawnSync(redisCli, ['-p', String(port), 'shutdown'], { encoding: 'utf8' }),
  };
}

function hostPort(url, fallbackPort) {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || fallbackPort) };
}

/** Returns { databaseUrl, redisUrl } that answer, starting local servers when needed. */
export async function ensureServices({ dataRoot = path.join(ROOT, '.data'), log = console.log } = {}) {
  const started = [];
  let databaseUrl = process.env.DATABASE_URL || DEFAULT_PG;
  let redisUrl = process.env.REDIS_URL || DEFAULT_REDIS;

  const pg = hostPort(databaseUrl, 5432);
  if (!(await canConnect(pg.host, pg.port))) {
    if (process.env.DATABASE_URL) throw new SetupError(`Postgres is not answering at DATABASE_URL (${pg.host}:${pg.port}): start it or unset DATABASE_URL.`);
    log(`Postgres is not answering on ${pg.host}:${pg.port}; starting a local one with data in ${path.relative(ROOT, dataRoot)}/postgres …`);
    const local = await startLocalPostgres(dataRoot);
    databaseUrl = local.url;
    started.push(local);
  }
  // REDIS_CLUSTER_NODES: the processes use that Redis Cluster (REDIS_URL unused); its seeds must answer
  const seeds = (process.env.REDIS_CLUSTER_NODES || '').split(',').map((s) => s.trim()).filter(Boolean);
  if (seeds.length) {
    const answering = await Promise.all(seeds.map((s) => hostPort(`redis://${s}`, 6379)).map((h) => canConnect(h.host, h.port)));
    if (!answering.some(Boolean)) throw new SetupError(`No node of REDIS_CLUSTER_NODES (${seeds.join(', ')}) is answering: start the cluster or unset REDIS_CLUSTER_NODES.`);
  }
  const rd = hostPort(redisUrl, 6379);
  if (!seeds.length && !(await canConnect(rd.host, rd.port))) {
    if (process.env.REDIS_URL) throw new SetupError(`Redis is not answering at REDIS_URL (${rd.host}:${rd.port}): start it or unset REDIS_URL.`);
    log(`Redis is not answering on ${rd.host}:${rd.port}; starting a local one with data in ${path.relative(ROOT, dataRoot)}/redis …`);
    const local = await startLocalRedis(dataRoot);
    redisUrl = local.url;
    started.push(local);
  }
  /** Stops the servers this call started (none when the ones on localhost answered). */
  const stopStarted = async () => {
    for (const s of started.reverse()) {
      try { s.stop(); } catch (err) { log(`could not stop a local server: ${err.message}`); }
    }
  };
  return { databaseUrl, redisUrl, stopStarted };
}

/** Creates the database named in `url` when it does not exist (connecting to `postgres`). */
export async function ensureDatabase(url) {
  const { default: postgres } = await import('postgres');
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1)) || 'svc';
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql`select 1 as ok from pg_database where datname = ${name}`;
    if (!row) await sql.unsafe(`create database "${name.replace(/"/g, '""')}"`).catch((e) => {
      if (e.code !== '42P04') throw e; // created by a concurrent starter
    });
  } finally {
    await sql.end();
  }
}

/**
 * Installs dependencies exactly as the lock file says (`npm ci`) when node_modules is missing or
 * older than package-lock.json, then builds (TypeScript, then the console). npm writes
 * node_modules/.package-lock.json at every install, so an install made by `npm ci` beforehand (CI,
 * the Dockerfile) is seen as current and not repeated.
 */
export function ensureInstalledAndBuilt({ log = console.log } = {}) {
  const lock = path.join(ROOT, 'package-lock.json');
  const installed = path.join(ROOT, 'node_modules', '.package-lock.json');
  const { mtimeMs: lockTime } = existsSync(lock) ? statSync(lock) : { mtimeMs: 0 };
  if (!existsSync(installed) || statSync(installed).mtimeMs < lockTime) {
    log('Installing dependencies (npm ci) …');
    const res = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' });
    if (res.status !== 0) throw new SetupError('npm could not install the dependencies from package-lock.json; see the output above.');
  }
  const build = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new SetupError('The TypeScript build failed; see the errors above.');
  // the operators' console the API serves at /console (skipped when its build is newer than its sources)
  if (!buildConsole({ log })) throw new SetupError('The console build failed (apps/console); see the errors above.');
}

export const hostInfo = () => ({ cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30) });
