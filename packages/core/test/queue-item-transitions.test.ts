import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createSql, type Sql } from '@svc/core';
import { MAX_TAKE } from '@svc/core/machine-protocol';
import {
  QUEUE_ITEM_TRANSITIONS, applyItemRetryPolicy, approveQueueItem, canTransitionItem, compareTakeOrder,
  failItemsOfJobs, failOrphanedItems, redriveDeadLetterItems, rejectQueueItem, releaseQueueItems,
  releaseUnknownClaims, retryEndedItems, settleAndClaimItems, settleAndClaimItemsBatch,
} from '@svc/core/internals';
import { createTestContext, seedMachine, seedProcess, seedQueue, seedTenant, type TestContext, recordStatements } from '@svc/testing';

/**
 * Every public queue item transition through the guarded statements of queue-items/transitions.ts,
 * take.ts, retry.ts and review.ts, on a real Postgres: the take order, postpone, fencing, the
 * retry policy, review and re-drive.
 */
let ctx: TestContext;
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
});

/** A consumer job row, running under attempt 1 (items are taken only for a running job). */
async function ensureRunningJob(jobId: string): Promise<void> {
  await sql`insert into jobs (id, tenant_id, process_id, machine_id, status, attempt, started_at, source)
            values (${jobId}, ${tenantId}, ${processId}, ${machineId}, 'running', 1, now(), 'queue')
            on conflict (id) do nothing`;
}
afterAll(() => ctx.close());

/** CLAIM_FLOOR=on runs these takes past the claim floors (docs/decisions/claim-floor.md). */
const takeOpts = () => ({ floor: ctx.config.claimFloor === 'on' });

async function newQueue(maxRetries = 3) {
  return seedQueue(sql, tenantId, { max_retries: maxRetries });
}

async function addItem(queueId: string, f: { priority?: number; deadline?: string | null; postpone?: string | null; ref?: string } = {}) {
  const [row] = await sql`
    insert into queue_item_records (tenant_id, queue_id, priority, deadline, postpone, data, reference)
    values (${tenantId}, ${queueId}, ${f.priority ?? 3}, ${f.deadline ?? null}, ${f.postpone ?? null}, ${sql.json({})}, ${f.ref ?? null})
    returning *`;
  return row!;
}

async function item(id: string) {
  const [row] = await sql`select * from queue_item_records where id = ${id}`;
  return row!;
}

async function take(queueId: string, jobId: string, n = 1, outcomes: any[] = []) {
  await ensureRunningJob(jobId);
  return settleAndClaimItems(sql, { queueId, jobId, jobAttempt: 1, machineId: randomUUID(), outcomes, take: n }, takeOpts());
}

describe('the transition table', () => {
  it('holds exactly the public transitions plus the engine-internal release and the operator re-drive and retries', () => {
    const pairs = Object.values(QUEUE_ITEM_TRANSITIONS).map((t) => `${t.from}→${t.to}`).sort();
    // re-drive and retry share their statuses and differ in retry_count (reset / kept); the retry
    // policy and an operator's retry of a business failure share theirs and differ in who does it
    expect(pairs).toEqual([
      'dead_letter→new', 'dead_letter→new', 'failed→dead_letter', 'failed→new', 'failed→new', 'in_progress→completed', 'in_progress→failed',
      'in_progress→new', 'in_progress→pending_review', 'new→in_progress', 'pending_review→failed', 'pending_review→new',
    ].sort());
    expect(canTransitionItem('completed', 'new')).toBe(false);
    expect(canTransitionItem('dead_letter', 'in_progress')).toBe(false);
  });

  it('every status written by an UPDATE of the item statements comes from the table', () => {
    const literalStatus = /status\s*=\s*'(new|in_progress|pending_review|completed|failed|dead_letter)'/g;
    for (const file of ['transitions.ts', 'take.ts', 'retry.ts', 'review.ts']) {
      const src = readFileSync(path.join(__dirname, '../src/queue-items', file), 'utf8');
      expect([file, src.match(literalStatus)]).toEqual([file, null]);
    }
  });
});

