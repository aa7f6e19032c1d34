import type { Sql } from '../db/sql';
import type { JobRow } from '../jobs/repo';
import { JOB_STATUS_TRANSITIONS as T, ACTIVE_JOB_STATUSES, jobStatusInSql, jobStatusSql } from '../jobs/transitions';
import { failOrphanedItems } from '../queue-items/transitions';
import { markSilentMachinesOffline } from '../machines/heartbeat';
import { recordAudit } from '../audit/audit';
import { endJobs, type EndedJobs, type JobEndOptions } from './job-end';
import { handBackUnacknowledged } from './hand-back';
import type { DispatchJobRef } from './port';
import { es, sqlFormat } from '../messages/server-messages';

/**
 * The dispatcher's periodic work, each step one guarded set statement whose statuses (the
 * guard's `from`, the `to` it writes) are taken from the job table (JOB_STATUS_TRANSITIONS).
 * Each runs in one transaction with what follows the jobs it ended (endJobs), so a retry, a
 * chain or an abort is never lost.
 */
// a lost run ends `failed`, or `stopped` when its stop was requested, under one guard: T.fail.from
if (T.fail.from.some((s) => !(T.stop.from as readonly string[]).includes(s))) throw new Error('job table: a run that may fail may not stop');

/** Messages the engine writes on items it fails (jobs' messages are built in the SQL below). */
export const DISPATCH_ITEM_MESSAGES = {
  robotLost: es.queues.robotLost,
  timedOut: es.queues.jobTimedOut,
  machineLost: es.queues.machineLost,
  runStalled: es.queues.runStalled,
};

/** The jobs a sweep ended, in one transaction with everything that follows them (endJobs). */
function endedBySweep(sql: Sql, abort: JobEndOptions['abort'], run: (tx: Sql) => Promise<{ rows: JobRow[]; itemMessage: (row: JobRow) => string }>): Promise<EndedJobs> {
  return sql.begin(async (tx) => {
    const { rows, itemMessage } = await run(tx as unknown as Sql);
    return endJobs(tx, rows, { itemMessage, abort });
  }) as Promise<EndedJobs>;
}

/**
 * `running → timed_out` for jobs past `timeout_at` (database clock). A job waiting for a
 * person's input is not timed out: its timeout is paused while it waits (docs/decisions/human-input.md).
 */
export function timeOutJobs(sql: Sql): Promise<EndedJobs> {
  return endedBySweep(sql, 'timeout', async (tx) => {
    const rows = await tx<Array<JobRow & { timeout_seconds: number }>>`
      update jobs j set status = ${jobStatusSql(tx, T.timeOut.to)}, finished_at = now(), updated_at = now(),
             error_message = format(${sqlFormat(es.jobs.timedOut)}::text, p.timeout_seconds)
        from processes p
       where ${jobStatusInSql(tx, 'j.status', T.timeOut.from)} and j.timeout_at <= now() and p.id = j.process_id
      returning j.*, p.timeout_seconds`;
    return { rows, itemMessage: () => DISPATCH_ITEM_MESSAGES.timedOut };
  });
}

/**
 * The agent heartbeated after the run's lease ran out: alive, but it let the run go (a job
 * waiting for input keeps its lease renewed by its agent like a running one). Not within
 * `offlineAfterSeconds` of a Postgres (re)start.
 */
function leaseLapsed(tx: Sql, offlineAfterSeconds: number) {
  return tx`j.lease_expires_at < now() and m.last_heartbeat_at > j.lease_expires_at
            and pg_postmaster_start_time() < now() - make_interval(secs => ${offlineAfterSeconds})`;
}

/**
 * Machines silent for `offlineAfterSeconds` become offline; then every job that cannot go on is
 * ended: the running jobs of offline machines, and running jobs whose lease lapsed although their
 * machine heartbeated since (the run died or hangs inside a live agent; see renewJobLeases; a
 * machine gone silent is the offline case, with its own message). A run its robot never
 * acknowledged never ran: it goes back to pending first (handBackUnacknowledged). A
 * running job → `stopped` when its stop was requested, else `failed` with a clear message (the
 * process's retry policy follows, and its items the queue's); pending consumer jobs of offline
 * machines → `stopped` so other machines can take the queue. Other pending jobs wait.
 *
 * Nothing is judged silent within `offlineAfterSeconds` of a Postgres (re)start: heartbeats and
 * renewals could not be written while it was down (docs/decisions/postgres-outages.md).
 */
