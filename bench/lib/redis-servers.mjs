// Private Redis servers for B7 (and bench/scaling-profile.mjs): one redis-server, or a local Redis
// Cluster of three primaries, started from the installed redis-server on free ports and torn down
// after. Private, so that INFO commandstats and used_memory count the platform's commands and keys
// only (the run's Redis may be shared with other work). The same start-up as the tests' helper
// startPrivateRedisCluster (packages/testing/src/private-servers.ts), which the bench's ES modules
// cannot import (the testing package is TypeScript run through jest).
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { core } from './core.mjs';
import { sleep } from './proc.mjs';

function portIsFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** p and p + 10000 (a cluster node's bus) free, in 20000–29999 (below the ephemeral ports). */
async function nodePort(taken) {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 10000);
    if (taken.has(port)) continue;
    if ((await portIsFree(port)) && (await portIsFree(port + 10000))) return port;
  }
}

async function waitFor(what, check, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** `cmdstat_<name>:calls=N,…` lines of INFO commandstats as {name: calls}. */
export function parseCommandStats(info) {
  const out = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/**
 * Starts `primaries` redis-server processes (no persistence, `noeviction` as the platform asks);
 * with `cluster`, joined into a Redis Cluster by `redis-cli --cluster create`. Returns what the
 * platform's processes need (`env`, `target`), the servers' pids (CPU meters), and readings
 * summed over every primary: `commandStats()` and `usedMemory()`.
 */
export async function startBenchRedis({ cluster = false, primaries = cluster ? 3 : 1 } = {}) {
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(cluster, primaries);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function startOnce(cluster, count) {
  const dir = mkdtempSync(path.join(os.tmpdir(), cluster ? 'svc-bench-redis-cluster-' : 'svc-bench-redis-'));
  const taken = new Set();
  const ports = [];
  for (let i = 0; i < count; i++) {
    const p = await nodePort(taken);
    taken.add(p);
    ports.push(p);
  }
  const procs = ports.map((port) => spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
    '--maxmemory-policy', 'noeviction',
    ...(cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000'] : []),
  ], { stdio: 'ignore' }));
  const direct = ports.map((port) => core.createRedis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 1 }));
  // refused until the server listens: the waits below retry, the event need not be reported
  for (const d of direct) d.on('error', () => undefined);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', stop);
    for (const d of direct) d.disconnect();
    for (const p of procs) p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // an interrupted bench leaves by process.exit (scripts/bench.mjs): the servers go with it
  process.once('exit', stop);
  try {
    const exited = new Promise((_, reject) => {
      for (const p of procs) p.once('exit', (code) => { if (!stopped) reject(new Error(`a private redis-server exited (${code}): its port was taken?`)); });
    });
    exited.catch(() => undefined);
    await Promise.race([exited, waitFor('the private redis-servers', async () => (await Promise.all(direct.map((d) => d.ping()))).every((r) => r === 'PONG'))]);
    if (cluster) {
      await new Promise((resolve, reject) => {
        execFile('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
          { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`redis-cli --cluster create failed: ${stderr || stdout}`)) : resolve()));
      });
      await Promise.race([exited, waitFor('the cluster to be ok on every node', async () => {
        const infos = await Promise.all(direct.map((d) => d.cluster('INFO')));
        return infos.every((i) => /cluster_state:ok/.test(i) && new RegExp(`cluster_known_nodes:${ports.length}\\b`).test(i));
      })]);
    }
    const seeds = ports.map((p) => `127.0.0.1:${p}`).join(',');
    const target = cluster ? { mode: 'cluster', nodes: ports.map((port) => ({ host: '127.0.0.1', port })) } : { mode: 'single', url: `redis://127.0.0.1:${ports[0]}` };
    return {
      kind: cluster ? `Redis Cluster, ${count} primaries` : 'single Redis',
      cluster,
      ports,
      pids: procs.map((p) => p.pid),
      target,
      // REDIS_URL is not read when REDIS_CLUSTER_NODES is set (packages/core/src/config.ts)
      env: cluster ? { REDIS_CLUSTER_NODES: seeds } : { REDIS_URL: target.url, REDIS_CLUSTER_NODES: '' },
      /** calls per command since start, summed over every primary */
      async commandStats() {
        const sum = {};
        for (const d of direct) for (const [k, v] of Object.entries(parseCommandStats(await d.info('commandstats')))) sum[k] = (sum[k] ?? 0) + v;
        return sum;
      },
      /** used_memory summed over every primary, in bytes */
      async usedMemory() {
        let total = 0;
        for (const d of direct) total += Number(/used_memory:(\d+)/.exec(await d.info('memory'))?.[1] ?? 0);
        return total;
      },
      stop,
    };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * The Redis commands sent between two commandStats() readings: total and by command, without the
 * bench's own readings (INFO) — every other command is the platform's (the servers are private).
 */
export function commandDelta(before, after) {
  const by = {};
  let total = 0;
  for (const [k, v] of Object.entries(after)) {
    if (k === 'info') continue;
    const d = v - (before[k] ?? 0);
    if (d > 0) {
      by[k] = d;
      total += d;
    }
  }
  return { total, by: Object.fromEntries(Object.entries(by).sort((a, b) => b[1] - a[1])) };
}
