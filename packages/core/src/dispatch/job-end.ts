import type { Queryable } from '../db/sql';
import type { JobRow } from '../jobs/repo';
import type { JobStatus } from '../jobs/transitions';
import { failItemsOfJobs } from '../queue-items/transitions';
import { jobsCreatedEffects, recordEffects, type Effect } from '../outbox/effects';
import { createFollowUps } from './follow-ups';
import type { DispatchJobRef } from './port';
import { observeJobsEnded } from '../metrics/jobs';

export interface EndedJobs {
  /** running jobs the engine ended: their agents must stop working on them */
  ended: Array<{ id: string; machine_id: string; status: JobStatus }>;
  followUps: DispatchJobRef[];
  /** queues with items failed by these ends (their retry policy applies) */
  failedItemQueues: string[];
}

export interface JobEndOptions {
  /** the message items still held by an ended consumer job get */
  itemMessage: (row: JobRow) => string;
  /** set when the engine (not the job's agent) ended running jobs: their agents are told to stop */
  abort?: 'timeout' | 'lost';
}

/**
 * Everything that follows jobs reaching a final status, in the transaction that moved them
 * there, whoever moved them (the agent's finish, a timeout, a lost machine, an agent restart):
 * items the consumer jobs still held fail, follow-up jobs (chain, retry) are created, and the
 * effects are recorded with them (outbox/effects.ts): the follow-ups go to their machines, the
 * failed items to their queue's retry policy, a consumer's queue is looked at again (it may need
 * a new consumer), and the agents of runs the engine ended stop them.
 */
export async function endJobs(tx: Queryable, rows: readonly JobRow[], opts: JobEndOptions): Promise<EndedJobs> {
  const followUps: DispatchJobRef[] = [];
  const failedItemQueues = new Set<string>();
  const consumerQueues = new Map<string, string>();
  for (const row of rows) {
    // a consumer stopped before it started holds no item
    if (row.queue_id && (row.status !== 'stopped' || row.started_at)) {
      for (const q of await failItemsOfJobs(tx, [row.id], opts.itemMessage(row))) failedItemQueues.add(q);
    }
    if (row.queue_id) {
      consumerQueues.set(row.queue_id, row.tenant_id);
      // a consumer that failed items itself leaves them to the queue's retry policy
      if ((row.output_data as { items_failed?: number } | null)?.items_failed) failedItemQueues.add(row.queue_id);
    }
    followUps.push(...(await createFollowUps(tx, row)));
  }
  const ended = rows.filter((r) => r.started_at).map((r) => ({ id: r.id, machine_id: r.machine_id, status: r.status }));
  const effects: Effect[] = [
    ...jobsCreatedEffects(followUps),
    ...[...failedItemQueues].map((q): Effect => ({ kind: 'items-failed', queue_id: q })),
    ...[...consumerQueues].map(([q, tenantId]): Effect => ({ kind: 'queue-ready', queue_id: q, tenant_id: tenantId })),
    ...(opts.abort ? ended.map((j): Effect => ({ kind: 'run-ended', job_id: j.id, machine_id: j.machine_id, reason: opts.abort! })) : []),
  ];
  await recordEffects(tx, effects);
  observeJobsEnded(rows);
  return { ended, followUps, failedItemQueues: [...failedItemQueues] };
}
