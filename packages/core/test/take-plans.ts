import { randomUUID } from 'node:crypto';
import type { Sql } from '@svc/core';
import { recordStatements } from '@svc/testing';

/** What the take tests read of an EXPLAIN (FORMAT JSON) node. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Subplan Name'?: string;
  Filter?: string;
  'Index Cond'?: string;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

export function nodes(p: PlanNode): PlanNode[] {
  return [p, ...(p.Plans ?? []).flatMap(nodes)];
}

/** Buffers a node read, from shared_buffers or beyond. */
export function buffersOf(n: PlanNode): number {
  return (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0);
}

/**
 * The take statement `fn` sends (it runs: the items it takes are gone), then the same text with
 * the same values under EXPLAIN (ANALYZE, BUFFERS) in a transaction that is rolled back.
 */
export async function explainTake(sql: Sql, fn: () => Promise<unknown>): Promise<PlanNode> {
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
  return plan;
}

/** A consumer job running on `machineId`, attempt 1: what a take is fenced by. */
export async function insertRunningJob(sql: Sql, tenantId: string, processId: string, machineId: string): Promise<string> {
  const id = randomUUID();
  await sql`insert into jobs (id, tenant_id, process_id, machine_id, status, attempt, started_at, source)
            values (${id}, ${tenantId}, ${processId}, ${machineId}, 'running', 1, now(), 'queue')`;
  return id;
}
