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
// Last, with the robots still connected, a hostile robot of the same workspace (bench/robot-flood.mjs)
// sends 2,000 `asset.get` a second for its running job for 30 s and reads none of the replies,
// while another workspace adds items over HTTP at a steady pace: the API's highest RSS through the
// flood is read over its highest through as long a window just before it (the same pace, no
// flood), and that workspace's request times are compared between the two windows.
import { fork } from 'node:child_process';
import { openSync, closeSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { itemPayload, seedApiKeys, seedMachines, seedProcess, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { platformCpuMeter, startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { benchRedis } from '../lib/services.mjs';
import { sleep, tail } from '../lib/proc.mjs';
import { percentile, ratio as ratioOf, round, withScenario } from '../lib/scenario.mjs';

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

/** A load script of bench/ with an IPC channel, its input in a file and its output in `<name>.log`. */
function forkLoad(run, name, script, input) {
  const inputFile = path.join(run.logDir, `${name}.input.json`);
  writeFileSync(inputFile, JSON.stringify(input));
  const logFile = path.join(run.logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = fork(path.join(run.root, 'bench', script), [inputFile], { stdio: ['ignore', fd, fd, 'ipc'] });
  closeSync(fd);
  return { child, logFile };
}

/** The load generator with an IPC channel: `ask(cmd)` resolves with its next message of `type`. */
function startRobots(run, input) {
  const { child, logFile } = forkLoad(run, 'b8-robots', 'idle-robots.mjs', input);
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

/** The highest VmRSS of a process (MB) from now until `stop()`, read every 100 ms. */
function rssSampler(pid) {
  let peak = memoryMb(pid).rss ?? 0;
  const timer = setInterval(() => (peak = Math.max(peak, memoryMb(pid).rss ?? 0)), 100);
  return { stop: () => (clearInterval(timer), Math.max(peak, memoryMb(pid).rss ?? 0)) };
}

/** POST …/items of another workspace at `perSecond` for `seconds`: each request's time in ms. */
async function probeOtherTenant(url, keys, queueName, perSecond, seconds, keyOffset) {
  const times = [];
  const at = [];
  const errors = {};
  const pending = [];
  const began = performance.now();
  for (let i = 0; i < perSecond * seconds; i++) {
    const wait = began + (i * 1000) / perSecond - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push((async () => {
      const t0 = performance.now();
      const res = await fetch(`${url}/api/v1/queues/by-name/${queueName}/items`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': keys[(keyOffset + i) % keys.length] },
        body: JSON.stringify({ data: itemPayload(i), priority: 3 }),
      }).catch((err) => ({ status: err.cause?.code ?? err.message, text: async () => '' }));
      await res.text();
      if (res.status === 200) {
        times.push(performance.now() - t0);
        at.push(round((t0 - began) / 1000, 2));
      }
      else errors[res.status] = (errors[res.status] ?? 0) + 1;
    })());
  }
  await Promise.all(pending);
  const slowest = times.map((ms, i) => ({ ms: round(ms, 1), at: at[i] })).sort((a, b) => b.ms - a.ms).slice(0, 5);
  return { times, errors, slowest };
}

/** The flooding robot's process: resolves with its `flooded` report; `ready` once it floods. */
function startFlood(run, input) {
  const { child, logFile } = forkLoad(run, 'b8-flood', 'robot-flood.mjs', input);
  let onReady;
  const ready = new Promise((resolve) => (onReady = resolve));
  const done = new Promise((resolve, reject) => {
    child.on('message', (m) => (m.type === 'ready' ? onReady() : m.type === 'flooded' && resolve(m)));
    child.once('exit', (code) => reject(new Error(`the flooding robot exited (${code}):\n${tail(logFile)}`)));
  });
  done.catch(() => onReady());
  return { ready, done, pid: child.pid, stop: async () => { if (child.exitCode === null) child.kill('SIGKILL'); } };
}

/**
 * The flood: the API's RSS sampled through it and another workspace's item adds during it, next
 * to the same adds just before it.
 */
async function floodPhase(run, s, platform, { tenant, keys, proc, seconds, robotsPid }) {
  const apiPid = platform.procs.api.pid;
  const [flooder] = await seedMachines(s.sql, tenant.id, 1, { slots: 1, prefix: 'bench-flooder' });
  const [asset] = await s.sql`insert into assets (tenant_id, name, type) values (${tenant.id}, 'bench-flood', 'text') returning id`;
  await s.sql`insert into asset_values (asset_id, environment, value) values (${asset.id}, 'production', ${s.sql.json('valor')})`;
  const other = await seedTenant(s.sql, 'bench-other');
  await seedQueue(s.sql, other.id, 'b8-probe');
  const perSecond = 10;
  // the API's limit of 60 item adds per minute and key (docs/endpoints.md): each key is used at most once a second over both windows
  const probeKeys = await seedApiKeys(s.sql, other.id, perSecond * 2);
  // every process of the host at work, per second of each window: where the flood's cost lands
  const perSecondOf = (ms) => Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, round(v / seconds, 0)]));
  const quietMeter = platformCpuMeter(s.sql, platform, run.redisPid, { robots: () => [robotsPid], bench: () => [process.pid] });
  await quietMeter.start();
  // the API's RSS moves with its collector's rhythm: the flood's rise is read over the highest
  // RSS of the same probe without it
  const quietRss = rssSampler(apiPid);
  const quiet = await probeOtherTenant(platform.baseUrl, probeKeys, 'b8-probe', perSecond, seconds, 0);
  const rssQuietPeak = quietRss.stop();
  const quietCpu = perSecondOf(await quietMeter.stop());

  const flood = startFlood(run, {
    url: platform.baseUrl, key: flooder.machineKey, machineId: flooder.id, apiKey: keys[keys.length - 1], processId: proc.id,
    asset: 'bench-flood', rate: 2000, seconds,
  });
  s.track({ stop: () => flood.stop() });
  await flood.ready;
  const floodMeter = platformCpuMeter(s.sql, platform, run.redisPid, { robots: () => [robotsPid], bench: () => [process.pid], flooder: () => [flood.pid] });
  await floodMeter.start();
  const floodRss = rssSampler(apiPid);
  const during = probeOtherTenant(platform.baseUrl, probeKeys, 'b8-probe', perSecond, seconds, perSecond);
  const [report, flooded] = await Promise.all([flood.done, during]);
  const rssPeak = floodRss.stop();
  const floodCpu = perSecondOf(await floodMeter.stop());
  return { report, rssQuietPeak, rssPeak, quiet, flooded, quietCpu, floodCpu };
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
    const floodSeconds = run.tiny ? 1 : Math.max(3, Math.round(30 * Math.min(1, run.scale)));
    const flood = await floodPhase(run, s, platform, { tenant, keys, proc, seconds: floodSeconds, robotsPid: robots.child.pid });
    alive();
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
      {
        figure: `API RSS rise while one robot sends ${round(flood.report.sent / flood.report.seconds, 0)} asset.get/s for ${floodSeconds} s reading no reply`, unit: 'MB',
        platform: round(flood.rssPeak - flood.rssQuietPeak, 1), baseline: null, ratio: null, target: { max: 64 },
        note: `peak ${flood.rssPeak} MB, ${flood.rssQuietPeak} MB during as long without the flood; ${flood.report.connections} connection(s), closes ${JSON.stringify(flood.report.closes)}`,
      },
      {
        figure: `another workspace's POST …/items p99 during the flood (baseline column: just before it; ${flood.flooded.times.length} and ${flood.quiet.times.length} requests)`, unit: 'ms',
        platform: p(flood.flooded.times, 99), baseline: p(flood.quiet.times, 99), ratio: ratioOf(p(flood.flooded.times, 99), p(flood.quiet.times, 99)), target: { maxRatio: 3, of: 'before' },
      },
    ];
    return {
      id: 'B8',
      title: `${count} idle robots on one API process`,
      rows: resultRows,
      complete: all && !triggerError && completed === tries && Object.keys(flood.quiet.errors).length === 0 && Object.keys(flood.flooded.errors).length === 0,
      details: {
        robots: count, connected: connected.connected, connectSeconds: connected.seconds, connectFailures: connected.stats.connectFailures, connectFailureCount: connected.stats.connectFailureCount,
        firstFailureAfter: connected.stats.firstFailureAfter, closes: final.closes, heartbeatMs, windowSec, heartbeats, heartbeatErrors: a1.heartbeatErrors, replyErrors: a1.replyErrors,
        cpuMs, cpuPer1000Heartbeats: per1000, before, steady, apiPeakRss: memoryMb(apiPid).hwm,
        flood: { ...flood.report, rssQuietPeak: flood.rssQuietPeak, rssPeak: flood.rssPeak, quietErrors: flood.quiet.errors, floodErrors: flood.flooded.errors,
          quietP50: p(flood.quiet.times, 50), floodP50: p(flood.flooded.times, 50), slowestBefore: flood.quiet.slowest, slowestDuring: flood.flooded.slowest, cpuMsPerSecondBefore: flood.quietCpu, cpuMsPerSecondDuring: flood.floodCpu },
        tries, triggerError, completed, toStart, toRunning, requestMs: (triggered ?? []).map((t) => round(t.requestMs, 1)),
      },
    };
  });
}
