// B10: the retention soak. Not part of the default full run (it lasts `--minutes`, 30 by
// default): `npm run bench -- --only B10`. B3's set-up (a database and Redis prefix of its own,
// the API, the dispatcher, a webhook deliverer and agent-sim machines as separate processes), run
// for a long time at a steady rate instead of as fast as it goes:
//   - items added through `…/items/bulk` at `--rate` items/s (default 200; requests of up to
//     100 items, API keys round robin as the other scenarios), two one-slot machines consuming
//     them as B3's do (items take no time);
//   - a webhook subscription to `item.completed` and `queue.retention`, delivered by a deliverer
//     process to a local receiver (bench/lib/webhook-receiver.mjs);
//   - the queue's retention `--retention-min` minutes (default 5) with action `delete`, or
//     `archive` (`--retention-action archive`, into a temporary ARCHIVE_DIR); the workspace's jobs
//     the same; the dispatcher's pass every 15 s (RETENTION_EVERY_MS);
//   - every minute: items added, items completed in that minute, the backlog (`new`),
//     pg_total_relation_size of queue_items, jobs and events (heap, indexes, TOAST), and
//     n_dead_tup of queue_items;
//   - `--hold-rr-from M --hold-rr-minutes N`: from minute M a separate connection holds a
//     repeatable-read snapshot (`select count(*) from queue_items` in it) for N minutes, as a
//     long report or a forgotten transaction would: vacuum cannot remove what the snapshot sees.
// Figures: the size of queue_items after the first retention window against the highest and
// lowest after it (flat within 10 %); the worst minute's completions during the hold against the
// median minute before it; the pass's throughput (items removed per second of pass: the
// dispatcher's `retention` jobs, active to completed, from BullMQ's events; the totals from the
// `queue.retention` and `jobs.retention` events); Postgres time and CPU per
// 1,000 removed items (pg_stat_statements when the server preloads it; the autovacuum workers'
// CPU from /proc when the server runs on this host).
// `--scale` shrinks every duration (minutes, the retention, the hold, the sample and pass
// intervals), not the rate: `--scale 0.1` is a three-minute run sampled every 6 s. Autovacuum's
// own clock (a minute between rounds by default) is not scaled: sizes of a scaled run do not tell
// whether the table stays flat, only that the figures come out.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { itemPayload, seedApiKeys, seedMachines, seedProcess, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { core } from '../lib/core.mjs';
import { startPlatform, waitMachinesOnline } from '../lib/platform.mjs';
import { startWebhookReceiver } from '../lib/webhook-receiver.mjs';
import { cpuMeter, sleep } from '../lib/proc.mjs';
import { percentile, round, withScenario } from '../lib/scenario.mjs';
import { rawConnection } from '../raw/connection.mjs';

const { QueueEvents } = createRequire(import.meta.url)('bullmq');

const MACHINES = 2;
const BULK = 100;
/** The contract's bulk limit is per key and minute: keys enough that each stays well under it. */
const BULK_PER_KEY_PER_MIN = 10;
const RETENTION_EVERY_MS = 15_000;

export const SOAK_DEFAULTS = { minutes: 30, retentionMin: 5, rate: 200, action: 'delete', holdFrom: null, holdMinutes: null };

/** The statements of the retention pass (packages/core/src/retention/pass.ts), as pg_stat_statements normalizes them. */
const RETENTION_STATEMENTS = [
  '%pg_try_advisory_xact_lock(hashtextextended(%',
  '%to_jsonb(i) as row from queue_items i%',
  '%to_jsonb(j) as row from jobs j%',
  'delete from queue_items where id = any(%',
  'delete from jobs where id = any(%',
  'insert into retention_progress%',
  'insert into archive_files%',
  'select deleted, archived from retention_progress%',
  '%from queues q left join retention_progress p%',
];

