// Child processes of a bench run: the platform's apps (from dist/), the baselines and the load
// generator each run in a process of their own, with their output in the run's log folder.
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on the loopback interface. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Every process started by this run, so an abort can stop them all. */
const live = new Set();

export function killAll() {
  for (const p of live) {
    try {
      p.child.kill('SIGKILL');
    } catch {}
  }
  live.clear();
}

/**
 * Starts `node <script> …args` with `env`, stdout/stderr into `<logDir>/<name>.log`.
 * Extra node flags (e.g. --cpu-prof) go in `nodeArgs`.
 */
export function startNode(name, script, args, { env, logDir, nodeArgs = [], cwd } = {}) {
  const logFile = path.join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { env, cwd, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const proc = { name, child, logFile, exited, pid: child.pid };
  live.add(proc);
  exited.then(() => live.delete(proc));
  return proc;
}

/** Stops a process with SIGTERM (SIGKILL after `graceMs`) and waits for its exit. */
export async function stop(proc, graceMs = 10_000) {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return proc?.exited;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  const res = await proc.exited;
  clearTimeout(timer);
  return res;
}

/** Fails with the tail of its log when the process has exited. */
export function assertAlive(proc) {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
    throw new Error(`${proc.name} exited (${proc.child.signalCode ?? proc.child.exitCode}):\n${tail(proc.logFile)}`);
  }
}

export function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `check()` every `everyMs` until it returns a truthy value; bounded by `timeoutMs`. */
export async function waitUntil(what, check, { timeoutMs = 30_000, everyMs = 50, procs = [] } = {}) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    for (const p of procs) assertAlive(p);
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Peak resident set size (VmHWM) of a live process in MB, from /proc (Linux). */
export function peakRssMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(status);
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/**
 * Runs a one-shot node script that prints one JSON document on stdout (load generator,
 * baselines) and returns it parsed; the script reads its input from the JSON file named by its
 * first argument; its stderr goes to the log folder.
 */
export async function runJson(name, script, input, { env, logDir, timeoutMs = 300_000 } = {}) {
  const logFile = path.join(logDir, `${name}.log`);
  // the input goes in a file: a list of keys is larger than one command-line argument may be
  const inputFile = path.join(logDir, `${name}.input.json`);
  writeFileSync(inputFile, JSON.stringify(input));
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [script, inputFile], { env, stdio: ['ignore', 'pipe', fd] });
  closeSync(fd);
  const proc = { name, child, logFile, pid: child.pid };
  live.add(proc);
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const { code, signal } = await new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  clearTimeout(timer);
  live.delete(proc);
  if (code !== 0) throw new Error(`${name} failed (${signal ?? code}):\n${tail(logFile)}\n${out.slice(-2000)}`);
  try {
    return JSON.parse(out.trim().split('\n').pop());
  } catch {
    throw new Error(`${name} printed no JSON result:\n${out.slice(-2000)}`);
  }
}

const TICKS_PER_SEC = 100; // USER_HZ on Linux

/** CPU time (user + system) of a process so far, in ms (null when it cannot be read). */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SEC;
  } catch {
    return null;
  }
}

/**
 * CPU spent by groups of processes between `start()` and `stop()`, in ms: `groups` maps a name
 * to a function returning the pids of that group, asked at both ends and every `everyMs` between
 * them. A pid that appears after `start()` (a Postgres backend a pool opened meanwhile) counts
 * from zero, and one that goes away before `stop()` counts up to its last reading: the agents'
 * pools open most of their connections during the run, and counting only the backends alive at
 * both ends left most of Postgres's time out.
 */
export function cpuMeter(groups, { everyMs = 500 } = {}) {
  const first = new Map();
  const latest = new Map();
  let timer = null;
  let reading = null;
  const read = async (initial) => {
    for (const [name, pidsOf] of Object.entries(groups)) {
      if (!first.has(name)) first.set(name, new Map());
      if (!latest.has(name)) latest.set(name, new Map());
      for (const pid of (await pidsOf()) ?? []) {
        const v = cpuMs(pid);
        if (v === null) continue;
        if (!first.get(name).has(pid)) first.get(name).set(pid, initial ? v : 0);
        latest.get(name).set(pid, v);
      }
    }
  };
  return {
    async start() {
      await read(true);
      const tick = () => {
        reading = read(false).catch(() => undefined).finally(() => {
          reading = null;
          if (timer) timer = setTimeout(tick, everyMs);
        });
      };
      timer = setTimeout(tick, everyMs);
    },
    async stop() {
      clearTimeout(timer);
      timer = null;
      if (reading) await reading;
      await read(false);
      const res = {};
      for (const [name, pids] of latest) {
        let total = 0;
        for (const [pid, v] of pids) total += v - first.get(name).get(pid);
        res[name] = Math.round(total);
      }
      return res;
    },
  };
}
