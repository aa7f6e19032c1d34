import { createSql, CLI_ACTOR, type Sql } from '@svc/core';
import {
  addItemToQueueNamed, addItemsBulk, answerJobInput, createOutboxRelay, drainOutbox, finishJob, inTransactionPublishingAtOnce, noopDispatch, recordEffect,
  NUDGE_WINDOW_MS, recordHeartbeat, relayOnce, startJob, startQueueConsumers, stopJob, timeOutJobs, triggerJobByApi, updateQueue, writeCatalogEntity,
  type DispatchJobRef, type DispatchPort, type Effect,
} from '@svc/core/internals';
import { databaseSuite, seedApiKey, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, waitFor } from '@svc/testing';
import { createLogger } from '@svc/core';

/**
 * The transactional outbox (docs/decisions/outbox.md): commands write their effects in their own
 * transaction, and the relay publishes each committed effect, none lost, none of a rolled-back
 * change, and none twice among relays.
 */
const db = databaseSuite();
const logger = createLogger({ service: 'outbox-test', level: 'error' });

interface Published {
  jobs: DispatchJobRef[];
  ready: string[];
  failed: string[];
  stops: string[];
  inputs: string[];
  ended: Array<{ id: string; reason: string }>;
  online: string[];
}

function recorder(): { port: DispatchPort; seen: Published } {
  const seen: Published = { jobs: [], ready: [], failed: [], stops: [], inputs: [], ended: [], online: [] };
  const port: DispatchPort = {
    ...noopDispatch,
    jobsCreated: async (jobs) => void seen.jobs.push(...jobs),
    queueItemsReady: async (q) => void seen.ready.push(q.id),
    queueItemsFailed: async (q) => void seen.failed.push(q.id),
    jobStopRequested: async (j) => void seen.stops.push(j.id),
    jobInputAnswered: async (j) => void seen.inputs.push(j.id),
    runEnded: async (j, reason) => void seen.ended.push({ id: j.id, reason }),
    machineOnline: async (m) => void seen.online.push(m.id),
  };
  return { port, seen };
}

async function outboxRows(sql: Sql): Promise<Array<{ kind: string; payload: Record<string, unknown> }>> {
  return sql<Array<{ kind: string; payload: Record<string, unknown> }>>`select kind, payload from outbox order by id`;
}

async function world(sql: Sql) {
  const tenant = await seedTenant(sql);
  const proc = await seedProcess(sql, tenant.id);
  const machine = (await seedMachine(sql, tenant.id, { slots: 4 })).row;
  const queue = await seedQueue(sql, tenant.id, { consumer_process_id: proc.id, max_consumers: 2 });
  const key = await seedApiKey(sql, tenant.id);
  return { tenant, proc, machine, queue, keyId: key.row.id as string };
}

beforeEach(async () => {
  await db.sql`delete from outbox`;
});