describe('statements sent for the transitions', () => {
  const STATUSES = new Set(['new', 'in_progress', 'pending_review', 'completed', 'failed', 'dead_letter']);

  const record = (fn: () => Promise<unknown>) => recordStatements(sql, fn);

  it('write the statuses into the SQL text, never as bound values, so every plan can use the partial indexes', async () => {
    const q = await newQueue(1);
    for (let i = 0; i < 5; i++) await addItem(q.id);
    const job = randomUUID();
    const dead = randomUUID();
    await ensureRunningJob(job);
    await ensureRunningJob(dead);
    const statements = await record(async () => {
      const { claimed } = await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take: 4 }, takeOpts());
      const [a, b, c, d] = claimed;
      await settleAndClaimItems(sql, {
        queueId: q.id, jobId: job, jobAttempt: 1, machineId, take: 0,
        outcomes: [
          { id: a!.id, attempt: a!.attempt, status: 'completed', result: {} },
          { id: b!.id, attempt: b!.attempt, status: 'pending_review', result: {} },
          { id: c!.id, attempt: c!.attempt, status: 'failed', error_message: 'x' },
        ],
      }, takeOpts());
      await releaseQueueItems(sql, job, [{ id: d!.id, attempt: d!.attempt }]);
      await settleAndClaimItems(sql, { queueId: q.id, jobId: dead, jobAttempt: 1, machineId, outcomes: [], take: 1 }, takeOpts());
      await failItemsOfJobs(sql, [dead], 'x');
      await failOrphanedItems(sql, 'x');
      await rejectQueueItem(sql, { tenantId, queueId: q.id, itemId: b!.id, reviewer: 'r' });
      await approveQueueItem(sql, { tenantId, queueId: q.id, itemId: b!.id, reviewer: 'r' });
      await applyItemRetryPolicy(sql, q.id);
      await applyItemRetryPolicy(sql, null);
      await redriveDeadLetterItems(sql, { tenantId, queueId: q.id, itemIds: null });
    });
    const updates = statements.filter((s) => /update queue_items/.test(s.text));
    expect(updates.length).toBeGreaterThanOrEqual(8);
    for (const s of updates) {
      expect({ text: s.text, boundStatuses: s.params.filter((p) => typeof p === 'string' && STATUSES.has(p)) })
        .toEqual({ text: s.text, boundStatuses: [] });
      expect(s.text).toMatch(/status = '(new|in_progress|pending_review|failed|dead_letter)'/);
    }
  });
});

