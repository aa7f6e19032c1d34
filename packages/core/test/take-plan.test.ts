import { randomUUID } from 'node:crypto';
import type { Sql } from '@svc/core';
import { settleAndClaimItems, settleAndClaimItemsBatch } from '@svc/core/internals';
import { createTestContext, recordStatements, seedMachine, seedProcess, seedQueue, seedTenant, type TestContext } from '@svc/testing';

/**
 * The take's claim finds the rows it picked by primary key, whatever the planner's statistics
 * say. Statistics taken while few items were ready (before a burst of adds, until the next
 * analysis) once let the planner reach the picked rows through the ready index instead, every
 * ready item of every queue filtered by id: each take then read the whole backlog, and B3 ran at
 * half its rate until autovacuum analysed the table again (BENCHMARKS.md, "Issue 33", fifth session).
 */
let ctx: TestContext;
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Subplan Name'?: string;
  'Index Cond'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

beforeAll(async () => {
  ctx = await createTestContext();
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
  // statistics taken when the table held ended items only, then a burst the planner has not seen
  const old = await seedQueue(sql, tenantId, {});
  await sql`insert into queue_items (tenant_id, queue_id, status, data, processed_at)
            select ${tenantId}, ${old.id}, 'completed', '{}'::jsonb, now() from generate_series(1, 20000)`;
  await sql`analyze queue_items`;
});
afterAll(() => ctx.close());

async function runningJob(): Promise<string> {
  const id = randomUUID();
  await sql`insert into jobs (id, tenant_id, process_id, machine_id, status, attempt, started_at, source)
            values (${id}, ${tenantId}, ${processId}, ${machineId}, 'running', 1, now(), 'queue')`;
  return id;
}

async function burst(): Promise<string> {
  const q = await seedQueue(sql, tenantId, {});
  await sql`insert into queue_items (tenant_id, queue_id, data) select ${tenantId}, ${q.id}, '{}'::jsonb from generate_series(1, 5000)`;
  return q.id;
}

/** The take `fn` sends, run again under EXPLAIN (ANALYZE, BUFFERS) and rolled back: its claim's plan. */
async function claimOf(fn: () => Promise<unknown>): Promise<PlanNode> {
  const sent = await recordStatements(sql, fn);
  const take = sent.find((s) => /for update skip locked/.test(s.text))!;
  let plan!: PlanNode;
  await sql.begin(async (tx) => {
    const [row] = await tx.unsafe(`explain (analyze, buffers, format json) ${take.text}`, take.params as never[]);
    plan = (row!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
    throw new Error('rollback');
  }).catch((err: Error) => {
    if (err.message !== 'rollback') throw err;
  });
  return nodes(plan).find((n) => n['Subplan Name'] === 'CTE claimed')!;
}

function expectFoundById(claimed: PlanNode): void {
  const scans = nodes(claimed).filter((n) => n['Relation Name'] === 'queue_items' && n['Node Type'].endsWith('Scan'));
  expect(scans.map((n) => ({ index: n['Index Name'], cond: n['Index Cond'] ?? null }))).toEqual([
    { index: 'queue_items_pkey', cond: expect.stringMatching(/^\(id = /) },
  ]);
  // ten rows found by key, not five thousand entries of the ready index
  expect((claimed['Shared Hit Blocks'] ?? 0) + (claimed['Shared Read Blocks'] ?? 0)).toBeLessThan(300);
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
