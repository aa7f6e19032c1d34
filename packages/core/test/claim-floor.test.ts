import { createEngine, createLogger, createSql, type Sql } from '@svc/core';
import {
  CLAIM_FLOOR_FULL_EVERY, applyItemRetryPolicy, approveQueueItem, compareTakeOrder, recomputeClaimFloors, redriveDeadLetterItems, releaseQueueItems,
  settleAndClaimItems, settleAndClaimItemsBatch, type TakeOptions,
} from '@svc/core/internals';
import { createTestContext, seedMachine, seedProcess, seedQueue, seedTenant, waitFor, type TestContext } from '@svc/testing';
import { buffersOf, explainTake, insertRunningJob, nodes, type PlanNode } from './take-plans';

/**
 * The take past the claim floor (CLAIM_FLOOR=on, docs/decisions/claim-floor.md) on a real
 * Postgres: the order stays exact, an item older than the floor is found at once when it becomes
 * ready again (the trigger) or after the next recomputation (a postpone that passed, an insert
 * that committed late). What a held snapshot changes is in claim-floor-snapshots.test.ts.
 */
let ctx: TestContext;
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;
const FLOOR: TakeOptions = { floor: true };

beforeAll(async () => {
  ctx = await createTestContext();
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
});
afterAll(() => ctx.close());

const runningJob = (): Promise<string> => insertRunningJob(sql, tenantId, processId, machineId);

interface Spec { priority?: number; deadline?: string | null; postpone?: string | null; ref: string; ageSeconds: number }

/** An item created `ageSeconds` ago: the floor never passes items younger than its lag. */
async function addItem(queueId: string, f: Spec) {
  const [row] = await sql<Array<{ id: string; reference: string }>>`
    insert into queue_item_records (tenant_id, queue_id, priority, deadline, postpone, data, reference, created_at)
    values (${tenantId}, ${queueId}, ${f.priority ?? 3}, ${f.deadline ?? null}, ${f.postpone ?? null}, '{}'::jsonb, ${f.ref},
            now() - make_interval(secs => ${f.ageSeconds}))
    returning id, reference`;
  return row!;
}

async function floorOf(queueId: string): Promise<Date | null> {
  const [row] = await sql<Array<{ floor: Date }>>`select floor from queue_ready_floor where queue_id = ${queueId}`;
  return row?.floor ?? null;
}

/** The ready items of a queue in the take order, as plain SQL over the whole set says it. */
async function readyInOrder(queueId: string): Promise<string[]> {
  const rows = await sql<Array<{ reference: string }>>`
    select reference from queue_items where queue_id = ${queueId} and status = 'new' and (postpone is null or postpone <= now())
     order by priority desc, deadline asc nulls last, created_at asc, id`;
  return rows.map((r) => r.reference);
}

async function takeOne(queueId: string, jobId: string, opts: TakeOptions = FLOOR) {
  const { claimed } = await settleAndClaimItems(sql, { queueId, jobId, jobAttempt: 1, machineId, outcomes: [], take: 1 }, opts);
  return claimed;
}

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