describe('the round trip of a consumer', () => {
  it('is planned once per connection: its prepared statement switches to a generic plan that walks the ready index and settles by primary key', async () => {
    const q = await newQueue();
    for (let i = 0; i < 40; i++) await addItem(q.id);
    // a table of some size, as the planner sees it: on a handful of rows any plan is cheap
    const other = await newQueue();
    await sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${other.id}, '{}'::jsonb from generate_series(1, 20000)`;
    await sql`analyze queue_items`;
    const job = randomUUID();
    await ensureRunningJob(job);
    // one connection, so that every round trip reuses the same prepared statement; auto_explain
    // sends each statement's plan back as a notice
    const explained: string[] = [];
    const one = createSql(ctx.databaseUrl, { max: 1, onnotice: (n: { message?: string }) => { if (n.message?.includes('settled as')) explained.push(n.message); } } as never);
    try {
      await one`load 'auto_explain'`;
      await one`select set_config('auto_explain.log_min_duration', '0', false), set_config('auto_explain.log_level', 'notice', false)`;
      let held: Array<{ id: string; attempt: number }> = [];
      for (let i = 0; i < 10; i++) {
        const res = await settleAndClaimItems(one, {
          queueId: q.id, jobId: job, jobAttempt: 1, machineId, take: 4,
          outcomes: held.map((c) => ({ id: c.id, attempt: c.attempt, status: 'completed' as const, result: {} })),
        }, takeOpts());
        expect(res.claimed.length).toBe(4);
        held = res.claimed;
      }
      // with the LIMIT sent as a parameter, Postgres planned every execution afresh (custom plans only)
      const [plans] = await one<Array<{ generic_plans: number; custom_plans: number }>>`
        select generic_plans::int, custom_plans::int from pg_prepared_statements where statement like '%for update skip locked%'`;
      expect(explained.length).toBeGreaterThanOrEqual(10);
      expect(plans!.generic_plans).toBeGreaterThan(0);
      expect(plans!.custom_plans).toBeLessThanOrEqual(5);
      // the settle looks its items up by primary key: on a narrow table of 20,000 rows, outcomes
      // counted as a hundred rows made reading the whole table look cheaper
      const generic = explained.at(-1)!;
      expect(generic).toMatch(/Index Scan using queue_items_pkey on queue_items qi\b/);
      expect(generic).not.toMatch(/Seq Scan on queue_items/);
    } finally {
      await one.end();
    }
  });

  it('refuses a take that is not a whole number from 0 to MAX_TAKE (it is written into the SQL text)', async () => {
    const q = await newQueue();
    const job = randomUUID();
    await ensureRunningJob(job);
    for (const take of [-1, 1.5, MAX_TAKE + 1, Number.NaN, '4; drop table queue_items' as unknown as number]) {
      await expect(settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take }, takeOpts()))
        .rejects.toThrow(/Illegal take/);
    }
    await addItem(q.id);
    expect((await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take: MAX_TAKE }, takeOpts())).claimed).toHaveLength(1);
  });
});

describe('take order', () => {
  it('takes a mixed batch in exactly priority desc, deadline first and nearest, then FIFO', async () => {
    const q = await newQueue();
    const soon = new Date(Date.now() + 60_000).toISOString();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const a = await addItem(q.id, { priority: 3, ref: 'p3-nodeadline-1' });
    const b = await addItem(q.id, { priority: 3, deadline: later, ref: 'p3-later' });
    const c = await addItem(q.id, { priority: 5, ref: 'p5-nodeadline' });
    const d = await addItem(q.id, { priority: 3, deadline: soon, ref: 'p3-soon' });
    const e = await addItem(q.id, { priority: 1, deadline: soon, ref: 'p1-soon' });
    const f = await addItem(q.id, { priority: 3, ref: 'p3-nodeadline-2' });
    const g = await addItem(q.id, { priority: 5, deadline: later, ref: 'p5-later' });
    const expected = [g, c, d, b, a, f, e].map((r) => r.reference);

    const job = randomUUID();
    const taken: string[] = [];
    for (;;) {
      const res = await take(q.id, job);
      if (res.claimed.length === 0) break;
      taken.push(res.claimed[0]!.reference!);
    }
    expect(taken).toEqual(expected);

    // a batch take returns the same order
    const q2 = await newQueue();
    const rows = [];
    for (const spec of [{ priority: 3 }, { priority: 3, deadline: later }, { priority: 5 }, { priority: 3, deadline: soon }, { priority: 1, deadline: soon }]) {
      rows.push(await addItem(q2.id, spec));
    }
    const batch = await take(q2.id, randomUUID(), 10);
    expect(batch.claimed.map((r) => r.id)).toEqual([rows[2], rows[3], rows[1], rows[0], rows[4]].map((r) => r!.id));
  });

  it('keeps FIFO among items created in the same millisecond (microsecond created_at)', async () => {
    const q = await newQueue();
    await sql`insert into queue_item_records (tenant_id, queue_id, data, reference) select ${tenantId}, ${q.id}, '{}'::jsonb, 'n' || g from generate_series(1, 50) g`;
    const res = await take(q.id, randomUUID(), 50);
    const created = await sql`select id from queue_items where queue_id = ${q.id} order by created_at, id`;
    expect(res.claimed.map((r) => r.id)).toEqual(created.map((r) => r.id));
  });

  it('compareTakeOrder is the same rule as the SQL', () => {
    const k = (id: string, priority: number, deadline_us: number | null, created_us: number) => ({ id, priority, deadline_us, created_us });
    const sorted = [k('a', 3, null, 1), k('b', 3, 50, 2), k('c', 5, null, 3), k('d', 3, 10, 4), k('e', 3, null, 0)].sort(compareTakeOrder);
    expect(sorted.map((x) => x.id)).toEqual(['c', 'd', 'b', 'e', 'a']);
  });

  it('honours postpone: an item is not taken before its postpone time passes', async () => {
    const q = await newQueue();
    // an hour ahead: still postponed at the takes below however slow the host is
    const postponed = await addItem(q.id, { priority: 5, postpone: new Date(Date.now() + 3_600_000).toISOString() });
    const ready = await addItem(q.id, { priority: 1 });
    const first = await take(q.id, randomUUID(), 10);
    expect(first.claimed.map((r) => r.id)).toEqual([ready.id]);
    expect((await take(q.id, randomUUID(), 10)).claimed).toEqual([]);
    // its postpone time passes (the database clock is the one the take reads)
    await sql`update queue_items set postpone = now() - interval '1 millisecond' where id = ${postponed.id}`;
    const second = await take(q.id, randomUUID(), 10);
    expect(second.claimed.map((r) => r.id)).toEqual([postponed.id]);
  });

  it('never hands one item to two concurrent consumers', async () => {
    const q = await newQueue();
    await sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${q.id}, '{}'::jsonb from generate_series(1, 200)`;
    const jobs = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const got = await Promise.all(jobs.map(async (job) => {
      const ids: string[] = [];
      for (;;) {
        const res = await take(q.id, job, 3);
        if (!res.claimed.length) return ids;
        ids.push(...res.claimed.map((r) => r.id));
      }
    }));
    const all = got.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all).size).toBe(200);
  });
});

