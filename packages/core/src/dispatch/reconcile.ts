import type { Sql } from '../db/sql';
import type { Logger } from '../logger';
import { existsMany } from '../redis';
import type { BullDispatch } from './bull-dispatch';
import { bullJobId } from './bull-queues';
import type { DispatchJobRef } from './port';

/**
 * Rebuilds dispatch state in Redis from Postgres (docs/architecture.md, invariant 1). Every pending job
 * must have its BullMQ job in its machine queue: missing ones are added again under their
 * deterministic id (so a job still there is never duplicated). A pending job whose BullMQ job
 * already finished or failed (an agent error before the start, for instance) and that waits on
 * an online machine for longer than `staleMs` gets its BullMQ job replaced.
 *
 * Every machine with a pending job is also told again that it has work (dispatch/stops.ts,
 * MachineWorkMessage), so a robot's API replica that missed the first message still starts it.
 *
 * Running jobs need nothing from Redis (their runs write Postgres through the API; stops also travel
 * by pub/sub and by polling), and queue consumers are decided from Postgres by the sweeps.
 */
export interface ReconcileOptions {
  /** leave very young jobs to the API's own add (default 1000 ms) */
  minAgeMs?: number;
  /** when a pending job on an online machine counts as stuck (default 30 s) */
  staleMs?: number;
  /** jobs looked at per run (oldest first) */
  limit?: number;
  logger?: Logger;
}

interface PendingRow extends DispatchJobRef {
  attempt: number;
  machine_online: boolean;
  age_ms: number;
}

export async function reconcilePendingJobs(sql: Sql, dispatch: BullDispatch, opts: ReconcileOptions = {}): Promise<{ readded: number; replaced: number }> {
  const minAge = opts.minAgeMs ?? 1000;
  const stale = opts.staleMs ?? 30_000;
  const rows = await sql<PendingRow[]>`
    select j.id, j.tenant_id, j.machine_id, j.priority, j.attempt, j.not_before, j.sla_due_at,
           m.status = 'online' as machine_online,
           (extract(epoch from now() - j.created_at) * 1000)::float8 as age_ms
    from jobs j join machines m on m.id = j.machine_id
    where j.status = 'pending' and j.created_at < now() - make_interval(secs => ${minAge / 1000})
    order by j.created_at
    limit ${opts.limit ?? 5000}`;
  if (rows.length === 0) return { readded: 0, replaced: 0 };

  // machine queues hash to different cluster slots: existsMany groups what one node can answer
  const exists = await existsMany(dispatch.connection, rows.map((r) => dispatch.machineQueue(r.machine_id).toKey(bullJobId(r.id, r.attempt))));

  const missing = rows.filter((_, i) => !exists[i]);
  if (missing.length) await dispatch.jobsCreated(missing);

  let replaced = 0;
  const stuck = rows.filter((r, i) => exists[i] && r.machine_online && r.age_ms > stale && !(r.not_before && r.not_before.getTime() > Date.now())).slice(0, 200);
  for (const r of stuck) {
    const queue = dispatch.machineQueue(r.machine_id);
    const id = bullJobId(r.id, r.attempt);
    const state = await queue.getJobState(id);
    if (state === 'completed' || state === 'failed') {
      await queue.remove(id);
      await dispatch.jobsCreated([r]);
      replaced += 1;
    }
  }
  // a machine's robot reads its queue only while told there is work: a lost message costs at most a period
  await dispatch.publishMachineWork(rows);
  if (missing.length || replaced) opts.logger?.info('reconciled pending jobs', { readded: missing.length, replaced });
  return { readded: missing.length, replaced };
}