describe('commands write their effects in their own transaction', () => {
  it('an effect of a rolled-back transaction never exists', async () => {
    await db.sql.begin(async (tx) => {
      await recordEffect(tx, { kind: 'items-failed', queue_id: '00000000-0000-0000-0000-000000000001' });
      await tx`select 1/0`;
    }).catch(() => undefined);
    expect(await outboxRows(db.sql)).toEqual([]);
  });

  it('a bulk of 1,000 items records one queue-ready effect, in the same statement', async () => {
    const w = await world(db.sql);
    const ref = { id: w.queue.id as string, tenant_id: w.tenant.id, name: w.queue.name as string };
    expect(await addItemsBulk({ sql: db.sql }, ref, { items: Array.from({ length: 1000 }, (_, i) => ({ i })) })).toBe(1000);
    expect(await outboxRows(db.sql)).toEqual([{ kind: 'queue-ready', payload: { queue_id: w.queue.id, tenant_id: w.tenant.id } }]);
  });

  it('concurrent single adds share their batch: one effect per queue per statement, never one per item', async () => {
    const w = await world(db.sql);
    const other = await seedQueue(db.sql, w.tenant.id);
    const adds = Array.from({ length: 120 }, (_, i) =>
      addItemToQueueNamed({ sql: db.sql }, w.tenant.id, i % 2 ? (w.queue.name as string) : (other.name as string), { data: { i } }));
    await Promise.all(adds);
    const rows = await outboxRows(db.sql);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.length).toBeLessThan(120);
    expect(new Set(rows.map((r) => r.payload.queue_id))).toEqual(new Set([w.queue.id, other.id]));
    expect(rows.every((r) => r.kind === 'queue-ready')).toBe(true);
  });

  it('an add to a missing queue records nothing', async () => {
    const w = await world(db.sql);
    await expect(addItemToQueueNamed({ sql: db.sql }, w.tenant.id, 'no-such-queue', { data: {} })).rejects.toThrow();
    expect(await outboxRows(db.sql)).toEqual([]);
  });

  it('a trigger records its job with SLA and delay as dates; a refused trigger records nothing', async () => {
    const w = await world(db.sql);
    const sla = await seedProcess(db.sql, w.tenant.id, { sla_deadline_minutes: 5 });
    const job = await triggerJobByApi({ sql: db.sql }, { tenantId: w.tenant.id, apiKeyId: w.keyId }, {
      rawProcessId: sla.id, body: () => ({ process_id: sla.id as string, machine_id: w.machine.id as string, priority: 5 }),
    });
    await db.sql`update tenants set quota_used = monthly_quota where id = ${w.tenant.id}`;
    await expect(triggerJobByApi({ sql: db.sql }, { tenantId: w.tenant.id, apiKeyId: w.keyId }, {
      rawProcessId: sla.id, body: () => ({ process_id: sla.id as string }),
    })).rejects.toThrow();
    const { port, seen } = recorder();
    expect(await drainOutbox(db.sql, port)).toBe(1);
    expect(seen.jobs).toEqual([{
      id: job.id, tenant_id: w.tenant.id, machine_id: w.machine.id, priority: 5, sla_due_at: job.sla_due_at, not_before: null,
    }]);
    expect(seen.jobs[0]!.sla_due_at).toBeInstanceOf(Date);
  });

  it('a stop of a running job records its abort', async () => {
    const w = await world(db.sql);
    const job = await seedJob(db.sql, w.tenant.id, { process_id: w.proc.id as string, machine_id: w.machine.id as string, status: 'running' });
    await stopJob({ sql: db.sql }, w.tenant.id, job.id as string);
    expect(await outboxRows(db.sql)).toEqual([{ kind: 'job-stop', payload: { job_id: job.id, machine_id: w.machine.id } }]);
  });

  it('a consumer job that ends records its failed items and a look at its queue, with its follow-ups', async () => {
    const w = await world(db.sql);
    const job = await seedJob(db.sql, w.tenant.id, { process_id: w.proc.id as string, machine_id: w.machine.id as string, source: 'queue' });
    await db.sql`update jobs set queue_id = ${w.queue.id} where id = ${job.id}`;
    const started = await startJob(db.sql, job.id as string, w.machine.id as string);
    if (!('started' in started)) throw new Error('not started');
    await db.sql`insert into queue_item_records (tenant_id, queue_id, status, job_id, data) values (${w.tenant.id}, ${w.queue.id}, 'in_progress', ${job.id}, '{}')`;
    await db.sql`delete from outbox`;
    const fin = await finishJob(db.sql, job.id as string, started.started.attempt, { to: 'completed', output_data: { items_failed: 1 } });
    expect(fin!.failedItemQueues).toEqual([w.queue.id]);
    const { port, seen } = recorder();
    await drainOutbox(db.sql, port);
    expect(seen.failed).toEqual([w.queue.id]);
    expect(seen.ready).toEqual([w.queue.id]);
  });

  it('a timed-out run records its abort and its retry', async () => {
    const w = await world(db.sql);
    const retrying = await seedProcess(db.sql, w.tenant.id, { auto_retry: true, max_retries: 1, retry_delay_seconds: 30, timeout_seconds: 1 });
    const job = await seedJob(db.sql, w.tenant.id, { process_id: retrying.id as string, machine_id: w.machine.id as string });
    await startJob(db.sql, job.id as string, w.machine.id as string);
    await db.sql`update jobs set timeout_at = now() - interval '1 second' where id = ${job.id}`;
    await db.sql`delete from outbox`;
    const ended = await timeOutJobs(db.sql);
    expect(ended.ended.map((j) => j.id)).toEqual([job.id]);
    const { port, seen } = recorder();
    await drainOutbox(db.sql, port);
    expect(seen.ended).toEqual([{ id: job.id, reason: 'timeout' }]);
    expect(seen.jobs).toHaveLength(1);
    expect(seen.jobs[0]!.not_before).toBeInstanceOf(Date);
    expect(seen.jobs[0]!.not_before!.getTime()).toBeGreaterThan(Date.now() + 20_000);
  });

  it('a heartbeat that brings a machine back from offline records machine-online; a plain one records nothing', async () => {
    const w = await world(db.sql);
    await recordHeartbeat(db.sql, w.machine.id as string, { running: 0 });
    expect(await outboxRows(db.sql)).toEqual([]);
    await db.sql`update machines set status = 'offline' where id = ${w.machine.id}`;
    const hb = await recordHeartbeat(db.sql, w.machine.id as string, { running: 0 });
    expect(hb!.previous).toBe('offline');
    expect(await outboxRows(db.sql)).toEqual([{ kind: 'machine-online', payload: { tenant_id: w.tenant.id, machine_id: w.machine.id } }]);
  });

  it('a queue that gains an active consumer records queue-ready; other changes do not', async () => {
    const w = await world(db.sql);
    const plain = await seedQueue(db.sql, w.tenant.id);
    const update = (patch: Record<string, unknown>) => writeCatalogEntity(db.sql, CLI_ACTOR, w.tenant.id,
      { change: 'update', resource: 'queue', fields: Object.keys(patch) }, (tx) => updateQueue(tx, w.tenant.id, plain.id as string, patch));
    await update({ description: 'x' });
    expect(await outboxRows(db.sql)).toEqual([]);
    await update({ consumer_process_id: w.proc.id });
    expect(await outboxRows(db.sql)).toEqual([{ kind: 'queue-ready', payload: { queue_id: plain.id, tenant_id: w.tenant.id } }]);
  });
});