async function sample(sql, queueId) {
  const [r] = await sql`
    select (select coalesce(sum(n), 0)::int from queue_item_counts where queue_id = ${queueId} and status = 'new') as backlog,
           pg_total_relation_size('queue_items')::float8 as items_bytes,
           pg_total_relation_size('jobs')::float8 as jobs_bytes,
           pg_total_relation_size('events')::float8 as events_bytes,
           (select n_dead_tup::int from pg_stat_user_tables where relid = 'queue_items'::regclass) as dead_tuples,
           (select n_live_tup::int from pg_stat_user_tables where relid = 'queue_items'::regclass) as live_tuples`;
  return r;
}

/** Adds `rate` items/s in bulk requests on a fixed schedule (a late request does not shift the next ones). */
function startAdding(baseUrl, queueName, keys, rate) {
  const perReq = Math.max(1, Math.min(BULK, Math.round(rate / 2)));
  const everyMs = (perReq * 1000) / rate;
  const body = JSON.stringify({ items: Array.from({ length: perReq }, (_, i) => itemPayload(i)) });
  const url = `${baseUrl}/api/v1/queues/by-name/${encodeURIComponent(queueName)}/items/bulk`;
  const state = { added: 0, failed: 0, statuses: {}, inFlight: 0, skipped: 0, stopped: false };
  const t0 = Date.now();
  let n = 0;
  let k = 0;
  const send = async () => {
    // more than 8 requests waiting means the API is far behind: count the miss, do not pile up
    if (state.inFlight >= 8) { state.skipped++; return; }
    state.inFlight++;
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': keys[k++ % keys.length] }, body });
      await res.arrayBuffer();
      state.statuses[res.status] = (state.statuses[res.status] ?? 0) + 1;
      if (res.status === 201 || res.status === 200) state.added += perReq;
      else state.failed += perReq;
    } catch {
      state.failed += perReq;
    } finally {
      state.inFlight--;
    }
  };
  let timer = null;
  const tick = () => {
    if (state.stopped) return;
    const due = Math.floor((Date.now() - t0) / everyMs) + 1;
    while (n < due) { n++; send(); }
    timer = setTimeout(tick, Math.max(1, t0 + n * everyMs - Date.now()));
  };
  tick();
  return {
    state,
    perReq,
    async stop() {
      state.stopped = true;
      clearTimeout(timer);
      while (state.inFlight > 0) await sleep(20);
    },
  };
}

/**
 * A repeatable-read snapshot on a connection of its own: taken by its first statement, held until
 * `release()`. Vacuum keeps every row version it may see for that long.
 */
function holdSnapshot(databaseUrl) {
  const sql = core.createSql(databaseUrl, { max: 1 });
  let release;
  const released = new Promise((r) => (release = r));
  let taken;
  const took = new Promise((r) => (taken = r));
  const done = sql.begin('isolation level repeatable read', async (tx) => {
    const [{ n }] = await tx`select count(*)::int as n from queue_items`;
    taken(n);
    await released;
  }).finally(() => sql.end({ timeout: 5 }));
  return { took, release: async () => { release(); await done; } };
}

/**
 * The dispatcher's retention passes as BullMQ reports them: its `retention` job (a job scheduler's,
 * ids `repeat:retention:<ms>`) goes active and completes with `{scopes, deleted}`; the events
 * stream's ids carry Redis's clock, so a pass's time is its completed id's less its active id's.
 */
async function watchRetentionJobs(redisUrl, redisPrefix) {
  const connection = rawConnection(redisUrl);
  const events = new QueueEvents(core.DISPATCH_QUEUE, { connection, prefix: core.redisKeys(redisPrefix).bull });
  await events.waitUntilReady();
  const active = new Map();
  const passes = [];
  const ms = (id) => Number(String(id).split('-')[0]);
  const ours = (jobId) => typeof jobId === 'string' && jobId.startsWith('repeat:retention:');
  events.on('active', ({ jobId }, id) => { if (ours(jobId)) active.set(jobId, ms(id)); });
  events.on('completed', ({ jobId, returnvalue }, id) => {
    if (!ours(jobId) || !active.has(jobId)) return;
    const r = typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue;
    passes.push({ at: ms(id), ms: ms(id) - active.get(jobId), deleted: r?.deleted ?? 0, scopes: r?.scopes ?? 0 });
    active.delete(jobId);
  });
  return { passes, async stop() { await events.close(); connection.disconnect(); } };
}