describe('the take past the floor', () => {
  it('takes in exactly the take order across priorities and deadlines, and an item retried below the floor at once', async () => {
    const q = await seedQueue(sql, tenantId, { max_retries: 3 });
    const specs: Spec[] = [];
    let age = 600;
    // the most urgent items are the oldest, so that taking one raises the queue's floor past it
    for (const priority of [5, 3, 1]) {
      for (let i = 0; i < 3; i++) specs.push({ priority, ref: `p${priority}-${i}`, ageSeconds: age-- });
      specs.push({ priority, deadline: inMinutes(90 - priority), ref: `p${priority}-late`, ageSeconds: age-- });
      specs.push({ priority, deadline: inMinutes(10), ref: `p${priority}-soon`, ageSeconds: age-- });
    }
    specs.push({ priority: 3, ref: 'p3-young-a', ageSeconds: 100 }, { priority: 3, ref: 'p3-young-b', ageSeconds: 100 });
    for (const s of specs) await addItem(q.id, s);
    const job = await runningJob();

    // the oldest item of priority 5 without a deadline is taken and fails; the floor then rises past it
    const expected = await readyInOrder(q.id);
    const taken: string[] = [];
    for (const ref of expected.slice(0, 3)) {
      const [c] = await takeOne(q.id, job);
      expect(c!.reference).toBe(ref);
      taken.push(c!.id);
    }
    const first = taken[2]!; // p5-0: the deadlines of priority 5 come first
    const [firstRow] = await sql<Array<{ reference: string; created_at: Date; attempt: number }>>`select reference, created_at, attempt from queue_items where id = ${first}`;
    expect(firstRow!.reference).toBe('p5-0');
    expect(await recomputeClaimFloors(sql, { mode: 'on' })).toBeGreaterThanOrEqual(1);
    expect((await floorOf(q.id))!.getTime()).toBeGreaterThan(firstRow!.created_at.getTime());

    await settleAndClaimItems(sql, {
      queueId: q.id, jobId: job, jobAttempt: 1, machineId, take: 0,
      outcomes: [{ id: first, attempt: firstRow!.attempt, status: 'failed', error_message: 'x' }],
    }, FLOOR);
    expect((await applyItemRetryPolicy(sql, q.id)).retried).toBe(1);
    // the retry's own transaction lowered the floor to it: the very next take finds it
    expect((await floorOf(q.id))!.getTime()).toBe(firstRow!.created_at.getTime());

    const rest = await readyInOrder(q.id);
    expect(rest[0]).toBe('p5-0');
    const order: string[] = [];
    for (;;) {
      const [c] = await takeOne(q.id, job);
      if (!c) break;
      order.push(c.reference!);
      // the dispatcher recomputes between takes; the order does not depend on when
      if (order.length % 4 === 0) await recomputeClaimFloors(sql, { mode: 'on' });
    }
    expect(order).toEqual(rest);
  });

  it('finds at once an item made ready below the floor by any path: release, approval, re-drive, postpone cleared, insert', async () => {
    const q = await seedQueue(sql, tenantId, { max_retries: 0 });
    for (let i = 0; i < 8; i++) await addItem(q.id, { ref: `i${i}`, ageSeconds: 300 - i });
    const job = await runningJob();
    const { claimed } = await settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take: 4 }, FLOOR);
    const [rel, rev, dead, post] = claimed;
    await settleAndClaimItems(sql, {
      queueId: q.id, jobId: job, jobAttempt: 1, machineId, take: 0,
      outcomes: [
        { id: rev!.id, attempt: rev!.attempt, status: 'pending_review', result: {} },
        { id: dead!.id, attempt: dead!.attempt, status: 'failed', error_message: 'x' },
        { id: post!.id, attempt: post!.attempt, status: 'failed', error_message: 'x' },
      ],
    }, FLOOR);
    await applyItemRetryPolicy(sql, q.id); // max_retries 0: both dead-letter
    await sql`update queue_items set status = 'new', postpone = now() + interval '1 hour' where id = ${post!.id}`;
    await recomputeClaimFloors(sql, { mode: 'on' });
    const high = (await floorOf(q.id))!;

    const back = async (what: string, ref: string, act: () => Promise<unknown>) => {
      await act();
      const [c] = await takeOne(q.id, job);
      expect({ what, taken: c?.reference }).toEqual({ what, taken: ref });
      await recomputeClaimFloors(sql, { mode: 'on' });
      expect((await floorOf(q.id))!.getTime()).toBeGreaterThanOrEqual(high.getTime());
    };
    await back('release', 'i0', () => releaseQueueItems(sql, job, [{ id: rel!.id, attempt: rel!.attempt }]));
    await back('approval', 'i1', () => approveQueueItem(sql, { tenantId, queueId: q.id, itemId: rev!.id, reviewer: 'r' }));
    await back('re-drive', 'i2', () => redriveDeadLetterItems(sql, { tenantId, queueId: q.id, itemIds: [dead!.id] }));
    // the bulk action `postpone` with no date (bulk/steps.ts)
    await back('postpone cleared', 'i3', () => sql`update queue_items set postpone = null where id = ${post!.id}`);
    // an insert that is older than the floor when it is written (its transaction began long before)
    await back('insert', 'old-insert', () => addItem(q.id, { ref: 'old-insert', ageSeconds: 400 }));
  });

  it('takes a postponed item older than the floor after the next recomputation once it is due', async () => {
    const q = await seedQueue(sql, tenantId, {});
    const postponed = await addItem(q.id, { ref: 'postponed', ageSeconds: 120, postpone: new Date(Date.now() + 1500).toISOString() });
    await addItem(q.id, { ref: 'a', ageSeconds: 60 });
    await addItem(q.id, { ref: 'b', ageSeconds: 50 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    const job = await runningJob();
    await waitFor('the postpone to pass', async () => (await sql`select 1 from queue_items where id = ${postponed.id} and postpone <= now()`).length > 0);
    // due now, but below the floor computed while it was postponed: the documented delay
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['a']);
    await recomputeClaimFloors(sql, { mode: 'on' });
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['postponed']);
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['b']);
  });

  it('takes an item whose insert committed after the floor rose past its created_at after the next recomputation', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await addItem(q.id, { ref: 'a', ageSeconds: 200 });
    await addItem(q.id, { ref: 'b', ageSeconds: 50 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    const lowBefore = (await floorOf(q.id))!;
    // an insert (above the floor then, so its trigger has nothing to lower) whose transaction is
    // still open when the floor is recomputed above its created_at
    const other = createSql(ctx.databaseUrl, { max: 1 });
    try {
      await other.begin(async (tx) => {
        await tx`insert into queue_item_records (tenant_id, queue_id, data, reference, created_at)
                 values (${tenantId}, ${q.id}, '{}'::jsonb, 'late', now() - interval '100 seconds')`;
        await sql`update queue_items set status = 'completed' where queue_id = ${q.id} and reference = 'a'`;
        await recomputeClaimFloors(sql, { mode: 'on' });
      });
    } finally {
      await other.end();
    }
    const [late] = await sql<Array<{ created_at: Date }>>`select created_at from queue_items where queue_id = ${q.id} and reference = 'late'`;
    expect((await floorOf(q.id))!.getTime()).toBeGreaterThan(late!.created_at.getTime());
    expect(lowBefore.getTime()).toBeLessThan(late!.created_at.getTime());
    const job = await runningJob();
    // passed over until the floor is recomputed from the items
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['b']);
    await addItem(q.id, { ref: 'c', ageSeconds: 10 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['late']);
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['c']);
  });

  it('with the setting off, the pass removes the floors and the take reads from the head', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await addItem(q.id, { ref: 'a', ageSeconds: 60 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    expect(await floorOf(q.id)).not.toBeNull();
    await recomputeClaimFloors(sql, { mode: 'off' });
    expect(await sql`select 1 from queue_ready_floor`).toHaveLength(0);
    expect((await takeOne(q.id, await runningJob(), {})).map((c) => c.reference)).toEqual(['a']);
  });
});

