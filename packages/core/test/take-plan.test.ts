import type { Sql } from '@svc/core';
import { settleAndClaimItems, settleAndClaimItemsBatch } from '@svc/core/internals';
import { createTestContext, seedMachine, seedProcess, seedQueue, seedTenant, type TestContext } from '@svc/testing';
import { buffersOf, explainTake, insertRunningJob, nodes, type PlanNode } from './take-plans';

/**
 * The take's claim finds the rows it picked by primary key, whatever the planner's statistics
 * say. Statistics taken while few items were ready (before a burst of adds, until the next
 * analysis) once let the planner reach the picked rows through the ready index instead, every
 * ready item of every queue filtered by id: each take then read the whole backlog, and B3 ran at
 * half its rate until autovacuum analysed the table again.
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
  // statistics taken when the table held ended items only, then a burst the planner has not seen
  const old = await seedQueue(sql, tenantId, {});
  await sql`insert into queue_item_records (tenant_id, queue_id, status, data, processed_at)
            select ${tenantId}, ${old.id}, 'completed', '{}'::jsonb, now() from generate_series(1, 20000)`;
  await sql`analyze queue_items`;
});
afterAll(() => ctx.close());

const runningJob = (): Promise<string> => insertRunningJob(sql, tenantId, processId, machineId);

async function burst(): Promise<string> {
  const q = await seedQueue(sql, tenantId, {});
  await sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${q.id}, '{}'::jsonb from generate_series(1, 5000)`;
  return q.id;
}

/** The claim (the UPDATE of the picked rows) in the plan of the take `fn` sends. */
async function claimOf(fn: () => Promise<unknown>): Promise<PlanNode> {
  return nodes(await explainTake(sql, fn)).find((n) => n['Subplan Name'] === 'CTE claimed')!;
}

function expectFoundById(claimed: PlanNode): void {
  const scans = nodes(claimed).filter((n) => n['Relation Name'] === 'queue_items' && n['Node Type'].endsWith('Scan'));
  expect(scans.map((n) => ({ index: n['Index Name'], cond: n['Index Cond'] ?? null }))).toEqual([
    { index: 'queue_items_pkey', cond: expect.stringMatching(/^\(id = /) },
  ]);
  // ten rows found by key, not five thousand entries of the ready index
  expect(buffersOf(claimed)).toBeLessThan(300);
}

describe('the take under statistics that say nothing is ready', () => {
  it('claims the picked rows through the primary key (settleAndClaimItems)', async () => {
    const queueId = await burst();
    const jobId = await runningJob();
    const claimed = await claimOf(() => settleAndClaimItems(sql, { queueId, jobId, jobAttempt: 1, machineId, outcomes: [], take: 10 }));
    expectFoundById(claimed);
  });

  it('claims the picked rows through the primary key (settleAndClaimItemsBatch)', async () => {
    const queueId = await burst();
    const [j1, j2] = [await runningJob(), await runningJob()];
    const claimed = await claimOf(() => settleAndClaimItemsBatch(sql, [
      { queueId, jobId: j1, jobAttempt: 1, machineId, outcomes: [], take: 5 },
      { queueId, jobId: j2, jobAttempt: 1, machineId, outcomes: [], take: 5 },
    ]));
    expectFoundById(claimed);
  });

  it('past the claim floor too (settleAndClaimItems, floor)', async () => {
    const queueId = await burst();
    const jobId = await runningJob();
    const claimed = await claimOf(() => settleAndClaimItems(sql, { queueId, jobId, jobAttempt: 1, machineId, outcomes: [], take: 10 }, { floor: true }));
    expectFoundById(claimed);
  });
});