export async function sweepOfflineMachines(sql: Sql, offlineAfterSeconds: number): Promise<EndedJobs & {
  offline: Array<{ id: string; tenant_id: string; name: string }>;
  handedBack: DispatchJobRef[];
}> {
  const offline = await markSilentMachinesOffline(sql, offlineAfterSeconds);
  const handedBack = await sql.begin((tx) => handBackUnacknowledged(tx as unknown as Sql, {
    lost: (tx as unknown as Sql)`(m.status = 'offline' or (${leaseLapsed(tx as unknown as Sql, offlineAfterSeconds)}))`,
  })) as DispatchJobRef[];
  const ended = await endedBySweep(sql, 'lost', async (tx) => {
    const rows = await tx<Array<JobRow & { machine_name: string; lease_lapsed: boolean }>>`
      update jobs j
         set status = case when ${jobStatusInSql(tx, 'j.status', T.fail.from)} and not j.stop_requested then ${jobStatusSql(tx, T.fail.to)}
                           -- a run whose stop was requested (stop), or a pending consumer (stopPending)
                           else ${jobStatusSql(tx, T.stop.to)} end,
             finished_at = now(), updated_at = now(), pending_input_prompt = null, pending_input_options = null,
             error_message = case
               when ${jobStatusInSql(tx, 'j.status', T.stopPending.from)} then format(${sqlFormat(es.jobs.machineOfflineBeforeConsumer)}::text, m.name)
               when j.stop_requested then j.error_message
               when m.status = 'offline' then format(${sqlFormat(es.jobs.machineStoppedHeartbeats)}::text, m.name)
               else format(${sqlFormat(es.jobs.leaseLapsed)}::text, m.name) end
        from machines m
       where m.id = j.machine_id
         and ((m.status = 'offline' and (${jobStatusInSql(tx, 'j.status', T.fail.from)} or (${jobStatusInSql(tx, 'j.status', T.stopPending.from)} and j.source = 'queue')))
              or (${jobStatusInSql(tx, 'j.status', T.fail.from)} and ${leaseLapsed(tx, offlineAfterSeconds)}))
      returning j.*, m.name as machine_name, m.status <> 'offline' as lease_lapsed`;
    return {
      rows,
      itemMessage: (r) => {
        const row = r as JobRow & { machine_name: string; lease_lapsed: boolean };
        return row.lease_lapsed ? DISPATCH_ITEM_MESSAGES.runStalled(row.machine_name) : DISPATCH_ITEM_MESSAGES.machineLost(row.machine_name);
      },
    };
  });
  return { ...ended, offline, handedBack };
}

/**
 * A (re)starting agent owns no running job: whatever Postgres says runs on its machine was lost
 * with the previous agent process. Ends them like a lost machine; those it never acknowledged
 * never ran and go back to pending (handBackUnacknowledged).
 */
export function giveUpMachineJobs(sql: Sql, machineId: string): Promise<EndedJobs> {
  // the agent asking is the one that would be told to stop: no abort
  return endedBySweep(sql, undefined, async (tx) => {
    await handBackUnacknowledged(tx, { machineId });
    const rows = await tx<Array<JobRow & { machine_name: string }>>`
      update jobs j
         set status = case when j.stop_requested then ${jobStatusSql(tx, T.stop.to)} else ${jobStatusSql(tx, T.fail.to)} end,
             finished_at = now(), updated_at = now(), pending_input_prompt = null, pending_input_options = null,
             error_message = case when j.stop_requested then j.error_message
               else format(${sqlFormat(es.jobs.agentRestarted)}::text, m.name) end
        from machines m
       where m.id = j.machine_id and j.machine_id = ${machineId} and ${jobStatusInSql(tx, 'j.status', T.fail.from)}
      returning j.*, m.name as machine_name`;
    return { rows, itemMessage: (r) => DISPATCH_ITEM_MESSAGES.machineLost((r as JobRow & { machine_name: string }).machine_name) };
  });
}

/** Items still `in_progress` under a job that is no longer active → failed. */
export function failOrphans(sql: Sql): Promise<string[]> {
  return failOrphanedItems(sql, DISPATCH_ITEM_MESSAGES.robotLost);
}

/** Running jobs whose stop was requested a while ago and that still run: publish again. */
export async function pendingStops(sql: Sql, olderThanMs: number): Promise<Array<{ id: string; machine_id: string }>> {
  return sql<Array<{ id: string; machine_id: string }>>`
    select id, machine_id from jobs
    where status = 'running' and stop_requested and updated_at < now() - make_interval(secs => ${olderThanMs / 1000})
    limit 1000`;
}

/**
 * SLA (process `sla_deadline_minutes` → job `sla_due_at`): a job still unfinished at its due
 * time is marked once (`sla_breached_at`), written to the tenant's audit log and logged.
 */
export async function markSlaBreaches(sql: Sql): Promise<Array<{ id: string; tenant_id: string; process_id: string; sla_due_at: Date }>> {
  return sql.begin(async (tx) => {
    const rows = await tx<Array<{ id: string; tenant_id: string; process_id: string; sla_due_at: Date; status: string }>>`
      update jobs set sla_breached_at = now()
      where ${jobStatusInSql(tx, 'status', ACTIVE_JOB_STATUSES)} and sla_due_at <= now() and sla_breached_at is null
      returning id, tenant_id, process_id, sla_due_at, status`;
    for (const r of rows) {
      await recordAudit(tx, {
        tenantId: r.tenant_id,
        actorType: 'system',
        action: 'sla_breach',
        source: 'dispatcher',
        resourceType: 'job',
        resourceId: r.id,
        details: { process_id: r.process_id, sla_due_at: r.sla_due_at.toISOString(), status: r.status },
      });
    }
    return rows;
  });
}