export async function b10(run) {
  const o = { ...SOAK_DEFAULTS, ...(run.soak ?? {}) };
  const minuteMs = 60_000 * run.scale;
  const minutes = o.minutes;
  const retentionMs = o.retentionMin * minuteMs;
  const everyMs = Math.max(100, Math.round(RETENTION_EVERY_MS * run.scale));
  const hold = o.holdFrom !== null && o.holdFrom !== undefined ? { from: o.holdFrom, minutes: o.holdMinutes ?? 5 } : null;
  // a minute's completions are counted after it ends: they must still be there
  if (!(o.retentionMin >= 1)) throw new Error('B10: --retention-min is 1 or more');
  if (!(o.minutes >= 1 && o.rate > 0)) throw new Error('B10: --minutes and --rate must be positive');
  if (hold && hold.from + 1 > minutes) throw new Error(`B10: --hold-rr-from ${hold.from} is past the run's ${minutes} minutes`);
  if (!['delete', 'archive'].includes(o.action)) throw new Error(`B10: --retention-action is delete or archive, not ${o.action}`);
  const archiveDir = o.action === 'archive' ? mkdtempSync(path.join(os.tmpdir(), 'svc-bench-archive-')) : null;

  return withScenario(run, 'B10', async (s) => {
    const tenant = await seedTenant(s.sql);
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(10, Math.ceil((o.rate * 60) / Math.min(BULK, Math.max(1, Math.round(o.rate / 2))) / BULK_PER_KEY_PER_MIN)));
    const consumer = await seedProcess(s.sql, tenant.id, 'bench-consumer');
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b10', { consumer_process_id: consumer.id, max_consumers: MACHINES });
    const days = retentionMs / 86_400_000;
    await s.sql`update queues set retention_completed_days = ${days}, retention_failed_days = ${days}, retention_action = ${o.action} where id = ${queue.id}`;
    await s.sql`update tenants set job_retention_days = ${days}, job_retention_action = ${o.action} where id = ${tenant.id}`;
    const machines = await seedMachines(s.sql, tenant.id, MACHINES, { slots: 1 });

    // pg_stat_statements when the server preloads it (the bench's private Postgres can); else null figures
    const statements = await s.sql`create extension if not exists pg_stat_statements`.then(() => s.sql`select pg_stat_statements_reset()`).then(() => true, () => false);

    const receiver = s.track(await startWebhookReceiver());
    const engine = core.createEngine({
      sql: s.sql, logger: core.createLogger({ level: 'error', service: 'bench' }),
      webhooks: { sealKey: Buffer.from(run.encryptionKey, 'base64'), allowInsecure: true, allowPrivateNetworks: true },
    });
    await engine.events.webhooks.create({ actorType: 'system', actorId: null, source: 'bench' }, tenant.id, { url: receiver.url, event_types: ['item.completed', 'queue.retention'] });

    const platform = s.track(await startPlatform(run, {
      databaseUrl: s.databaseUrl,
      redisPrefix: s.redisPrefix,
      parts: ['api', 'dispatcher', 'deliverer', 'agents'],
      profile: run.profile,
      env: {
        WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        RETENTION_EVERY_MS: String(everyMs),
        ...(archiveDir ? { ARCHIVE_DIR: archiveDir } : {}),
      },
      agents: { machines, config: { defaults: { item_duration: 0, duration: 0, progress_steps: 0, log_lines: 0 } } },
    }));
    const procs = Object.values(platform.procs);
    await waitMachinesOnline(s.sql, machines.map((m) => m.id), procs);

    // Postgres CPU from /proc: every backend of this database, and the autovacuum workers apart
    const pgPids = async (autovacuum) => (await s.sql`
      select pid from pg_stat_activity where datname = current_database()
        and (backend_type = 'autovacuum worker') = ${autovacuum}`).map((r) => r.pid);
    const meter = cpuMeter({ postgres: () => pgPids(false), autovacuum: () => pgPids(true), ...Object.fromEntries(Object.entries(platform.procs).map(([n, p]) => [n, () => [p.pid]])) });
    await meter.start();
    const passWatch = await watchRetentionJobs(run.redisUrl, s.redisPrefix);

    const startedAt = Date.now();
    const adder = startAdding(platform.baseUrl, queue.name, keys, o.rate);
    const rows = [];
    let snapshot = null;
    let holdRows = null;
    let addedBefore = 0;
    try {
      for (let m = 1; m <= minutes; m++) {
        if (hold && m - 1 === hold.from) {
          snapshot = holdSnapshot(s.databaseUrl);
          holdRows = await snapshot.took;
          run.log(`B10: minute ${m}: a repeatable-read snapshot taken (it counted ${holdRows} items), held ${hold.minutes} minutes`);
        }
        if (hold && snapshot && m - 1 === hold.from + hold.minutes) {
          await snapshot.release();
          snapshot = null;
        }
        const from = new Date(startedAt + (m - 1) * minuteMs);
        const to = new Date(startedAt + m * minuteMs);
        while (Date.now() < to.getTime()) {
          for (const p of procs) if (p.child.exitCode !== null) throw new Error(`${p.name} exited during B10`);
          await sleep(Math.min(1000, to.getTime() - Date.now()));
        }
        const added = adder.state.added - addedBefore;
        addedBefore = adder.state.added;
        const [{ completed }] = await s.sql`
          select count(*)::int as completed from queue_items
          where queue_id = ${queue.id} and status = 'completed' and processed_at >= ${from} and processed_at < ${to}`;
        const x = await sample(s.sql, queue.id);
        const row = {
          minute: m, added, completed, backlog: x.backlog,
          queueItemsMB: round(x.items_bytes / 2 ** 20, 1), jobsMB: round(x.jobs_bytes / 2 ** 20, 2), eventsMB: round(x.events_bytes / 2 ** 20, 1),
          deadTuples: x.dead_tuples, liveTuples: x.live_tuples,
          hold: Boolean(hold && m - 1 >= hold.from && m - 1 < hold.from + hold.minutes),
        };
        rows.push(row);
        run.log(`B10 ${String(m).padStart(3)}: added ${added}, completed ${completed}, backlog ${x.backlog}, queue_items ${row.queueItemsMB} MB, jobs ${row.jobsMB} MB, dead ${x.dead_tuples}${row.hold ? ' (snapshot held)' : ''}`);
      }
    } finally {
      await adder.stop();
      if (snapshot) await snapshot.release().catch(() => undefined);
      await passWatch.stop().catch(() => undefined);
    }
    const cpu = await meter.stop();

    // what retention removed: its events (one per queue and pass) and the statements' time
    const [ev] = await s.sql`
      select count(*)::int as passes, coalesce(sum((data->>'deleted')::bigint), 0)::float8 as deleted,
             coalesce(sum((data->>'archived')::bigint), 0)::float8 as archived
      from events where tenant_id = ${tenant.id} and type = 'queue.retention'`;
    const [jobsEv] = await s.sql`
      select coalesce(sum((data->>'deleted')::bigint), 0)::float8 as deleted from events where tenant_id = ${tenant.id} and type = 'jobs.retention'`;
    const removed = ev.deleted + jobsEv.deleted;
    let pgStat = null;
    if (statements) {
      const byStatement = await s.sql`
        select left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as query, calls::float8 as calls, rows::float8 as rows,
               total_exec_time::float8 as ms
        from pg_stat_statements
        where dbid = (select oid from pg_database where datname = current_database())
          and query like any(${RETENTION_STATEMENTS})
        order by total_exec_time desc`;
      const ms = byStatement.reduce((a, r) => a + r.ms, 0);
      pgStat = { execMs: round(ms, 0), execMsPer1000Removed: removed ? round((ms * 1000) / removed, 1) : null, statements: byStatement.map((r) => ({ ...r, ms: round(r.ms, 1) })) };
    }
    // the passes that removed something (items and jobs: the job's result sums both)
    const passes = passWatch.passes.filter((p) => p.deleted > 0);
    const passMs = passes.map((p) => p.ms);
    const passTotalSec = passMs.reduce((a, x) => a + x, 0) / 1000;
    const passDeleted = passes.reduce((a, p) => a + p.deleted, 0);

    // flat: the size after the first retention window (and one pass) against the extremes after it
    const firstWindowMinute = Math.ceil((retentionMs + everyMs) / minuteMs);
    const ref = rows.find((r) => r.minute >= firstWindowMinute + 1);
    const after = ref ? rows.filter((r) => r.minute > ref.minute) : [];
    const flat = (k) => {
      if (!ref || !after.length) return null;
      const xs = after.map((r) => r[k]);
      const max = Math.max(...xs);
      const min = Math.min(...xs);
      return { referenceMinute: ref.minute, referenceMB: ref[k], maxMB: max, minMB: min, maxRatio: round(max / ref[k], 3), minRatio: round(min / ref[k], 3), flatWithin10pct: max / ref[k] <= 1.1 && min / ref[k] >= 0.9 };
    };
    const sizes = { queueItems: flat('queueItemsMB'), jobs: flat('jobsMB'), events: flat('eventsMB') };

    let holdFigures = null;
    if (hold) {
      // the first minute is left out of the median: the consumers start in it
      const before = rows.filter((r) => r.minute > 1 && r.minute <= hold.from).map((r) => r.completed);
      const during = rows.filter((r) => r.hold);
      const median = percentile(before, 50);
      const worst = during.length ? during.reduce((a, r) => (r.completed < a.completed ? r : a)) : null;
      holdFigures = {
        fromMinute: hold.from, minutes: hold.minutes, snapshotCounted: holdRows, medianCompletedBefore: median,
        worstMinute: worst?.minute ?? null, worstCompleted: worst?.completed ?? null,
        worstRatio: worst && median ? round(worst.completed / median, 3) : null,
        deadTuplesAtEnd: during.at(-1)?.deadTuples ?? null,
      };
    }

    const webhook = await receiver.summary('item.completed');
    const totalAdded = adder.state.added;
    const details = {
      options: { minutes, minuteSec: minuteMs / 1000, retentionMin: o.retentionMin, retentionSec: retentionMs / 1000, retentionEveryMs: everyMs, rate: o.rate, perRequest: adder.perReq, action: o.action, hold },
      perMinute: rows,
      adds: { added: totalAdded, failed: adder.state.failed, statuses: adder.state.statuses, skippedTicks: adder.state.skipped },
      sizes,
      hold: holdFigures,
      retention: {
        passesWithEvents: ev.passes, itemsDeleted: ev.deleted, itemsArchived: ev.archived, jobsDeleted: jobsEv.deleted,
        dispatcherPasses: passWatch.passes.length, passesThatRemoved: passes.length, passMs: { p50: percentile(passMs, 50), max: passMs.length ? Math.max(...passMs) : null },
        itemsPerPassSecond: passTotalSec ? round(passDeleted / passTotalSec, 0) : null,
        itemsPerSecondOfPostgresTime: pgStat?.execMs ? round((removed * 1000) / pgStat.execMs, 0) : null,
        passes: passes.map((p) => ({ at: new Date(p.at).toISOString(), ms: p.ms, deleted: p.deleted })),
      },
      postgres: {
        statements: pgStat,
        cpuMs: cpu.postgres, autovacuumCpuMs: cpu.autovacuum,
        autovacuumCpuMsPer1000Removed: removed ? round((cpu.autovacuum * 1000) / removed, 1) : null,
        backendsCpuMsPer1000Added: totalAdded ? round((cpu.postgres * 1000) / totalAdded, 0) : null,
      },
      cpuMs: cpu,
      webhook: { received: webhook.received, distinct: webhook.distinct, delayMs: webhook.delayMs },
      archiveDir,
    };
    const q = sizes.queueItems;
    const resultRows = [
      { figure: `queue_items size after the first retention window (minute ${q?.referenceMinute ?? '?'}), highest after it ÷ it`, unit: 'ratio', platform: q?.maxRatio ?? null, baseline: null, ratio: null, target: null, note: q ? `${q.referenceMB} MB; ${q.minMB}–${q.maxMB} MB after; ${q.flatWithin10pct ? 'flat within 10 %' : 'NOT flat within 10 %'}` : 'the run is shorter than the retention window' },
      { figure: 'queue_items size, lowest after the first window ÷ it', unit: 'ratio', platform: q?.minRatio ?? null, baseline: null, ratio: null, target: null },
      { figure: 'retention: items and jobs removed per second of pass', unit: 'items/s', platform: details.retention.itemsPerPassSecond, baseline: null, ratio: null, target: null, note: `${ev.deleted} items and ${jobsEv.deleted} jobs in ${passes.length} of ${passWatch.passes.length} dispatcher passes (active → completed of its job): p50 ${details.retention.passMs.p50 ?? '—'} ms, max ${details.retention.passMs.max ?? '—'} ms` },
      { figure: 'retention: items and jobs removed per second of its statements\' Postgres time (pg_stat_statements)', unit: 'items/s', platform: details.retention.itemsPerSecondOfPostgresTime, baseline: null, ratio: null, target: null },
      { figure: 'Postgres time of the retention statements per 1,000 items and jobs removed (pg_stat_statements)', unit: 'ms', platform: pgStat?.execMsPer1000Removed ?? null, baseline: null, ratio: null, target: null, ...(pgStat ? {} : { note: 'pg_stat_statements not preloaded on this server' }) },
      { figure: 'autovacuum CPU (this database) per 1,000 items and jobs removed', unit: 'ms', platform: details.postgres.autovacuumCpuMsPer1000Removed, baseline: null, ratio: null, target: null },
    ];
    if (holdFigures) {
      resultRows.push({ figure: `completed in the worst minute of the snapshot's hold ÷ median minute before it`, unit: 'ratio', platform: holdFigures.worstRatio, baseline: null, ratio: null, target: null, note: `minute ${holdFigures.worstMinute}: ${holdFigures.worstCompleted} vs ${holdFigures.medianCompletedBefore}` });
    }
    return {
      id: 'B10',
      title: `retention soak: ${o.rate} items/s for ${minutes} × ${minuteMs / 1000} s, retention ${retentionMs / 1000} s (${o.action})`,
      rows: resultRows,
      // every add accepted, on schedule
      complete: adder.state.failed === 0 && adder.state.skipped === 0,
      details,
    };
  }).finally(() => {
    if (archiveDir && !run.keep) rmSync(archiveDir, { recursive: true, force: true });
  });
}

/** The per-minute table as text (printed after the run's table). */
export function perMinuteTable(details) {
  const head = ['min', 'added', 'completed', 'backlog', 'queue_items MB', 'jobs MB', 'events MB', 'dead tuples', 'snapshot'];
  const lines = details.perMinute.map((r) => [r.minute, r.added, r.completed, r.backlog, r.queueItemsMB, r.jobsMB, r.eventsMB, r.deadTuples, r.hold ? 'held' : ''].map(String));
  const all = [head, ...lines];
  const w = head.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  return all.map((l) => l.map((c, i) => c.padStart(w[i])).join('  ')).join('\n');
}