describe('passes that search from below the floor', () => {
  it('find what is near the floor and every due postponed item; an item far below waits for the full pass', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await addItem(q.id, { ref: 'a', ageSeconds: 30 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    const floor = (await floorOf(q.id))!;
    // ten minutes below the floor, as an insert that committed that late would be
    await addItem(q.id, { ref: 'far', ageSeconds: 630 });
    // postponed long ago, due now
    await addItem(q.id, { ref: 'due', ageSeconds: 900, postpone: new Date(Date.now() - 1000).toISOString() });
    // the trigger lowered the floor for both (an insert below it); put it back where the pass had it
    await sql`update queue_ready_floor set floor = ${floor} where queue_id = ${q.id}`;
    await recomputeClaimFloors(sql, { mode: 'on', full: false });
    const job = await runningJob();
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['due']);
    await sql`update queue_ready_floor set floor = ${floor} where queue_id = ${q.id}`;
    await recomputeClaimFloors(sql, { mode: 'on', full: false });
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['a']);
    await recomputeClaimFloors(sql, { mode: 'on', full: true });
    expect((await takeOne(q.id, job)).map((c) => c.reference)).toEqual(['far']);
  });
});

describe('the orphaned-item safety net while floors are engaged', () => {
  it('runs one sweep in CLAIM_FLOOR_FULL_EVERY, and every sweep without floors', async () => {
    const orphanIn = async (queueId: string) => {
      const job = await runningJob();
      await sql`insert into queue_item_records (tenant_id, queue_id, data, status, job_id, attempt) values (${tenantId}, ${queueId}, '{}'::jsonb, 'in_progress', ${job}, 1)`;
      await sql`update jobs set status = 'completed', finished_at = now() where id = ${job}`;
    };
    const logger = createLogger({ service: 'claim-floor-test', level: 'error' });
    const engaged = createEngine({ sql, logger, claimFloor: 'on' });
    const q = await seedQueue(sql, tenantId, {});
    await orphanIn(q.id);
    expect(await engaged.sweeps.failOrphans()).toContain(q.id);
    await orphanIn(q.id);
    for (let i = 1; i < CLAIM_FLOOR_FULL_EVERY; i++) expect(await engaged.sweeps.failOrphans()).toEqual([]);
    expect(await engaged.sweeps.failOrphans()).toContain(q.id);
    const plain = createEngine({ sql, logger, claimFloor: 'off' });
    await orphanIn(q.id);
    expect(await plain.sweeps.failOrphans()).toContain(q.id);
    await orphanIn(q.id);
    expect(await plain.sweeps.failOrphans()).toContain(q.id);
  });
});