describe('processing outcomes', () => {
  it('new → in_progress records the holder, the machine and a new fencing token', async () => {
    const q = await newQueue();
    const it0 = await addItem(q.id);
    const job = randomUUID();
    const machine = randomUUID();
    await ensureRunningJob(job);
    const res = await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId: machine, outcomes: [], take: 1 }, takeOpts());
    const row = await item(it0.id);
    expect(row.status).toBe('in_progress');
    expect(row.job_id).toBe(job);
    expect(row.processed_by).toBe(machine);
    expect(row.attempt).toBe(it0.attempt + 1);
    expect(res.claimed[0]!.attempt).toBe(row.attempt);
  });

  it('in_progress → completed sets result and processed_at (keeping the last failure message)', async () => {
    const q = await newQueue();
    const it0 = await addItem(q.id);
    const job = randomUUID();
    const [c] = (await take(q.id, job)).claimed;
    await sql`update queue_items set error_message = 'old' where id = ${it0.id}`;
    const res = await take(q.id, job, 0, [{ id: c!.id, attempt: c!.attempt, status: 'completed', result: { total: 10 } }]);
    expect(res.settled).toEqual([{ id: it0.id, status: 'completed' }]);
    const row = await item(it0.id);
    expect(row.status).toBe('completed');
    expect(row.result).toEqual({ total: 10 });
    expect(row.processed_at).toBeInstanceOf(Date);
    expect(row.error_message).toBe('old');
  });

  it('stores results and failure messages exactly, whatever characters they hold (they travel as array elements)', async () => {
    const q = await newQueue();
    const [a, b] = [await addItem(q.id), await addItem(q.id)];
    const job = randomUUID();
    const held = (await take(q.id, job, 2)).claimed;
    const awkward = 'a "quoted" {braced}, comma\\back\\slash \'tick\' NULL null ñ €  \t\n';
    const result = { text: awkward, nested: { list: [awkward, null, 1.5, true], empty: {} }, 'NULL': null };
    const byId = new Map(held.map((c) => [c.id, c]));
    await take(q.id, job, 0, [
      { id: a.id, attempt: byId.get(a.id)!.attempt, status: 'completed', result },
      { id: b.id, attempt: byId.get(b.id)!.attempt, status: 'failed', error_message: awkward },
    ]);
    expect((await item(a.id)).result).toEqual(result);
    expect((await item(b.id)).error_message).toBe(awkward);
  });

  it('in_progress → pending_review keeps the robot result for the reviewer', async () => {
    const q = await newQueue();
    const it0 = await addItem(q.id);
    const job = randomUUID();
    const [c] = (await take(q.id, job)).claimed;
    await take(q.id, job, 0, [{ id: c!.id, attempt: c!.attempt, status: 'pending_review', result: { doubt: true } }]);
    const row = await item(it0.id);
    expect(row.status).toBe('pending_review');
    expect(row.result).toEqual({ doubt: true });
  });

  it('in_progress → failed records error_message; retry_count counts retries', async () => {
    const q = await newQueue();
    const it0 = await addItem(q.id);
    const job = randomUUID();
    const [c] = (await take(q.id, job)).claimed;
    await take(q.id, job, 0, [{ id: c!.id, attempt: c!.attempt, status: 'failed', error_message: 'Timeout del ERP' }]);
    const row = await item(it0.id);
    expect(row.status).toBe('failed');
    expect(row.error_message).toBe('Timeout del ERP');
    expect(row.retry_count).toBe(0);
    expect(row.result).toBeNull();
  });

  it('refuses the result of a stale holder (fencing token)', async () => {
    const q = await newQueue();
    const it0 = await addItem(q.id);
    const oldJob = randomUUID();
    const [old] = (await take(q.id, oldJob)).claimed;
    // the engine gives the old holder up, the item is retried and taken again
    await failItemsOfJobs(sql, [oldJob], 'robot lost');
    await applyItemRetryPolicy(sql, q.id);
    const newJob = randomUUID();
    const [fresh] = (await take(q.id, newJob)).claimed;
    expect(fresh!.attempt).toBe(old!.attempt + 1);
    // the old holder reports late: refused, by attempt and by holder
    const late = await take(q.id, oldJob, 0, [{ id: old!.id, attempt: old!.attempt, status: 'completed', result: { stale: true } }]);
    expect(late.settled).toEqual([]);
    const lateWithNewToken = await take(q.id, oldJob, 0, [{ id: old!.id, attempt: fresh!.attempt, status: 'completed' }]);
    expect(lateWithNewToken.settled).toEqual([]);
    expect((await item(it0.id)).status).toBe('in_progress');
    // the current holder's result is accepted once; a duplicate changes nothing
    const ok = await take(q.id, newJob, 0, [{ id: fresh!.id, attempt: fresh!.attempt, status: 'completed', result: { ok: 1 } }]);
    expect(ok.settled).toHaveLength(1);
    const dup = await take(q.id, newJob, 0, [{ id: fresh!.id, attempt: fresh!.attempt, status: 'failed', error_message: 'x' }]);
    expect(dup.settled).toEqual([]);
    const row = await item(it0.id);
    expect(row.status).toBe('completed');
    expect(row.result).toEqual({ ok: 1 });
  });

  it('accepts again an outcome sent again after its answer was lost, and nothing else', async () => {
    const q = await newQueue();
    const a = await addItem(q.id);
    const job = randomUUID();
    const [held] = (await take(q.id, job)).claimed;
    const outcome = { id: held!.id, attempt: held!.attempt, status: 'completed' as const, result: { ok: 1 } };
    expect((await take(q.id, job, 0, [outcome])).settled).toEqual([{ id: a.id, status: 'completed' }]);
    // the consumer never heard that answer and sends the same outcome again
    expect((await take(q.id, job, 0, [outcome])).settled).toEqual([{ id: a.id, status: 'completed' }]);
    expect(await item(a.id)).toMatchObject({ status: 'completed', result: { ok: 1 }, attempt: held!.attempt });
    // another outcome for the settled item, or the same one from another holder, is still refused
    expect((await take(q.id, job, 0, [{ ...outcome, status: 'failed', error_message: 'x' }])).settled).toEqual([]);
    expect((await take(q.id, randomUUID(), 0, [outcome])).settled).toEqual([]);
  });

  it('hands back what a take with a lost answer gave the consumer, keeping what it holds', async () => {
    const q = await newQueue();
    const [a, b, c] = [await addItem(q.id), await addItem(q.id), await addItem(q.id)];
    const job = randomUUID();
    const [known] = (await take(q.id, job)).claimed;
    // a second take whose answer never arrived: the consumer does not know these two
    await take(q.id, job, 2);
    expect(await releaseUnknownClaims(sql, job, [known!.id])).toBe(2);
    expect(await item(a.id)).toMatchObject({ status: 'in_progress', job_id: job });
    for (const id of [b.id, c.id]) expect(await item(id)).toMatchObject({ status: 'new', job_id: null, retry_count: 0 });
    // taken again, the fencing token moves on
    const again = (await take(q.id, job, 2)).claimed;
    expect(again.map((i) => i.id).sort()).toEqual([b.id, c.id].sort());
    expect(await releaseUnknownClaims(sql, job, [known!.id, ...again.map((i) => i.id)])).toBe(0);
  });

  it('takes nothing for a consumer job that is no longer running under its attempt', async () => {
    const q = await newQueue();
    await addItem(q.id);
    const job = randomUUID();
    await ensureRunningJob(job);
    const stale = await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 2, machineId: randomUUID(), outcomes: [], take: 1 }, takeOpts());
    expect(stale.claimed).toEqual([]);
    await sql`update jobs set status = 'failed' where id = ${job}`;
    const ended = await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId: randomUUID(), outcomes: [], take: 1 }, takeOpts());
    expect(ended.claimed).toEqual([]);
  });

  it('refuses an outcome that is not a transition from in_progress', async () => {
    await expect(settleAndClaimItems(sql, { queueId: randomUUID(), jobId: randomUUID(), jobAttempt: 1, machineId: randomUUID(), outcomes: [{ id: randomUUID(), attempt: 1, status: 'new' as never }], take: 0 }, takeOpts()))
      .rejects.toThrow(/Illegal item outcome/);
  });

  it('in_progress → new (release) for items taken but not started, retry_count unchanged', async () => {
    const q = await newQueue();
    const a = await addItem(q.id);
    const b = await addItem(q.id);
    const job = randomUUID();
    const { claimed } = await take(q.id, job, 2);
    expect(await releaseQueueItems(sql, job, claimed)).toBe(2);
    for (const id of [a.id, b.id]) {
      const row = await item(id);
      expect(row.status).toBe('new');
      expect(row.retry_count).toBe(0);
      expect(row.job_id).toBeNull();
    }
    expect(await releaseQueueItems(sql, job, claimed)).toBe(0);
  });
});