describe('a trigger, a stop and an input answer publish their effects right after their commit', () => {
  it('each is published at once and its outbox row stays for the relay', async () => {
    const w = await world(db.sql);
    const { port, seen } = recorder();
    const deps = { sql: db.sql, atOnce: port };
    const job = await triggerJobByApi(deps, { tenantId: w.tenant.id, apiKeyId: w.keyId }, {
      rawProcessId: w.proc.id, body: () => ({ process_id: w.proc.id as string, machine_id: w.machine.id as string }),
    });
    await waitFor('the job published at once', async () => seen.jobs.some((j) => j.id === job.id), 5_000);
    expect(seen.jobs).toEqual([expect.objectContaining({ id: job.id, machine_id: w.machine.id, tenant_id: w.tenant.id })]);

    await startJob(db.sql, job.id as string, w.machine.id as string);
    await stopJob(deps, w.tenant.id, job.id as string);
    await waitFor('the stop published at once', async () => seen.stops.includes(job.id as string), 5_000);

    const asking = await seedJob(db.sql, w.tenant.id, { process_id: w.proc.id as string, machine_id: w.machine.id as string, status: 'running' });
    await db.sql`update jobs set status = 'waiting_input', pending_input_prompt = '¿Aprobar?', pending_input_options = ${db.sql.json({ choices: ['sí', 'no'] })} where id = ${asking.id}`;
    await answerJobInput(deps, w.tenant.id, asking.id as string, () => ({ value: 'sí' }), CLI_ACTOR);
    await waitFor('the answer published at once', async () => seen.inputs.includes(asking.id as string), 5_000);

    // the relay publishes every one again: the outbox is still the safety net
    const relay = recorder();
    await drainOutbox(db.sql, relay.port);
    expect(relay.seen.jobs.map((j) => j.id)).toEqual([job.id]);
    expect(relay.seen.stops).toEqual([job.id]);
    expect(relay.seen.inputs).toEqual([asking.id]);
  });

  it('nothing of a transaction that rolls back, nor of a savepoint that rolls back, is published at once', async () => {
    const { port, seen } = recorder();
    const queueId = '00000000-0000-0000-0000-000000000001';
    await expect(inTransactionPublishingAtOnce({ sql: db.sql, atOnce: port }, async (tx) => {
      await recordEffect(tx, { kind: 'items-failed', queue_id: queueId });
      await tx`select 1/0`;
    })).rejects.toThrow();
    await inTransactionPublishingAtOnce({ sql: db.sql, atOnce: port }, async (tx) => {
      await tx.savepoint(async (sp) => {
        await recordEffect(sp, { kind: 'items-failed', queue_id: queueId });
        await sp`select 1/0`;
      }).catch(() => undefined);
      await recordEffect(tx, { kind: 'queue-ready', queue_id: queueId, tenant_id: queueId });
    });
    await waitFor('the committed effect published at once', async () => seen.ready.length === 1, 5_000);
    expect(seen.failed).toEqual([]);
    expect((await outboxRows(db.sql)).map((r) => r.kind)).toEqual(['queue-ready']);
  });

  it('an add nudges its queue at once, at most once a window in a process; its outbox row stays for the relay', async () => {
    const w = await world(db.sql);
    const other = await seedQueue(db.sql, w.tenant.id);
    const nudges: Array<{ id: string; at: number }> = [];
    const deps = { sql: db.sql, atOnce: { ...noopDispatch, queueItemsReady: async (q: { id: string }) => void nudges.push({ id: q.id, at: performance.now() }) } };
    const mine = () => nudges.filter((n) => n.id === w.queue.id);
    const ref = { id: w.queue.id as string, tenant_id: w.tenant.id, name: w.queue.name as string };
    await addItemToQueueNamed(deps, w.tenant.id, w.queue.name as string, { data: { i: 0 } });
    // the nudge leaves when the add answers (the port hears it in the same turn)
    expect(mine()).toHaveLength(1);
    const from = performance.now();
    for (let i = 1; i <= 6; i++) {
      if (i % 2) await addItemToQueueNamed(deps, w.tenant.id, w.queue.name as string, { data: { i } });
      else await addItemsBulk(deps, ref, { items: [{ i }, { i: -i }] });
    }
    const elapsed = performance.now() - from;
    // folded: never two of one queue within a window, so no more than the time allows
    const gaps = mine().slice(1).map((n, k) => n.at - mine()[k]!.at);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(NUDGE_WINDOW_MS - 1);
    expect(mine().length).toBeLessThanOrEqual(2 + Math.floor(elapsed / NUDGE_WINDOW_MS));
    // another queue has a window of its own; a refused add nudges nothing
    await addItemsBulk(deps, { id: other.id as string, tenant_id: w.tenant.id, name: other.name as string }, { items: [{ i: 7 }] });
    expect(nudges.at(-1)!.id).toBe(other.id);
    const before = nudges.length;
    await expect(addItemToQueueNamed(deps, w.tenant.id, 'no-such-queue', { data: {} })).rejects.toThrow();
    expect(nudges).toHaveLength(before);
    // the relay still has each statement's own nudge
    expect((await outboxRows(db.sql)).map((r) => r.payload.queue_id)).toEqual([...Array(7).fill(w.queue.id), other.id]);
    // after the window, the next add nudges again
    const seenBefore = mine().length;
    await waitFor('a nudge after the window', async () => {
      await addItemToQueueNamed(deps, w.tenant.id, w.queue.name as string, { data: { again: true } });
      return mine().length > seenBefore;
    }, 5_000, NUDGE_WINDOW_MS);
  });

  it('the consumer jobs a queue needs go to their machines at once; their outbox row stays for the relay', async () => {
    const w = await world(db.sql);
    await db.sql`update machines set status = 'online' where id = ${w.machine.id}`;
    await addItemsBulk({ sql: db.sql }, { id: w.queue.id as string, tenant_id: w.tenant.id, name: w.queue.name as string }, { items: [{ i: 1 }, { i: 2 }, { i: 3 }] });
    const { port, seen } = recorder();
    const created = await startQueueConsumers(db.sql, w.queue.id as string, { atOnce: port });
    expect(created).toHaveLength(2);
    await waitFor('the consumer jobs published at once', async () => seen.jobs.length === 2, 5_000);
    expect(seen.jobs.map((j) => j.id).sort()).toEqual(created.map((j) => j.id).sort());
    const relay = recorder();
    await drainOutbox(db.sql, relay.port);
    expect(relay.seen.jobs.map((j) => j.id).sort()).toEqual(created.map((j) => j.id).sort());
  });

  it('a publish that fails leaves the effect to the relay and does not fail the command', async () => {
    const w = await world(db.sql);
    const failing: DispatchPort = { ...noopDispatch, jobsCreated: async () => { throw new Error('redis away'); } };
    const job = await triggerJobByApi({ sql: db.sql, atOnce: failing, logger }, { tenantId: w.tenant.id, apiKeyId: w.keyId }, {
      rawProcessId: w.proc.id, body: () => ({ process_id: w.proc.id as string, machine_id: w.machine.id as string }),
    });
    const { port, seen } = recorder();
    expect(await drainOutbox(db.sql, port)).toBe(1);
    expect(seen.jobs.map((j) => j.id)).toEqual([job.id]);
  });
});

