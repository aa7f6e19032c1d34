// B3: end to end. N items added in bulk through the API, consumed by 4 simulated one-slot
// machines doing no work; completed items/s from the first add to the last `completed` in
// Postgres. Baseline: the same N jobs through raw BullMQ (addBulk, 4 no-op Workers of
// concurrency 1, one process each), from the first add to the last completion.
// Then the same with a webhook subscription to `item.completed` whose receiver runs in
// a process of its own at the lowest CPU priority (it stands for another machine), delivered by a
// deliverer process of its own (DISPATCHER_ROLE=deliver): the events delivered per second, the
// deliverer's CPU per 1,000 events and the delay from the change to its delivery,
// and the completed items/s next to the runs without a subscription (two of each at a scale of 0.1
// and more, in the order A B B A).
// Next to the first run (not in the tiny smoke run), two peer baselines on Postgres: the same N
// no-op jobs through graphile-worker and pg-boss, 4 worker processes of concurrency 1 each, each
// in a fresh database of its own (bench/scenarios/b3-peers.mjs, docs/decisions/bench-peers.md):
// their jobs/s and the CPU of their Postgres backends per 1,000 jobs, next to the platform's.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { EXPIRED_QUEUE_ENV, itemPayload, seedApiKeys, seedExpiredQueue, seedMachines, seedProcess, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { core } from '../lib/core.mjs';
import { platformCpuMeter, startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { startWebhookReceiver } from '../lib/webhook-receiver.mjs';
import { cpuMs, sleep, startNode, stop, waitUntil } from '../lib/proc.mjs';
import { checkLoad, cpuPer, load, ratio, raw, round, withScenario } from '../lib/scenario.mjs';
import { BULK_SIZE } from './b2-bulk.mjs';
import { commandDelta } from '../lib/redis-servers.mjs';
import { PEERS, peerRun } from './b3-peers.mjs';

const MACHINES = 4;

/**
 * Twice, each in a database of its own and next to its own raw run: with the agents as shipped
 * (`prefetch` auto: these instant items go up to 4 per round trip; the figure judged against the
 * target), and with `prefetch` 1 (strictly one item per round trip; docs/agent-sim.md) to show
 * what the round trips cost. `--prefetch N` runs only the first, with N.
 */
export async function b3(run) {
  if (run.b3Retention || run.b3Env) return b3Compare(run);
  const shipped = await b3Once(run, 'B3', run.prefetch || null);
  // the peers, right after the run they are compared with (left out of the tiny smoke run)
  if (!run.tiny) {
    const { total } = shipped.details;
    const peerRows = [];
    const platformPg = shipped.details.cpu.msPer1000.postgres ?? null;
    shipped.details.peers = {};
    for (const name of Object.keys(PEERS)) {
      try {
        const p = await peerRun(run, name, { total, chunk: BULK_SIZE, payloads: Array.from({ length: BULK_SIZE }, (_, i) => itemPayload(i)), timeoutMs: Math.max(120_000, Math.min(900_000, total * 10)) });
        shipped.details.peers[name] = p;
        const pg = p.cpu.msPer1000.postgres ?? null;
        peerRows.push(
          { figure: `completed items/s (baseline column: ${p.label})`, unit: 'items/s', platform: round(shipped.details.itemsPerSec, 0), baseline: round(p.itemsPerSec, 0), ratio: ratio(shipped.details.itemsPerSec, p.itemsPerSec), target: null, ...(p.complete ? {} : { note: `${name}: ${p.completed ?? '?'} of ${total} completed in time` }) },
          { figure: `Postgres CPU per 1,000 completed items (baseline column: ${name})`, unit: 'ms', platform: platformPg, baseline: pg, ratio: ratio(platformPg, pg), target: null },
        );
      } catch (err) {
        run.log(`B3 peer ${name} failed: ${err.stack ?? err.message}`);
        shipped.details.peers[name] = { error: String(err.message ?? err) };
        peerRows.push({ figure: `completed items/s (baseline column: ${name}: failed, ${String(err.message ?? err).split('\n')[0].slice(0, 80)})`, unit: 'items/s', platform: round(shipped.details.itemsPerSec, 0), baseline: null, ratio: null, target: null });
      }
    }
    shipped.rows.splice(1, 0, ...peerRows);
  }
  const strict = run.scale >= 0.1 && !run.prefetch ? await b3Once(run, 'B3S', 1) : null;
  if (strict) {
    shipped.rows.push({ ...strict.rows[0], figure: 'completed items/s, agents --prefetch 1', target: null });
    shipped.details.prefetch1 = strict.details;
  }
  if (!run.prefetch) {
    // with a subscription against without, in the order A B B A (the first A is B3 above; at a
    // scale of 0.1 and more): a run's rate on this host moves by a third from one run to the
    // next, and a drift in time cancels out of the pooled figures
    const pairs = run.scale >= 0.1;
    const hooked = await b3Once(run, 'B3W', null, { webhook: true, raw: false });
    const hooked2 = pairs ? await b3Once(run, 'B3W2', null, { webhook: true, raw: false, awaitDeliveries: false }) : null;
    const plain2 = pairs ? await b3Once(run, 'B3N2', null, { raw: false }) : null;
    const withSub = [hooked, hooked2].filter(Boolean).map((r) => r.details.itemsPerSec);
    const without = [shipped, plain2].filter(Boolean).map((r) => r.details.itemsPerSec);
    const mean = (xs) => (xs.every((x) => x) ? xs.reduce((a, x) => a + x, 0) / xs.length : null);
    const items = mean(withSub);
    const plain = mean(without);
    const w = hooked.details.webhook;
    const fmt = (xs) => xs.map((x) => round(x, 0)?.toLocaleString('en') ?? '—').join(' / ');
    shipped.rows.push(
      // judged against the runs without a subscription (within 10 %), not against raw BullMQ
      {
        figure: 'completed items/s with a webhook subscription (baseline: without)', unit: 'items/s', platform: round(items, 0), baseline: round(plain, 0),
        ratio: ratio(items, plain), target: { minRatio: 0.9 }, note: `mean of runs in the order A B B A: without ${fmt(without)}, with ${fmt(withSub)}`,
      },
      { figure: 'item.completed webhooks delivered/s (one deliverer process)', unit: 'events/s', platform: w.perSec, baseline: null, ratio: null, target: null, note: `${w.distinct} of ${hooked.details.completed} events`, totalExact: w.distinct === hooked.details.completed },
      { figure: 'webhook deliverer CPU per 1,000 events', unit: 'ms', platform: w.delivererCpuPer1000Events, baseline: null, ratio: null, target: null },
      { figure: 'change → webhook delivered, p50', unit: 'ms', platform: w.delayMs.p50, baseline: null, ratio: null, target: null },
      { figure: 'change → webhook delivered, p99', unit: 'ms', platform: w.delayMs.p99, baseline: null, ratio: null, target: null },
    );
    shipped.details.webhook = hooked.details;
    shipped.complete = [shipped, hooked, hooked2, plain2].every((r) => !r || r.complete);
    shipped.details.subscriptionRuns = {
      without: [shipped, plain2].filter(Boolean).map((r) => ({ itemsPerSec: r.details.itemsPerSec, cpu: r.details.cpu, database: r.details.database })),
      with: [hooked, hooked2].filter(Boolean).map((r) => ({ itemsPerSec: r.details.itemsPerSec, cpu: r.details.cpu, database: r.details.database })),
    };
  }
  return shipped;
}

/**
 * The writes of the runs before this one go to disk before it starts (a CHECKPOINT, then the
 * kernel's dirty pages: sync), so that a run is not charged for its predecessor's: the run with
 * a subscription that waited for its 100,000 deliveries left more behind than the others.
 * Without the rights for CHECKPOINT (a server not the bench's own), only the sync.
 */
async function settleWrites(sql) {
  await sql`checkpoint`.catch(() => undefined);
  spawnSync('sync', { stdio: 'ignore' });
}

/**
 * One end-to-end run in a database of its own; with `webhook`, it waits for every delivery after
 * the measured phase unless `awaitDeliveries` is false (the second run with a subscription only
 * counts items). B7 (bench/scenarios/b7-scaling.mjs) runs it
 * without the raw baseline (`raw: false`), with `dispatchers` dispatcher processes and on a
 * private Redis (`redis`, bench/lib/redis-servers.mjs): then the details also carry the Redis
 * commands sent (INFO commandstats, summed over every primary) and used_memory, read around the
 * same measured phase as the CPU.
 */
/**
 * B3 next to B3 with one change (B), in the order A B B A, without the raw baseline and the other
 * variants: a run's rate on this host moves from one run to the next, and a drift in time cancels
 * out of the pooled figures.
 * - `--b3-retention N`: another queue of the workspace holds N completed items and the
 *   dispatcher passes every second. In B they are past their retention (each pass deletes within
 *   its budget), so the pass deletes the whole time the items flow; the rows it removed are
 *   reported. In A the queue keeps them a year: the same table, nothing to remove, so the
 *   comparison is the pass's and not a table of N more rows'.
 * - `--b3-env KEY=VALUE[,KEY=VALUE]`: in B, the platform's processes run with these settings
 *   (CLAIM_FLOOR=on, say).
 * - `--b3-retention-flow R`, with `--b3-retention N`: in B nothing has expired when the run starts
 *   and the other queue's items expire at R a second from then on, so the pass removes what a
 *   deployment with that flow would (its steady state) rather than a backlog as fast as its share
 *   allows.
 * - `--b3-order AB`: another order of the runs (investigations; the pooled figures want ABBA).
 */
async function b3Compare(run) {
  const env = Object.fromEntries((run.b3Env ?? '').split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const label = [run.b3Retention ? (run.b3RetentionFlow ? `while the retention pass removes ${run.b3RetentionFlow.toLocaleString('en')} expiring items/s` : 'while the retention pass deletes') : null, Object.keys(env).length ? `with ${run.b3Env}` : null].filter(Boolean).join(', ');
  const order = [...(run.b3Order ?? 'ABBA')].map((c) => c === 'B');
  const runs = [];
  for (const [i, b] of order.entries()) {
    // both sides hold the same other queue (a table of the same size); only B's has expired
    runs.push(await b3Once(run, `B3C${i + 1}`, run.prefetch || null, { raw: false, retentionBacklog: run.b3Retention, backlogExpired: b, retentionFlow: b ? run.b3RetentionFlow : 0, env: b ? env : {} }));
  }
  const mean = (xs) => (xs.every((x) => x !== null && x !== undefined) ? xs.reduce((a, x) => a + x, 0) / xs.length : null);
  const without = runs.filter((_, i) => !order[i]);
  const withB = runs.filter((_, i) => order[i]);
  const a = mean(without.map((r) => r.details.itemsPerSec));
  const b = mean(withB.map((r) => r.details.itemsPerSec));
  const fmt = (xs) => xs.map((r) => round(r.details.itemsPerSec, 0)?.toLocaleString('en') ?? '—').join(' / ');
  const removed = run.b3Retention ? `; the pass removed ${withB.map((r) => (r.details.retention?.removedDuringRun ?? 0).toLocaleString('en')).join(' / ')} rows during those runs` : '';
  const pg = (xs, group = 'postgres') => mean(xs.map((r) => r.details.cpu?.msPer1000?.[group] ?? null));
  const rounds = (xs) => xs.map((r) => `${r.details.queueItems.vacuum}+${r.details.queueItems.analyze}`).join(' / ');
  return {
    id: 'B3',
    title: `end to end ${label}: ${runs[0].details.total.toLocaleString('en')} items in bulk, ${MACHINES} machines doing no work`,
    rows: [
      {
        figure: `completed items/s ${label} (baseline: without)`, unit: 'items/s', platform: round(b, 0), baseline: round(a, 0),
        ratio: ratio(b, a), target: { minRatio: 0.9 }, note: `A B B A: without ${fmt(without)}, with ${fmt(withB)}${removed}`,
      },
      { figure: `Postgres CPU per 1,000 completed items ${label} (baseline: without)`, unit: 'ms', platform: round(pg(withB), 0), baseline: round(pg(without), 0), ratio: ratio(pg(withB), pg(without)), target: null },
      {
        figure: `of which autovacuum workers ${label} (baseline: without)`, unit: 'ms', platform: round(pg(withB, 'autovacuum'), 0), baseline: round(pg(without, 'autovacuum'), 0), ratio: ratio(pg(withB, 'autovacuum'), pg(without, 'autovacuum')), target: null,
        note: `autovacuum + autoanalyze rounds on queue_items: without ${rounds(without)}, with ${rounds(withB)}`,
      },
    ],
    complete: runs.every((r) => r.complete),
    details: { env, retentionBacklog: run.b3Retention, runs: runs.map((r, i) => ({ b: order[i], itemsPerSec: r.details.itemsPerSec, cpu: r.details.cpu, retention: r.details.retention ?? null, queueItems: r.details.queueItems, server: r.details.server })) },
  };
}

export async function b3Once(run, id, prefetch, { webhook = false, awaitDeliveries = true, raw: withRaw = true, dispatchers = 1, redis = null, retentionBacklog = 0, backlogExpired = true, retentionFlow = 0, env: extraEnv = {} } = {}) {
  return withScenario(run, id, async (s) => {
    const total = Math.max(BULK_SIZE, Math.round((100_000 * run.scale) / BULK_SIZE) * BULK_SIZE);
    const timeoutMs = Math.max(120_000, Math.min(900_000, total * 10));
    const payloads = Array.from({ length: BULK_SIZE }, (_, i) => itemPayload(i));

    // the baseline: raw BullMQ
    const rawPrefix = `${s.redisPrefix}:raw`;
    const workers = [];
    let baseline = null;
    if (withRaw) try {
      for (let i = 0; i < MACHINES; i++) {
        workers.push(startNode(`${id.toLowerCase()}-raw-worker-${i + 1}`, path.join(run.root, 'bench', 'raw', 'bullmq-worker.mjs'), [], {
          env: { ...process.env, REDIS_URL: run.redisUrl, BENCH_QUEUE: '{items}', BENCH_PREFIX: rawPrefix },
          logDir: run.logDir,
        }));
      }
      await waitUntil('the raw BullMQ workers', () => workers.every((w) => /ready/.test(readFileSync(w.logFile, 'utf8'))), { procs: workers });
      baseline = await raw(run, `${id.toLowerCase()}-raw-bullmq`, 'bullmq-producer.mjs', {
        redisUrl: run.redisUrl, prefix: rawPrefix, queue: '{items}', total, chunk: BULK_SIZE, payloads, timeoutMs,
      }, timeoutMs + 60_000);
    } finally {
      await Promise.all(workers.map((w) => stop(w)));
    }

    // the platform
    const tenant = await seedTenant(s.sql);
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(10, Math.ceil(total / BULK_SIZE / 15)));
    const consumer = await seedProcess(s.sql, tenant.id, 'bench-consumer');
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b3', { consumer_process_id: consumer.id, max_consumers: MACHINES });
    const machines = await seedMachines(s.sql, tenant.id, MACHINES, { slots: 1 });
    // b3Compare: another queue's ended items past their retention, for the pass to delete during the run
    const expired = retentionBacklog ? await seedExpiredQueue(s.sql, tenant.id, 'bench-b3-old', retentionBacklog, { expired: backlogExpired, flowPerSec: retentionFlow }) : null;
    const receiver = webhook ? s.track(await startWebhookReceiver()) : null;
    if (receiver) {
      const engine = core.createEngine({
        sql: s.sql, logger: core.createLogger({ level: 'error', service: 'bench' }),
        webhooks: { sealKey: Buffer.from(run.encryptionKey, 'base64'), allowInsecure: true, allowPrivateNetworks: true },
      });
      await engine.events.webhooks.create({ actorType: 'system', actorId: null, source: 'bench' }, tenant.id, { url: receiver.url, event_types: ['item.completed'] });
    }
    const platform = s.track(await startPlatform(run, {
      databaseUrl: s.databaseUrl,
      redisPrefix: s.redisPrefix,
      dispatchers,
      redis,
      // webhook delivery in a process of its own, as deployed: its CPU per event sizes it
      parts: receiver ? ['api', 'dispatcher', 'deliverer', 'agents'] : ['api', 'dispatcher', 'agents'],
      profile: run.profile,
      env: {
        ...(receiver ? { WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } : {}),
        ...(expired ? EXPIRED_QUEUE_ENV : {}),
        ...extraEnv,
      },
      agents: {
        machines,
        // "doing no work": items and jobs take no time, no progress or log lines
        config: { defaults: { item_duration: 0, duration: 0, progress_steps: 0, log_lines: 0, ...(prefetch ? { prefetch } : {}) } },
      },
    }));
    await waitMachinesOnline(s.sql, machines.map((m) => m.id), Object.values(platform.procs));

    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;
    // fills the API key cache before the clock starts
    if (!run.tiny) await load(run, `${id.toLowerCase()}-warm-api`, { url: platform.baseUrl, method: 'GET', paths: [`${itemsPath}?limit=1`], keys, connections: MACHINES, amount: keys.length });
    await settleWrites(s.sql);
    const meter = platformCpuMeter(s.sql, platform, redis ? redis.pids : run.redisPid);
    const redisBefore = redis ? { commands: await redis.commandStats(), memory: await redis.usedMemory() } : null;
    await meter.start();
    const meteredFrom = Date.now();
    const delivererCpuBefore = platform.procs.deliverer ? cpuMs(platform.procs.deliverer.pid) : null;
    // --vacuum-ms N (investigations only): what autovacuum with tight per-table thresholds would
    // do on a server where it runs; the CI server of this project runs with autovacuum = off
    let vacuuming = null;
    let vacuums = 0;
    if (run.vacuumMs) {
      const tick = async () => {
        await s.sql`vacuum analyze queue_items, queue_item_counts, jobs`.catch(() => undefined);
        vacuums++;
        vacuuming = setTimeout(tick, run.vacuumMs);
      };
      vacuuming = setTimeout(tick, run.vacuumMs);
    }
    const oldLeft = async () => (expired ? expired.left() : 0);
    const oldBefore = await oldLeft();
    // queue_items' counters from pg_stat_user_tables, read around the run
    const queueItemsStats = async () => (await s.sql`
      select autovacuum_count::int as autovacuum, autoanalyze_count::int as autoanalyze, n_tup_upd::int as updates,
             n_tup_hot_upd::int as hot_updates, n_dead_tup::int as dead from pg_stat_user_tables where relname = 'queue_items'`)[0];
    // the server's WAL, checkpoints and buffer traffic around the run: what a pass's deletes cost
    // everyone else (full-page images after each checkpoint, dirty pages evicted by the backends,
    // pages read from outside shared_buffers)
    const serverStats = async () => (await s.sql`
      select w.wal_records::bigint as wal_records, w.wal_fpi::bigint as wal_fpi, w.wal_bytes::bigint as wal_bytes,
             b.checkpoints_timed::int as checkpoints_timed, b.checkpoints_req::int as checkpoints_req,
             b.buffers_checkpoint::bigint as buffers_checkpoint, b.buffers_clean::bigint as buffers_clean,
             b.buffers_backend::bigint as buffers_backend,
             d.blks_read::bigint as blks_read, d.blks_hit::bigint as blks_hit
        from pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d where d.datname = current_database()`)[0];
    const statsBefore = await queueItemsStats();
    const serverBefore = await serverStats();
    // --b3-retention-flow: the other queue's items start expiring now, at that rate
    if (expired && retentionFlow) await expired.startExpiring();
    const adding = load(run, `${id.toLowerCase()}-load-api`, {
      url: platform.baseUrl, method: 'POST', paths: [`${itemsPath}/bulk`], body: { items: payloads }, keys,
      connections: MACHINES, amount: total / BULK_SIZE,
    }, timeoutMs);
    adding.catch(() => undefined); // awaited below; this only keeps a failure from going unhandled meanwhile
    let added;
    let counts = {};
    const until = Date.now() + timeoutMs;
    // bounded: the adds finish, then the items reach a final state or the time is up
    for (;;) {
      await sleep(100);
      const rows = await s.sql`select status, sum(n)::int as n from queue_item_counts where queue_id = ${queue.id} group by status`;
      counts = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      if (!added) added = await Promise.race([adding, sleep(0).then(() => null)]);
      if (added && (counts.completed ?? 0) + (counts.dead_letter ?? 0) >= total) break;
      if (Date.now() > until) break;
      for (const p of Object.values(platform.procs)) if (p.child.exitCode !== null) throw new Error(`${p.name} exited during B3`);
    }
    if (vacuuming) clearTimeout(vacuuming);
    const retention = expired ? { backlog: retentionBacklog, flowPerSec: retentionFlow || null, leftAtStart: oldBefore, removedDuringRun: oldBefore - (await oldLeft()) } : null;
    const statsAfter = await queueItemsStats();
    const serverAfter = await serverStats();
    const server = Object.fromEntries(Object.keys(serverAfter).map((k) => [k, Number(serverAfter[k]) - Number(serverBefore[k])]));
    // on queue_items during the run: autovacuum's rounds (what the deletes of a pass bring on) and
    // the updates, of which HOT ones add no index entry (the others leave one in every index for vacuum)
    const queueItems = {
      vacuum: statsAfter.autovacuum - statsBefore.autovacuum, analyze: statsAfter.autoanalyze - statsBefore.autoanalyze,
      updates: statsAfter.updates - statsBefore.updates, hotUpdates: statsAfter.hot_updates - statsBefore.hot_updates, deadAtEnd: statsAfter.dead,
    };
    if (!added) added = await adding;
    checkLoad('B3 API', added);
    const cpu = { ...cpuPer({ ...(await meter.stop()), load: added.cpuMs }, counts.completed ?? 0), meteredSec: (Date.now() - meteredFrom) / 1000 };
    const redisAfter = redis ? { commands: await redis.commandStats(), memory: await redis.usedMemory() } : null;
    const rss = platform.peakRss();
    const [{ last }] = await s.sql`select max(processed_at) as last from queue_items where queue_id = ${queue.id} and status = 'completed'`;
    const completed = counts.completed ?? 0;
    const elapsedSec = last ? (last.getTime() - added.startedAt) / 1000 : null;
    const itemsPerSec = elapsedSec ? completed / elapsedSec : null;
    // every completion's event reaches the receiver (bounded: the time left, at least a minute)
    if (receiver && awaitDeliveries) {
      await waitUntil('every item.completed webhook delivered', async () => (await receiver.distinct('item.completed')) >= completed, {
        procs: Object.values(platform.procs), timeoutMs: Math.max(60_000, until - Date.now()), everyMs: 250,
      }).catch(() => undefined);
    }

    return {
      id: 'B3',
      title: `end to end: ${total.toLocaleString('en')} items in bulk, ${MACHINES} machines doing no work`,
      prefetch: prefetch ?? 'auto',
      rows: [
        { figure: 'completed items/s', unit: 'items/s', platform: round(itemsPerSec, 0), baseline: round(baseline?.itemsPerSec, 0), ratio: ratio(itemsPerSec, baseline?.itemsPerSec), target: { minRatio: 0.25 } },
      ],
      rss: { api: rss.api, dispatcher: rss.dispatcher, agents: rss.agents },
      complete: completed === total && (baseline?.complete ?? true),
      details: {
        total, completed, counts, elapsedSec, itemsPerSec, cpu, vacuums, addSec: (added.finishedAt - added.startedAt) / 1000, keys: keys.length, baseline,
        database: s.databaseUrl.slice(s.databaseUrl.lastIndexOf('/') + 1), dispatchers, retention, queueItems, server,
        ...(redis ? {
          redis: {
            kind: redis.kind,
            commands: commandDelta(redisBefore.commands, redisAfter.commands),
            usedMemoryDeltaBytes: redisAfter.memory - redisBefore.memory,
          },
        } : {}),
        ...(receiver ? { webhook: await webhookSummary(receiver, platform, delivererCpuBefore) } : {}),
      },
    };
  }, { redis });
}

/**
 * The receiver's figures and, when every event went out, what the deliverer process spent on them
 * from the measured phase's start to the last delivery: CPU per 1,000 events, the figure that
 * sizes deliverers.
 */
async function webhookSummary(receiver, platform, cpuBefore) {
  const summary = await receiver.summary('item.completed');
  const after = platform.procs.deliverer ? cpuMs(platform.procs.deliverer.pid) : null;
  const cpu = cpuBefore !== null && after !== null ? after - cpuBefore : null;
  return { ...summary, delivererCpuMs: cpu, delivererCpuPer1000Events: cpu !== null && summary.distinct ? round((cpu * 1000) / summary.distinct, 0) : null };
}