describe('several consumers\' round trips as one statement', () => {
  it('gives each request of one queue its own items, earlier requests the earlier ones, in the take order', async () => {
    const q = await newQueue();
    const items = [];
    for (let i = 0; i < 6; i++) items.push(await addItem(q.id, { priority: i < 2 ? 5 : 3 }));
    const [j1, j2, j3] = [randomUUID(), randomUUID(), randomUUID()];
    for (const j of [j1, j2, j3]) await ensureRunningJob(j);
    const req = (jobId: string, take: number) => ({ queueId: q.id, jobId, jobAttempt: 1, machineId: machineId, outcomes: [], take });
    const [r1, r2, r3] = await settleAndClaimItemsBatch(sql, [req(j1, 2), req(j2, 3), req(j3, 3)], takeOpts());
    expect(r1!.claimed.map((c) => c.id)).toEqual([items[0]!.id, items[1]!.id]);
    expect(r2!.claimed.map((c) => c.id)).toEqual([items[2]!.id, items[3]!.id, items[4]!.id]);
    // fewer ready items than asked: the last request gets what is left
    expect(r3!.claimed.map((c) => c.id)).toEqual([items[5]!.id]);
    for (const [r, j] of [[r1, j1], [r2, j2], [r3, j3]] as const) {
      for (const c of r!.claimed) expect(await item(c.id)).toMatchObject({ status: 'in_progress', job_id: j, attempt: c.attempt, processed_by: machineId });
    }
  });

  it('settles each request\'s outcomes under its own fence, and takes only for running jobs of unpaused queues', async () => {
    const [q1, q2, paused] = [await newQueue(), await newQueue(), await newQueue()];
    const [a, b] = [await addItem(q1.id), await addItem(q2.id)];
    await addItem(q1.id);
    await addItem(q2.id);
    await addItem(paused.id);
    await sql`update queues set is_paused = true where id = ${paused.id}`;
    const [j1, j2, gone, jp] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const [h1] = (await take(q1.id, j1)).claimed;
    const [h2] = (await take(q2.id, j2)).claimed;
    await ensureRunningJob(gone);
    await sql`update jobs set status = 'failed' where id = ${gone}`;
    await ensureRunningJob(jp);
    const results = await settleAndClaimItemsBatch(sql, [
      { queueId: q1.id, jobId: j1, jobAttempt: 1, machineId, take: 1, outcomes: [{ id: h1!.id, attempt: h1!.attempt, status: 'completed', result: { n: 1 } }] },
      // j2's item settled by another job's request: refused; its stale attempt too
      { queueId: q2.id, jobId: j1, jobAttempt: 1, machineId, take: 0, outcomes: [{ id: h2!.id, attempt: h2!.attempt, status: 'completed' }] },
      { queueId: q2.id, jobId: j2, jobAttempt: 1, machineId, take: 1, outcomes: [{ id: h2!.id, attempt: h2!.attempt + 1, status: 'failed', error_message: 'x' }] },
      { queueId: q2.id, jobId: gone, jobAttempt: 1, machineId, take: 5, outcomes: [] },
      { queueId: paused.id, jobId: jp, jobAttempt: 1, machineId, take: 5, outcomes: [] },
    ], takeOpts());
    expect(results.map((r) => r.settled)).toEqual([[{ id: a.id, status: 'completed' }], [], [], [], []]);
    expect(results.map((r) => r.claimed.length)).toEqual([1, 0, 1, 0, 0]);
    expect(await item(a.id)).toMatchObject({ status: 'completed', result: { n: 1 } });
    expect(await item(b.id)).toMatchObject({ status: 'in_progress', job_id: j2 });
  });

  it('answers like the requests one by one would have', async () => {
    const q = await newQueue();
    for (let i = 0; i < 4; i++) await addItem(q.id);
    const [j1, j2] = [randomUUID(), randomUUID()];
    const [c1] = (await take(q.id, j1)).claimed;
    await ensureRunningJob(j2);
    const [batched] = await settleAndClaimItemsBatch(sql, [
      { queueId: q.id, jobId: j1, jobAttempt: 1, machineId, take: 2, outcomes: [{ id: c1!.id, attempt: c1!.attempt, status: 'pending_review', result: { why: 'x' } }] },
    ], takeOpts());
    expect(batched!.settled).toEqual([{ id: c1!.id, status: 'pending_review' }]);
    const alone = await take(q.id, j2, 2);
    expect(alone.claimed).toHaveLength(1);
    expect(Object.keys(batched!.claimed[0]!).sort()).toEqual(Object.keys(alone.claimed[0]!).sort());
    await expect(settleAndClaimItemsBatch(sql, [{ queueId: q.id, jobId: j1, jobAttempt: 1, machineId, take: MAX_TAKE + 1, outcomes: [] }], takeOpts())).rejects.toThrow(/Illegal take/);
  });
});

