import type { Sql } from '../db/sql';
import { JOB_STATUS_TRANSITIONS as T, jobStatusInSql, jobStatusSql } from '../jobs/transitions';
import { recordEffects, jobsCreatedEffects } from '../outbox/effects';
import type { DispatchJobRef } from './port';
import { recordGoodbye } from '../machines/heartbeat';

/**
 * Which never-acknowledged runs go back: those of one machine (its robot left, or a fresh robot
 * process started), or those a sweep would otherwise end as lost (`lost`, a condition on the
 * job `j` and its machine `m`).
 */
export type HandBackScope = { machineId: string } | { lost: ReturnType<Sql> };

/**
 * A job the platform started and pushed to its robot as `job.start`, but that the robot never
 * acknowledged (`acknowledged_at`: `job.started`, or the run listed in a heartbeat), never ran:
 * the push was lost with the connection or the API replica that sent it, or reached a robot that
 * was leaving. Such a job goes back to pending and is handed out again, rather than failing for a
 * run that never happened. A job whose stop was requested is left to the sweeps, which end it
 * `stopped`. Runs in the caller's transaction; the jobs are enqueued again by their effect.
 */
export async function handBackUnacknowledged(tx: Sql, scope: HandBackScope): Promise<DispatchJobRef[]> {
  const where = 'machineId' in scope ? tx`j.machine_id = ${scope.machineId}` : scope.lost;
  const jobs = await tx<Array<DispatchJobRef & { attempt: number }>>`
    update jobs j
       set status = ${jobStatusSql(tx, T.handBack.to)}, started_at = null, timeout_at = null,
           lease_holder = null, lease_expires_at = null, updated_at = now()
      from machines m
     where m.id = j.machine_id and ${jobStatusInSql(tx, 'j.status', T.handBack.from)} and j.acknowledged_at is null
       and not j.stop_requested and (${where})
    returning j.id, j.tenant_id, j.machine_id, j.priority, j.sla_due_at, j.not_before, j.attempt`;
  await recordEffects(tx, jobsCreatedEffects(jobs.map((j) => ({ ...j }))));
  return jobs;
}

/**
 * The robot said bye (graceful shutdown), having ended every run it held: its machine is offline
 * now rather than after the timeout, and what was handed to it meanwhile, unacknowledged, goes back.
 */
export function machineLeft(sql: Sql, machineId: string): Promise<DispatchJobRef[]> {
  return sql.begin(async (tx) => {
    await recordGoodbye(tx, machineId);
    return handBackUnacknowledged(tx as unknown as Sql, { machineId });
  }) as Promise<DispatchJobRef[]>;
}
