import { createSql, type Sql } from '@svc/core';
import { MAX_TAKE } from '@svc/core/machine-protocol';
import { claimFloorSwitch, recomputeClaimFloors, settleAndClaimItems, vacuumHeldBack, type TakeOptions } from '@svc/core/internals';
import {
  privateTestContext, seedMachine, seedProcess, seedQueue, seedTenant, startPrivatePostgres, waitFor, type PrivatePostgres, type TestContext,
} from '@svc/testing';
import { buffersOf, explainTake, insertRunningJob, nodes, type PlanNode } from './take-plans';

/**
 * The claim floor (docs/decisions/claim-floor.md) while a snapshot is held: CLAIM_FLOOR=auto
 * engages the floors, and the take past them keeps its reading bounded. On a private Postgres:
 * a held snapshot is the whole server's (every database's vacuum and every event feed waits for
 * it), so on the shared server these tests would hold back the other tests' feeds, and another
 * test's long transaction would look like a held snapshot to these.
 */
let pg: PrivatePostgres;
let ctx: TestContext;
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;
const FLOOR: TakeOptions = { floor: true };

beforeAll(async () => {
  pg = await startPrivatePostgres();
  ctx = privateTestContext(pg);
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
}, 120_000);
afterAll(async () => {
  await ctx?.close();
  pg?.destroy();
});

const runningJob = (): Promise<string> => insertRunningJob(sql, tenantId, processId, machineId);

/** An item created `ageSeconds` ago: the floor never passes items younger than its lag. */
async function addItem(queueId: string, f: { ref: string; ageSeconds: number }) {
  const [row] = await sql<Array<{ id: string; reference: string }>>`
    insert into queue_item_records (tenant_id, queue_id, data, reference, created_at)
    values (${tenantId}, ${queueId}, '{}'::jsonb, ${f.ref}, now() - make_interval(secs => ${f.ageSeconds}))
    returning id, reference`;
  return row!;
}

async function floorOf(queueId: string): Promise<Date | null> {
  const [row] = await sql<Array<{ floor: Date }>>`select floor from queue_ready_floor where queue_id = ${queueId}`;
  return row?.floor ?? null;
}

async function takeOne(queueId: string, jobId: string, opts: TakeOptions = FLOOR) {
  const { claimed } = await settleAndClaimItems(sql, { queueId, jobId, jobAttempt: 1, machineId, outcomes: [], take: 1 }, opts);
  return claimed;
}

/** The take's plan, and the buffers of its reading of the ready items (the claim's writes cost the same either way). */
async function explainTakeReading(fn: () => Promise<unknown>): Promise<{ plan: PlanNode; picked: number }> {
  const plan = await explainTake(sql, fn);
  return { plan, picked: buffersOf(nodes(plan).find((n) => n['Subplan Name'] === 'CTE picked')!) };
}

describe('CLAIM_FLOOR=auto', () => {
  it('keeps floors only while a snapshot older than the threshold holds vacuum back; a process reads past them while there are any', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await addItem(q.id, { ref: 'a', ageSeconds: 60 });
    const floors = claimFloorSwitch(sql, 'auto', 0);
    // vacuum runs: no floor is kept, and one left from before is removed
    await recomputeClaimFloors(sql, { mode: 'on' });
    expect(await floorOf(q.id)).not.toBeNull();
    expect(await vacuumHeldBack(sql, 0)).toBe(false);
    await recomputeClaimFloors(sql, { mode: 'auto', engageSeconds: 0 });
    expect(await sql`select 1 from queue_ready_floor`).toHaveLength(0);

    const held = await sql.reserve();
    try {
      await held`begin isolation level repeatable read`;
      await held`select count(*) from queue_items`;
      expect(await vacuumHeldBack(sql, 0)).toBe(true);
      // younger than the threshold: not yet
      expect(await vacuumHeldBack(sql, 3600)).toBe(false);
      await recomputeClaimFloors(sql, { mode: 'auto', engageSeconds: 3600 });
      expect(await floorOf(q.id)).toBeNull();
      await recomputeClaimFloors(sql, { mode: 'auto', engageSeconds: 0 });
      expect(await floorOf(q.id)).not.toBeNull();
      await waitFor('the process to read past the floors', async () => floors.current());
      expect((await takeOne(q.id, await runningJob(), { floor: floors.current() })).map((c) => c.reference)).toEqual(['a']);
      await held`commit`;
    } finally {
      held.release();
    }
    await recomputeClaimFloors(sql, { mode: 'auto', engageSeconds: 0 });
    expect(await sql`select 1 from queue_ready_floor`).toHaveLength(0);
    await waitFor('the process to read from the head again', async () => !floors.current());
    // the switches of the other modes do not read the table
    expect(claimFloorSwitch(sql, 'on').current()).toBe(true);
    expect(claimFloorSwitch(sql, 'off').current()).toBe(false);
  });
});

describe('a snapshot held elsewhere', () => {
  it('keeps the take\'s reading bounded past the floor, while the take from the head reads more with every item taken', async () => {
    const q = await seedQueue(sql, tenantId, {});
    await sql`insert into queue_item_records (tenant_id, queue_id, data, created_at)
              select ${tenantId}, ${q.id}, '{}'::jsonb, now() - interval '2 hours' + make_interval(secs => g * 0.1) from generate_series(1, 31000) g`;
    await sql`vacuum analyze queue_items`;
    await recomputeClaimFloors(sql, { mode: 'on' });
    const job = await runningJob();
    const take = (opts: TakeOptions, n: number) => () => settleAndClaimItems(sql, { queueId: q.id, jobId: job, jobAttempt: 1, machineId, outcomes: [], take: n }, opts);
    // measured on a small take: locking each row taken costs the same either way
    const measure = async () => ({ floor: (await explainTakeReading(take(FLOOR, 4))).picked, head: (await explainTakeReading(take({}, 4))).picked });
    const before = await measure();

    // a repeatable-read transaction on another connection keeps every version it could see
    const holder = createSql(ctx.databaseUrl, { max: 1 });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const holderDone = holder.begin('isolation level repeatable read', async (tx) => {
      await tx`select count(*) from queue_items`;
      holding();
      await released;
    });
    try {
      await held;
      for (let i = 0; i < 300; i++) {
        const { claimed } = await take(FLOOR, MAX_TAKE)();
        expect(claimed).toHaveLength(MAX_TAKE);
        // the dispatcher's pass, every so often
        if (i % 10 === 9) await recomputeClaimFloors(sql, { mode: 'on' });
      }
      const after = await measure();
      // 30,000 items taken: from the head the take reads past all their entries, from the floor past none
      expect(after.head).toBeGreaterThan(before.head + 500);
      expect(after.floor).toBeLessThan(before.floor + 20);
      expect(after.floor * 10).toBeLessThan(after.head);
    } finally {
      release();
      await holderDone;
      await holder.end();
    }
    // every item of the queue is taken: on a loaded two-core runner that outlasts jest's default timeout
  }, 120_000);
});