describe('retry policy', () => {
  async function failOnce(queueId: string) {
    const job = randomUUID();
    const { claimed } = await take(queueId, job);
    await take(queueId, job, 0, [{ id: claimed[0]!.id, attempt: claimed[0]!.attempt, status: 'failed', error_message: 'fallo' }]);
    return claimed[0]!.id;
  }

  it('failed → new with retry_count + 1 while retry_count < max_retries, then dead_letter', async () => {
    const q = await newQueue(2);
    const it0 = await addItem(q.id);
    await failOnce(q.id);
    expect(await applyItemRetryPolicy(sql, q.id)).toMatchObject({ retried: 1, deadLettered: 0, readyQueues: [q.id] });
    expect(await item(it0.id)).toMatchObject({ status: 'new', retry_count: 1, error_message: 'fallo' });
    await failOnce(q.id);
    await applyItemRetryPolicy(sql, q.id);
    expect(await item(it0.id)).toMatchObject({ status: 'new', retry_count: 2 });
    await failOnce(q.id);
    expect(await applyItemRetryPolicy(sql, q.id)).toMatchObject({ retried: 0, deadLettered: 1, readyQueues: [] });
    expect(await item(it0.id)).toMatchObject({ status: 'dead_letter', retry_count: 2 });
    // dead_letter is never retried automatically
    await applyItemRetryPolicy(sql, null);
    expect((await item(it0.id)).status).toBe('dead_letter');
  });

  it('with max_retries 0 a failure goes straight to dead_letter', async () => {
    const q = await newQueue(0);
    const it0 = await addItem(q.id);
    await failOnce(q.id);
    await applyItemRetryPolicy(sql, null);
    expect(await item(it0.id)).toMatchObject({ status: 'dead_letter', retry_count: 0 });
  });

  it('fails the items of a dead holder, and the items whose job is no longer active', async () => {
    const q = await newQueue();
    const a = await addItem(q.id);
    const b = await addItem(q.id);
    const deadJob = randomUUID();
    await take(q.id, deadJob);
    expect(await failItemsOfJobs(sql, [deadJob], 'La máquina M1 dejó de responder')).toEqual([q.id]);
    expect(await item(a.id)).toMatchObject({ status: 'failed', error_message: 'La máquina M1 dejó de responder' });
    const endedJob = randomUUID();
    await take(q.id, endedJob);
    await sql`update jobs set status = 'completed' where id = ${endedJob}`; // its holder ended: an orphan
    expect(await failOrphanedItems(sql, 'huérfano')).toContain(q.id);
    expect(await item(b.id)).toMatchObject({ status: 'failed', error_message: 'huérfano' });
  });
});

