// `node bench/webhook-lag.mjs [--rate 200] [--minutes 5] [--deliverers 1]`: how late webhooks
// are under a steady load that leaves the host room. The platform as deployed (an API, a
// dispatcher with DISPATCHER_ROLE=dispatch, `--deliverers` processes with DISPATCHER_ROLE=deliver,
// two simulated one-slot machines consuming a queue, doing no work), a subscription to
// `item.completed` whose receiver (bench/lib/webhook-receiver.mjs, at the normal priority: it must
// answer at once for the delay to be the platform's) stands for another machine;
// items are added in bulk at `--rate` a second (one bulk a second, keys taken in turn: the bulk
// route allows 20 a minute per key) for `--minutes`. Prints, for
// each minute in which changes happened, the delay from the change to its delivery (p50, p99,
// max), and the deliverers' CPU per 1,000 events. Uses DATABASE_URL / REDIS_URL like npm run bench
// (run it on a private Postgres with default settings); builds nothing (run npm run build first).
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { core } from './lib/core.mjs';
import { createBenchDatabase, dropBenchDatabase, clearRedisPrefix } from './lib/services.mjs';
import { itemPayload, seedApiKeys, seedMachines, seedProcess, seedQueue, seedTenant } from './lib/fixtures.mjs';
import { cpuMs, sleep, waitUntil } from './lib/proc.mjs';
import { startPlatform, waitMachinesOnline } from './lib/platform.mjs';
import { startWebhookReceiver } from './lib/webhook-receiver.mjs';
import { ROOT } from '../scripts/services.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const rate = Number(args.rate ?? 200);
const minutes = Number(args.minutes ?? 5);
const deliverers = Number(args.deliverers ?? 1);
const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const id = `lag${randomBytes(3).toString('hex')}`;
const dbName = `svc_bench_${id}`;
const prefix = `svc-bench-${id}`;
const run = {
  root: ROOT, logDir: mkdtempSync(path.join(os.tmpdir(), 'svc-webhook-lag-')), redisUrl,
  encryptionKey: randomBytes(32).toString('base64'), logLevel: 'warn', nodeArgs: [],
};
const TICK_MS = 1000;

const databaseUrl = await createBenchDatabase(baseUrl, dbName);
const receiver = await startWebhookReceiver({ idle: false });
let platform = null;
try {
  const sql = core.createSql(databaseUrl, { max: 2 });
  const tenant = await seedTenant(sql, `bench-${id}`);
  const keys = await seedApiKeys(sql, tenant.id, Math.ceil(60_000 / TICK_MS / 20) + 1);
  const consumer = await seedProcess(sql, tenant.id, 'lag-consumer');
  const queue = await seedQueue(sql, tenant.id, 'lag', { consumer_process_id: consumer.id, max_consumers: 2 });
  const machines = await seedMachines(sql, tenant.id, 2, { slots: 1 });
  const engine = core.createEngine({
    sql, logger: core.createLogger({ level: 'error', service: 'bench' }),
    webhooks: { sealKey: Buffer.from(run.encryptionKey, 'base64'), allowInsecure: true, allowPrivateNetworks: true },
  });
  await engine.events.webhooks.create({ actorType: 'system', actorId: null, source: 'bench' }, tenant.id, { url: receiver.url, event_types: ['item.completed'] });
  platform = await startPlatform(run, {
    databaseUrl, redisPrefix: prefix, parts: ['api', 'dispatcher', 'deliverer', 'agents'],
    env: { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    agents: { machines, config: { defaults: { item_duration: 0, duration: 0, progress_steps: 0, log_lines: 0 } } },
  });
  for (let i = 2; i <= deliverers; i++) {
    const more = await startPlatform(run, { databaseUrl, redisPrefix: prefix, parts: ['deliverer'], env: { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    platform.procs[`deliverer-${i}`] = more.procs.deliverer;
  }
  await waitMachinesOnline(sql, machines.map((m) => m.id), Object.values(platform.procs));
  const delivererPids = Object.entries(platform.procs).filter(([n]) => n.startsWith('deliverer')).map(([, p]) => p.pid);
  const cpuBefore = delivererPids.map(cpuMs);

  const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
  const payloads = Array.from({ length: perTick }, (_, i) => itemPayload(i));
  const itemsUrl = `${platform.baseUrl}/api/v1/queues/by-name/${queue.name}/items/bulk`;
  let added = 0;
  let refused = 0;
  const adds = new Set();
  const until = Date.now() + minutes * 60_000;
  // open loop: a bulk every tick whether or not the last one was answered
  let tick = 0;
  const timer = setInterval(() => {
    const key = keys[tick++ % keys.length];
    const p = fetch(itemsUrl, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ items: payloads }) })
      .then(async (r) => {
        await r.arrayBuffer();
        if (r.ok) added += perTick;
        else refused++;
      }, () => refused++);
    adds.add(p);
    p.finally(() => adds.delete(p));
  }, TICK_MS);
  while (Date.now() < until) await sleep(1000);
  clearInterval(timer);
  await Promise.all(adds);
  await waitUntil('every item completed and its webhook delivered', async () => (await receiver.distinct('item.completed')) >= added, {
    procs: Object.values(platform.procs), timeoutMs: 600_000, everyMs: 500,
  });
  const cpu = delivererPids.map((pid, i) => cpuMs(pid) - cpuBefore[i]).reduce((a, b) => a + b, 0);
  const summary = await receiver.summary('item.completed');
  console.table(summary.byMinute);
  console.log(JSON.stringify({
    rate, minutes, deliverers, added, refused, delivered: summary.distinct, perSec: summary.perSec, delayMs: summary.delayMs,
    delivererCpuMsPer1000Events: Math.round((cpu * 1000) / summary.distinct), byMinute: summary.byMinute,
  }));
  console.log(`process logs: ${run.logDir}`);
  await sql.end();
} finally {
  await platform?.stop();
  await receiver.stop();
  await clearRedisPrefix(redisUrl, prefix);
  await dropBenchDatabase(baseUrl, dbName);
}
