// B8: 1,000 idle robots connected to ONE API process (a dispatcher runs too). The robots are raw
// WebSockets of one load-generator process (bench/idle-robots.mjs), each with its own machine key
// (1,000 machines of one workspace), heartbeating every `heartbeat_ms` and running nothing.
// Measured: how many connect; the API's resident memory (VmRSS from /proc) with all of them
// connected and steady, next to the same API before any connected; its CPU time (utime + stime
// from /proc) per 1,000 heartbeats answered over a steady window (also Postgres's, Redis's and
// the dispatcher's); then trigger → running for one of the robots, one try at a time: POST
// /jobs/trigger with its `machine_id`, the robot answers `job.start` with `job.finish` at once;
// from the trigger's 201 to the robot receiving `job.start` (the robot's clock), and from the
// client's clock before the request to the job's `started_at` (B4's measure).
// A connection reads its machine's queue (a BullMQ Worker inside the API, with a blocking Redis
// connection) only while the machine has work: from the robot's first heartbeat until it has been
// idle for the API's worker idle time, so the steady window starts after that. The API's open
// file descriptors and the Redis server's connected clients are recorded next to the figures, and
// when not every robot connects, where it broke.
import { fork } from 'node:child_process';
import { openSync, closeSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { seedApiKeys, seedMachines, seedProcess, seedTenant } from '../lib/fixtures.mjs';
import { platformCpuMeter, startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { benchRedis } from '../lib/services.mjs';
import { sleep, tail } from '../lib/proc.mjs';
import { percentile, round, withScenario } from '../lib/scenario.mjs';

/** VmRSS / VmHWM of a live process in MB (Linux). */
function memoryMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? NaN);
    return { rss: round(kb('VmRSS') / 1024, 1), hwm: round(kb('VmHWM') / 1024, 1) };
  } catch {
    return { rss: null, hwm: null };
  }
}

function openFds(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

function softFdLimit(pid) {
  try {
    return Number(/Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1]) || null;
  } catch {
    return null;
  }
}

async function redisClients(redisUrl) {
  const redis = benchRedis(redisUrl);
  try {
    const info = await redis.info('clients');
    const maxclients = await redis.config('GET', 'maxclients').catch(() => null);
    return { connected: Number(/connected_clients:(\d+)/.exec(info)?.[1]) || null, max: maxclients ? Number(maxclients[1]) : null };
  } catch {
    return { connected: null, max: null };
  } finally {
    redis.disconnect();
  }
}