describe('review and re-drive', () => {
  async function toReview(queueId: string) {
    const it0 = await addItem(queueId);
    const job = randomUUID();
    const { claimed } = await take(queueId, job);
    await take(queueId, job, 0, [{ id: claimed[0]!.id, attempt: claimed[0]!.attempt, status: 'pending_review', result: {} }]);
    return it0.id;
  }

  it('approve: pending_review → new with reviewed_by and reviewed_at', async () => {
    const q = await newQueue();
    const id = await toReview(q.id);
    expect(await approveQueueItem(sql, { tenantId, queueId: q.id, itemId: id, reviewer: 'ana@example.test' })).toMatchObject({ id, status: 'new' });
    const row = await item(id);
    expect(row).toMatchObject({ status: 'new', reviewed_by: 'ana@example.test' });
    expect(row.reviewed_at).toBeInstanceOf(Date);
    // a second decision finds nothing to review
    expect(await approveQueueItem(sql, { tenantId, queueId: q.id, itemId: id, reviewer: 'x' })).toBeNull();
    expect(await rejectQueueItem(sql, { tenantId, queueId: q.id, itemId: id, reviewer: 'x' })).toBeNull();
  });

  it('reject: pending_review → failed, a business failure the retry policy leaves alone', async () => {
    const q = await newQueue(1);
    const id = await toReview(q.id);
    expect(await rejectQueueItem(sql, { tenantId, queueId: q.id, itemId: id, reviewer: 'ana', reason: 'Importe incorrecto' }))
      .toMatchObject({ id, status: 'failed', exception_type: 'business' });
    expect(await item(id)).toMatchObject({ status: 'failed', reviewed_by: 'ana', error_message: 'Importe incorrecto', exception_type: 'business' });
    expect(await applyItemRetryPolicy(sql, q.id)).toEqual({ retried: 0, deadLettered: 0, readyQueues: [] });
    expect(await item(id)).toMatchObject({ status: 'failed', retry_count: 0 });
  });

  it('review decisions are scoped to the tenant and the queue', async () => {
    const q = await newQueue();
    const other = await newQueue();
    const id = await toReview(q.id);
    const otherTenant = (await seedTenant(sql)).id;
    expect(await approveQueueItem(sql, { tenantId: otherTenant, queueId: q.id, itemId: id, reviewer: 'x' })).toBeNull();
    expect(await approveQueueItem(sql, { tenantId, queueId: other.id, itemId: id, reviewer: 'x' })).toBeNull();
    expect((await item(id)).status).toBe('pending_review');
  });

  it('re-drive: dead_letter → new with a fresh retry_count, only dead-letter items', async () => {
    const q = await newQueue(0);
    const dead = await addItem(q.id);
    const job = randomUUID();
    const { claimed } = await take(q.id, job);
    await take(q.id, job, 0, [{ id: claimed[0]!.id, attempt: claimed[0]!.attempt, status: 'failed', error_message: 'x' }]);
    await applyItemRetryPolicy(sql, q.id);
    await sql`update queue_items set retry_count = 3 where id = ${dead.id}`;
    const fresh = await addItem(q.id);
    expect(await redriveDeadLetterItems(sql, { tenantId, queueId: q.id, itemIds: [dead.id, fresh.id] })).toBe(1);
    expect(await item(dead.id)).toMatchObject({ status: 'new', retry_count: 0 });
    expect(await redriveDeadLetterItems(sql, { tenantId, queueId: q.id, itemIds: null })).toBe(0);
  });
});