describe('the relay', () => {
  const effect = (i: number): Effect => ({ kind: 'job-stop', job_id: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, machine_id: 'm' });

  it('publishes and deletes; a publish that fails keeps every row for the next pass', async () => {
    await db.sql.begin((tx) => Promise.all([1, 2, 3].map((i) => recordEffect(tx, effect(i)))));
    const failing: DispatchPort = { ...noopDispatch, jobStopRequested: async () => { throw new Error('redis down'); } };
    await expect(relayOnce(db.sql, failing)).rejects.toThrow('redis down');
    expect(await outboxRows(db.sql)).toHaveLength(3);
    const { port, seen } = recorder();
    expect(await relayOnce(db.sql, port)).toHaveLength(3);
    expect(seen.stops.sort()).toEqual([1, 2, 3].map((i) => (effect(i) as { job_id: string }).job_id));
    expect(await outboxRows(db.sql)).toEqual([]);
  });

  it('several relays at once publish each effect exactly once', async () => {
    for (let i = 0; i < 20; i++) await recordEffect(db.sql, effect(i));
    const { port, seen } = recorder();
    // Each relay's first publish waits until all three hold a pass of their own, so they are
    // certain to interleave over the same rows however the host schedules them.
    const relays = 3;
    let arrived = 0;
    let release!: () => void;
    const together = new Promise<void>((r) => { release = r; });
    const relayPort = (): DispatchPort => {
      let first = true;
      return {
        ...port,
        jobStopRequested: async (j) => {
          if (first) {
            first = false;
            if (++arrived === relays) release();
            let timer: NodeJS.Timeout | undefined;
            await Promise.race([together, new Promise((r) => { timer = setTimeout(r, 10_000); })]);
            clearTimeout(timer);
          }
          await port.jobStopRequested(j);
        },
      };
    };
    const others = [createSql(db.ctx.config.databaseUrl, { max: 2 }), createSql(db.ctx.config.databaseUrl, { max: 2 })];
    try {
      const drained = await Promise.all([db.sql, ...others].map((sql) => drainOutbox(sql, relayPort(), { limit: 3 })));
      expect(arrived).toBe(relays);
      expect(drained.reduce((a, b) => a + b, 0)).toBe(20);
      expect(drained.every((n) => n > 0)).toBe(true);
    } finally {
      await Promise.all(others.map((s) => s.end()));
    }
    expect(seen.stops).toHaveLength(20);
    expect(new Set(seen.stops).size).toBe(20);
  });

  it('wakes on the commit (LISTEN/NOTIFY) and folds a burst of one queue\'s nudges without losing the last', async () => {
    const w = await world(db.sql);
    const { port, seen } = recorder();
    // a poll far away: only the notification can wake it in time
    const relay = createOutboxRelay({ sql: db.sql, port, logger, pollMs: 60_000, nudgeWindowMs: 300 });
    await relay.start();
    try {
      await recordEffect(db.sql, { kind: 'queue-ready', queue_id: w.queue.id as string, tenant_id: w.tenant.id });
      await waitUntil(() => seen.ready.length === 1);
      // a burst within the window: kept in the table, published once when the window ends
      for (let i = 0; i < 5; i++) await recordEffect(db.sql, { kind: 'queue-ready', queue_id: w.queue.id as string, tenant_id: w.tenant.id });
      await recordEffect(db.sql, effect(1));
      await waitUntil(() => seen.stops.length === 1);
      expect(seen.ready).toHaveLength(1);
      expect((await outboxRows(db.sql)).filter((r) => r.kind === 'queue-ready')).toHaveLength(5);
      await waitUntil(async () => (await outboxRows(db.sql)).length === 0);
      expect(seen.ready).toEqual([w.queue.id, w.queue.id]);
    } finally {
      await relay.close();
    }
  });
});

async function waitUntil(probe: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