describe('floor locks', () => {
  it('the pass never waits for a floor another transaction holds: it leaves it to the next pass', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await addItem(q.id, { ref: 'old', ageSeconds: 600 });
    await recomputeClaimFloors(sql, { mode: 'on' });
    const first = await floorOf(q.id);
    await takeOne(q.id, await runningJob());
    await addItem(q.id, { ref: 'newer', ageSeconds: 300 });
    const holder = await sql.reserve();
    try {
      await holder`begin`;
      await holder`select 1 from queue_ready_floor where queue_id = ${q.id} for update`;
      // answers while the row is held, and leaves it as it was
      await recomputeClaimFloors(sql, { mode: 'on' });
      expect(await floorOf(q.id)).toEqual(first);
      await holder`commit`;
    } finally {
      holder.release();
    }
    await recomputeClaimFloors(sql, { mode: 'on' });
    expect((await floorOf(q.id))!.getTime()).toBeGreaterThan(first!.getTime());
  });
});

describe('the batched take past the floors', () => {
  it('gives each request of several queues its items in the take order, below-floor retries first where the order says', async () => {
    const queues = [await seedQueue(sql, tenantId, { max_retries: 3 }), await seedQueue(sql, tenantId, { max_retries: 3 }), await seedQueue(sql, tenantId, { max_retries: 3 })];
    for (const [n, q] of queues.entries()) {
      for (let i = 0; i < 6; i++) await addItem(q.id, { priority: i % 2 ? 3 : 4, ref: `q${n}-${i}`, ageSeconds: 500 - i });
      await addItem(q.id, { priority: 3, deadline: inMinutes(5), ref: `q${n}-deadline`, ageSeconds: 10 });
    }
    // the oldest item of the first queue is taken, fails, the floor rises, then it is retried
    const job = await runningJob();
    const [c] = await takeOne(queues[0]!.id, job);
    expect(c!.reference).toBe('q0-0');
    await recomputeClaimFloors(sql, { mode: 'on' });
    await settleAndClaimItems(sql, { queueId: queues[0]!.id, jobId: job, jobAttempt: 1, machineId, take: 0, outcomes: [{ id: c!.id, attempt: c!.attempt, status: 'failed', error_message: 'x' }] }, FLOOR);
    await applyItemRetryPolicy(sql, queues[0]!.id);

    const expected = await Promise.all(queues.map((q) => readyInOrder(q.id)));
    const jobs = await Promise.all(queues.flatMap(() => [runningJob(), runningJob()]));
    const reqs = queues.flatMap((q, n) => [
      { queueId: q.id, jobId: jobs[2 * n]!, jobAttempt: 1, machineId, outcomes: [], take: 3 },
      { queueId: q.id, jobId: jobs[2 * n + 1]!, jobAttempt: 1, machineId, outcomes: [], take: 10 },
    ]);
    const results = await settleAndClaimItemsBatch(sql, reqs, FLOOR);
    queues.forEach((_, n) => {
      const got = [...results[2 * n]!.claimed, ...results[2 * n + 1]!.claimed];
      expect(got.map((x) => x.reference)).toEqual(expected[n]);
      expect([...got].sort(compareTakeOrder).map((x) => x.reference)).toEqual(expected[n]);
      expect(results[2 * n]!.claimed).toHaveLength(3);
    });
    expect(expected[0]![0]).toBe('q0-0');
  });
});

/** The take's plan, and the buffers of its reading of the ready items (the claim's writes cost the same either way). */
async function explainTakeReading(fn: () => Promise<unknown>): Promise<{ plan: PlanNode; picked: number }> {
  const plan = await explainTake(sql, fn);
  return { plan, picked: buffersOf(nodes(plan).find((n) => n['Subplan Name'] === 'CTE picked')!) };
}