describe('business and application exceptions', () => {
  async function failOne(queueId: string, exception?: 'business' | 'application') {
    const job = randomUUID();
    const { claimed } = await take(queueId, job);
    const c = claimed[0]!;
    const { settled } = await take(queueId, job, 0, [{ id: c.id, attempt: c.attempt, status: 'failed', error_message: 'no', ...(exception ? { exception } : {}) }]);
    expect(settled).toEqual([{ id: c.id, status: 'failed' }]);
    return c.id;
  }

  async function counters(queueId: string) {
    return sql<Array<{ status: string; n: number; business: number; application: number }>>`
      select status, sum(n)::int as n, sum(business)::int as business, sum(application)::int as application
      from queue_item_counts where queue_id = ${queueId} group by status having sum(n) <> 0 or sum(business) <> 0 or sum(application) <> 0 order by status`;
  }

  it('a business failure stays failed with its retry_count, however often the policy runs; an application one is retried, then dead-lettered', async () => {
    const q = await newQueue(1);
    const business = await addItem(q.id, { priority: 5 });
    const application = await addItem(q.id, { priority: 1 });
    expect(await failOne(q.id, 'business')).toBe(business.id);
    expect(await failOne(q.id)).toBe(application.id);
    expect(await item(business.id)).toMatchObject({ status: 'failed', exception_type: 'business', retry_count: 0 });
    expect(await item(application.id)).toMatchObject({ status: 'failed', exception_type: 'application' });
    expect(await applyItemRetryPolicy(sql, q.id)).toMatchObject({ retried: 1, deadLettered: 0 });
    expect(await item(application.id)).toMatchObject({ status: 'new', retry_count: 1, exception_type: 'application' });
    expect(await failOne(q.id, 'application')).toBe(application.id);
    expect(await applyItemRetryPolicy(sql, q.id)).toMatchObject({ retried: 0, deadLettered: 1 });
    expect(await item(application.id)).toMatchObject({ status: 'dead_letter', exception_type: 'application' });
    expect(await item(business.id)).toMatchObject({ status: 'failed', exception_type: 'business', retry_count: 0 });
    // the counters count each kind apart, exactly
    expect(await counters(q.id)).toEqual([
      { status: 'dead_letter', n: 1, business: 0, application: 1 },
      { status: 'failed', n: 1, business: 1, application: 0 },
    ]);
  });

  it('a success after an application failure keeps the kind with the message; items whose holder died fail as application', async () => {
    const q = await newQueue(3);
    const it1 = await addItem(q.id);
    await failOne(q.id);
    await applyItemRetryPolicy(sql, q.id);
    const job = randomUUID();
    const { claimed } = await take(q.id, job);
    await take(q.id, job, 0, [{ id: claimed[0]!.id, attempt: claimed[0]!.attempt, status: 'completed', result: {} }]);
    expect(await item(it1.id)).toMatchObject({ status: 'completed', error_message: 'no', exception_type: 'application' });
    const it2 = await addItem(q.id);
    const dying = randomUUID();
    await take(q.id, dying);
    await failItemsOfJobs(sql, [dying], 'murió');
    expect(await item(it2.id)).toMatchObject({ status: 'failed', exception_type: 'application', error_message: 'murió' });
  });

  it('refuses a kind of failure on an outcome that is not a failure, or a kind that does not exist', async () => {
    const q = await newQueue();
    await addItem(q.id);
    const job = randomUUID();
    const { claimed } = await take(q.id, job);
    const c = claimed[0]!;
    await expect(take(q.id, job, 0, [{ id: c.id, attempt: c.attempt, status: 'completed', exception: 'business' }])).rejects.toThrow(/Illegal exception/);
    await expect(take(q.id, job, 0, [{ id: c.id, attempt: c.attempt, status: 'failed', exception: 'fatal' }])).rejects.toThrow(/Illegal exception/);
    expect(await item(c.id)).toMatchObject({ status: 'in_progress', exception_type: null });
  });

  it('an operator re-runs business failures only when asked; the retry of dead letters leaves them alone otherwise', async () => {
    const q = await newQueue(0);
    const business = await addItem(q.id, { priority: 5 });
    const dead = await addItem(q.id, { priority: 1 });
    await failOne(q.id, 'business');
    await failOne(q.id);
    await applyItemRetryPolicy(sql, q.id);
    const ids = [business.id, dead.id];
    expect(await retryEndedItems(sql, { tenantId, queueId: q.id, itemIds: ids, business: false })).toBe(1);
    expect(await item(business.id)).toMatchObject({ status: 'failed' });
    expect(await item(dead.id)).toMatchObject({ status: 'new' });
    expect(await retryEndedItems(sql, { tenantId, queueId: q.id, itemIds: ids, business: true })).toBe(1);
    expect(await item(business.id)).toMatchObject({ status: 'new', retry_count: 0, exception_type: 'business' });
  });
});