/** The load generator with an IPC channel: `ask(cmd)` resolves with its next message of `type`. */
function startRobots(run, input) {
  const inputFile = path.join(run.logDir, 'b8-robots.input.json');
  writeFileSync(inputFile, JSON.stringify(input));
  const logFile = path.join(run.logDir, 'b8-robots.log');
  const fd = openSync(logFile, 'a');
  const child = fork(path.join(run.root, 'bench', 'idle-robots.mjs'), [inputFile], { stdio: ['ignore', fd, fd, 'ipc'] });
  closeSync(fd);
  const waiters = [];
  child.on('message', (m) => {
    const i = waiters.findIndex((w) => w.type === m.type || m.type === 'error');
    if (i >= 0) {
      const [w] = waiters.splice(i, 1);
      if (m.type === 'error') w.reject(new Error(`the robots' process: ${m.message}`));
      else w.resolve(m);
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  exited.then(() => {
    for (const w of waiters.splice(0)) w.reject(new Error(`the robots' process exited:\n${tail(logFile)}`));
  });
  const next = (type, timeoutMs) => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the robots' process sent no ${type} within ${timeoutMs} ms`)), timeoutMs);
    waiters.push({ type, resolve: (m) => (clearTimeout(timer), resolve(m)), reject: (e) => (clearTimeout(timer), reject(e)) });
  });
  return {
    child,
    next,
    ask(cmd, type, timeoutMs = 60_000) {
      const p = next(type, timeoutMs);
      child.send(cmd);
      return p;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ cmd: 'close' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function b8(run) {
  return withScenario(run, 'B8', async (s) => {
    const count = Math.max(10, Math.round(1000 * run.scale));
    const tries = Math.max(5, Math.round(200 * run.scale));
    // 30 s at full size: six heartbeat periods; in the tiny smoke run of `npm test` only a second
    const windowSec = run.tiny ? 1 : Math.max(3, Math.round(30 * run.scale));

    const tenant = await seedTenant(s.sql);
    // 30 triggers per minute per key (the public rate-limit table)
    const keys = await seedApiKeys(s.sql, tenant.id, Math.ceil(tries / 20) + 2);
    const proc = await seedProcess(s.sql, tenant.id, 'bench-b8');
    const machines = await seedMachines(s.sql, tenant.id, count, { slots: 1, prefix: 'bench-robot' });
    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile }));
    const apiPid = platform.procs.api.pid;
    await sleep(run.tiny ? 200 : 2_000);
    const before = { memory: memoryMb(apiPid), fds: openFds(apiPid), redis: await redisClients(run.redisUrl) };

    const robots = startRobots(run, { url: platform.baseUrl, robots: machines.map((m) => ({ id: m.id, key: m.machineKey })), concurrency: 4 });
    s.track({ stop: () => robots.stop() });
    const connected = await robots.next('connected', Math.max(120_000, count * 200));
    const alive = () => Object.values(platform.procs).forEach((p) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`${p.name} exited during B8:\n${tail(p.logFile)}`);
    });
    alive();
    // connected means welcomed and the first heartbeat answered; online in Postgres too
    const online = machines.slice(0, connected.connected).map((m) => m.id);
    if (connected.connected === count) await waitMachinesOnline(s.sql, online, Object.values(platform.procs), 60_000);
    const heartbeatMs = connected.stats.heartbeatMs ?? 5000;
    // steady: every connection's first reading of its queue over (the API's WORKER_IDLE_MS,
    // apps/api/src/agent/hub.ts) and a heartbeat period gone by
    await sleep(run.tiny ? 300 : Math.max(heartbeatMs, 30_000) + heartbeatMs + 2_000);

    const meter = platformCpuMeter(s.sql, platform, run.redisPid);
    const a0 = await robots.ask({ cmd: 'stats' }, 'stats');
    await meter.start();
    await sleep(windowSec * 1000);
    const a1 = await robots.ask({ cmd: 'stats' }, 'stats');
    const cpuMs = await meter.stop();
    alive();
    const steady = { memory: memoryMb(apiPid), fds: openFds(apiPid), fdLimit: softFdLimit(apiPid), redis: await redisClients(run.redisUrl) };
    const heartbeats = a1.heartbeatsAnswered - a0.heartbeatsAnswered;
    const per1000 = Object.fromEntries(Object.entries(cpuMs).map(([k, v]) => [k, heartbeats ? round((v * 1000) / heartbeats, 1) : null]));

    // trigger → running for one of the robots (the middle one), with all of them connected
    const robotIndex = Math.floor(connected.connected / 2);
    let triggered = null;
    let triggerError = null;
    if (connected.connected > 0) {
      try {
        triggered = (await robots.ask({ cmd: 'trigger', apiUrl: platform.baseUrl, keys, processId: proc.id, robotIndex, tries }, 'triggered', tries * 15_000)).tries;
      } catch (err) {
        triggerError = err.message;
      }
    }
    const rows = await s.sql`select id, started_at, status from jobs where id = any(${(triggered ?? []).map((t) => t.jobId)})`;
    const startedAt = new Map(rows.map((r) => [r.id, r]));
    const toStart = (triggered ?? []).map((t) => t.answeredToStartMs);
    const toRunning = (triggered ?? []).map((t) => startedAt.get(t.jobId).started_at.getTime() - t.wall);
    const completed = rows.filter((r) => r.status === 'completed').length;
    const final = await robots.ask({ cmd: 'stats' }, 'stats');
    await robots.stop();

    const p = (arr, q) => round(percentile(arr, q), 1);
    const all = connected.connected === count;
    const note = all ? '' : `; only ${connected.connected} of ${count} connected (first failure after ${connected.stats.firstFailureAfter}: ${connected.stats.connectFailures[0]?.why})`;
    const resultRows = [
      { figure: `robots connected to one API process (of ${count})`, unit: 'robots', platform: connected.connected, baseline: null, ratio: null, target: null, totalExact: all, ...(all ? {} : { note: note.slice(2) }) },
      {
        figure: `API RSS, ${connected.connected} idle robots connected (baseline column: the same API before any connected)`, unit: 'MB', platform: steady.memory.rss, baseline: before.memory.rss,
        ratio: null, target: null, note: `${round(((steady.memory.rss - before.memory.rss) * 1024) / Math.max(1, connected.connected), 0)} KB per robot; open fds ${before.fds} → ${steady.fds}, Redis clients ${before.redis.connected} → ${steady.redis.connected}`,
      },
      { figure: `API CPU per 1,000 heartbeats (${heartbeats} answered in ${windowSec} s, every ${heartbeatMs} ms per robot)`, unit: 'ms', platform: per1000.api ?? null, baseline: null, ratio: null, target: null },
      { figure: 'Postgres CPU per 1,000 heartbeats', unit: 'ms', platform: per1000.postgres ?? null, baseline: null, ratio: null, target: null },
      { figure: `trigger 201 → robot receives job.start, p50 (${toStart.length} tries, robot ${robotIndex + 1} of ${connected.connected})`, unit: 'ms', platform: p(toStart, 50), baseline: null, ratio: null, target: null },
      { figure: 'trigger 201 → robot receives job.start, p99', unit: 'ms', platform: p(toStart, 99), baseline: null, ratio: null, target: null },
      { figure: 'trigger → running (started_at, as B4), p50', unit: 'ms', platform: p(toRunning, 50), baseline: null, ratio: null, target: null },
      { figure: 'trigger → running (started_at, as B4), p99', unit: 'ms', platform: p(toRunning, 99), baseline: null, ratio: null, target: null },
    ];
    return {
      id: 'B8',
      title: `${count} idle robots on one API process`,
      rows: resultRows,
      complete: all && !triggerError && completed === tries,
      details: {
        robots: count, connected: connected.connected, connectSeconds: connected.seconds, connectFailures: connected.stats.connectFailures, connectFailureCount: connected.stats.connectFailureCount,
        firstFailureAfter: connected.stats.firstFailureAfter, closes: final.closes, heartbeatMs, windowSec, heartbeats, heartbeatErrors: a1.heartbeatErrors, replyErrors: a1.replyErrors,
        cpuMs, cpuPer1000Heartbeats: per1000, before, steady, apiPeakRss: memoryMb(apiPid).hwm,
        tries, triggerError, completed, toStart, toRunning, requestMs: (triggered ?? []).map((t) => round(t.requestMs, 1)),
      },
    };
  });
}