/**
 * The ten parts of a take past the floor, in the order Append runs them: per priority the items
 * with a deadline (queue_items_ready_idx, or the small queue_items_deadline_idx of unfinished
 * items with a deadline when the planner finds it cheaper), then those without one from the floor.
 */
function parts(plan: PlanNode): PlanNode[] {
  const found = nodes(plan).filter((n) => n['Relation Name'] === 'queue_items' && /priority = \d/.test(`${n['Index Cond'] ?? ''} ${n.Filter ?? ''}`));
  expect(found).toHaveLength(10);
  found.forEach((n, i) => {
    const priority = 5 - Math.floor(i / 2);
    if (i % 2 === 1) {
      expect(n['Index Name']).toBe('queue_items_ready_idx');
      expect(n['Index Cond']).toMatch(new RegExp(`priority = ${priority}\\).*deadline IS NULL.*created_at >=`));
    } else {
      expect(['queue_items_ready_idx', 'queue_items_deadline_idx']).toContain(n['Index Name']);
      expect(`${n['Index Cond']} ${n.Filter}`).toMatch(/deadline IS NOT NULL/);
      expect(`${n['Index Cond']} ${n.Filter}`).toMatch(new RegExp(`priority = ${priority}\\)`));
    }
  });
  return found;
}

/** The nodes below `p` that no LIMIT bounds. */
function unbounded(p: PlanNode): PlanNode[] {
  return [p, ...(p['Node Type'] === 'Limit' ? [] : (p.Plans ?? []).flatMap(unbounded))];
}

/**
 * Nothing reads a queue's ready items whole: no sequential scan of queue_items that runs, and a
 * sort has below it, unbounded by a LIMIT, only the small index of unfinished items with a deadline.
 */
function expectNoWholeRead(plan: PlanNode): void {
  const all = nodes(plan);
  expect(all.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'queue_items' && (n['Actual Loops'] ?? 0) > 0)).toEqual([]);
  for (const sort of all.filter((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Incremental Sort')) {
    const below = unbounded(sort).filter((n) => n['Relation Name'] === 'queue_items');
    for (const n of below) expect(n['Index Name']).toBe('queue_items_deadline_idx');
  }
}

describe('the plan of the take past the floor', () => {
  it('walks index ranges in order, sorts no queue\'s items, and never runs the parts after the one that fills the take', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await sql`insert into queue_item_records (tenant_id, queue_id, priority, data, created_at)
              select ${tenantId}, ${q.id}, 3, '{}'::jsonb, now() - interval '1 hour' + make_interval(secs => g) from generate_series(1, 2000) g`;
    await addItem(q.id, { priority: 5, deadline: inMinutes(5), ref: 'urgent', ageSeconds: 30 });
    await sql`analyze queue_items`;
    await recomputeClaimFloors(sql, { mode: 'on' });
    const job = await runningJob();
    const take = () => settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take: 4 }, FLOOR);
    const { plan } = await explainTakeReading(take);
    expectNoWholeRead(plan);
    // the urgent item (taken by the recorded run) is gone: every part up to priority 3's items
    // without a deadline runs once, and those fill the take
    expect(parts(plan).map((n) => n['Actual Loops'])).toEqual([1, 1, 1, 1, 1, 1, 0, 0, 0, 0]);
  });

  it('the batched take: the same ranges per queue', async () => {
    const [q1, q2] = [await seedQueue(sql, tenantId, {}), await seedQueue(sql, tenantId, {})];
    for (const q of [q1, q2]) {
      await sql`insert into queue_item_records (tenant_id, queue_id, priority, data, created_at)
                select ${tenantId}, ${q.id}, 2, '{}'::jsonb, now() - interval '1 hour' + make_interval(secs => g) from generate_series(1, 1000) g`;
    }
    await sql`analyze queue_items`;
    await recomputeClaimFloors(sql, { mode: 'on' });
    const [j1, j2] = [await runningJob(), await runningJob()];
    const { plan } = await explainTakeReading(() => settleAndClaimItemsBatch(sql, [
      { queueId: q1.id, jobId: j1, jobAttempt: 1, machineId, outcomes: [], take: 2 },
      { queueId: q2.id, jobId: j2, jobAttempt: 1, machineId, outcomes: [], take: 3 },
    ], FLOOR));
    expectNoWholeRead(plan);
    // once per queue for the parts up to priority 2's, never after
    expect(parts(plan).map((n) => n['Actual Loops'])).toEqual([2, 2, 2, 2, 2, 2, 2, 2, 0, 0]);
  });
});

