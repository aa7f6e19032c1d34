import type { Sql, Tx } from '../db/sql';
import { recordAudit } from '../audit/audit';
import { insertJob, loadTriggerContext } from '../jobs/repo';
import { recordEffect } from '../outbox/effects';
import { consumeExecution, isSubscriptionActive } from '../tenants/quota';
import type { ScheduleRow } from '../catalog/schedules';
import { nextTick, ticksBetween } from './cron';
import { es } from '../messages/server-messages';

/**
 * The schedules' fire loop (docs/decisions/schedules.md), run by the dispatchers every second.
 *
 * Exactly one job per tick, whatever the number of replicas: each schedule is handled in its own
 * transaction that takes its row `FOR UPDATE SKIP LOCKED` (a replica never waits for another,
 * it moves on to the next due schedule), creates the jobs of its due ticks with their audit rows,
 * quota consumption and `jobs-created` effect, and advances `next_run_at` with a guarded update,
 * all committed together. A crash before the commit leaves the tick due; after it, the tick is
 * gone and its job exists. The unique index on jobs(schedule_id, scheduled_for) is a second guard.
 *
 * None lost while every dispatcher was down: `next_run_at` stays in the past until a replica
 * comes back. A tick at most `graceSeconds` late is simply late and fires. When the oldest due
 * tick is later than that, the schedule missed its runs: `skip` starts no job for them and
 * `run_once` starts one (recorded under the first missed tick); both go on from the next future
 * tick, and the audit log says what happened.
 *
 * A run the engine refuses (monthly quota used up, no machine available, process or
 * subscription inactive) creates nothing and consumes nothing, but is recorded: an audit row
 * `refuse_scheduled_run` and the schedule's `last_error`/`last_error_at`. It is not retried: the
 * next tick is the next chance.
 */

export interface FireOptions {
  /** How late a tick may fire before it counts as missed. */
  graceSeconds: number;
  /** Most schedules handled in one pass (the rest wait for the next second). */
  maxSchedules?: number;
}

export type RefusalReason = 'quota_exceeded' | 'no_machine' | 'process_inactive' | 'subscription_inactive' | 'invalid_cron';

export interface FireResult {
  fired: Array<{ schedule_id: string; job_id: string; tick: Date }>;
  refused: Array<{ schedule_id: string; tick: Date; reason: RefusalReason }>;
  /** Schedules whose missed ticks were skipped (missed_runs `skip`). */
  skipped: Array<{ schedule_id: string; from: Date; until: Date }>;
}

/** Most ticks of one schedule fired in one transaction (only a seconds cron that fell behind has more). */
const MAX_TICKS_PER_PASS = 10;

const REFUSAL_MESSAGES: Record<RefusalReason, string> = es.schedules.refused;

class Refused extends Error {
  constructor(readonly reason: RefusalReason) {
    super(reason);
  }
}

const SCHEDULE_ACTOR = { actorType: 'system', source: 'schedule' } as const;

/** One pass: every due schedule (up to maxSchedules), each in its own transaction. */
export async function fireDueSchedules(sql: Sql, opts: FireOptions): Promise<FireResult> {
  const result: FireResult = { fired: [], refused: [], skipped: [] };
  const max = opts.maxSchedules ?? 200;
  for (let i = 0; i < max; i++) {
    const handled = await sql.begin((tx) => fireOne(tx, opts, result));
    if (!handled) break;
  }
  return result;
}

async function fireOne(tx: Tx, opts: FireOptions, result: FireResult): Promise<boolean> {
  const [s] = await tx<Array<ScheduleRow & { db_now: Date }>>`
    select s.*, now() as db_now from schedules s
    where s.is_active and s.next_run_at <= now()
    order by s.next_run_at, s.id
    limit 1
    for update skip locked`;
  if (!s) return false;
  const due = s.next_run_at!;
  const now = s.db_now;

  let following: Date | null;
  let ticks: Date[];
  try {
    if (now.getTime() - due.getTime() <= opts.graceSeconds * 1000) {
      // late by less than the grace: each due tick is a run of its own
      ticks = [due, ...ticksBetween(s.cron, s.timezone, due, now, MAX_TICKS_PER_PASS - 1)];
      following = ticks.length === MAX_TICKS_PER_PASS ? nextTick(s.cron, s.timezone, ticks[ticks.length - 1]!) : nextTick(s.cron, s.timezone, now);
    } else {
      // missed while no dispatcher ran: go on from the next future tick
      ticks = s.missed_runs === 'run_once' ? [due] : [];
      following = nextTick(s.cron, s.timezone, now);
      if (s.missed_runs === 'skip') {
        result.skipped.push({ schedule_id: s.id, from: due, until: now });
        await recordAudit(tx, {
          ...SCHEDULE_ACTOR, tenantId: s.tenant_id, action: 'skip_scheduled_runs', resourceType: 'schedule', resourceId: s.id,
          details: { missed_runs: 'skip', first_missed: due.toISOString(), until: now.toISOString() },
        });
      }
    }
  } catch {
    // the stored expression no longer reads (it was valid when saved): stop it, say why
    await refuse(tx, s, due, 'invalid_cron', result);
    await tx`
      update schedules set next_run_at = null, last_error = ${REFUSAL_MESSAGES.invalid_cron}, last_error_at = ${due}, updated_at = now()
      where id = ${s.id} and next_run_at = ${due}`;
    return true;
  }

  let lastRun: { tick: Date; jobId: string } | null = null;
  let lastRefusal: { tick: Date; reason: RefusalReason } | null = null;
  for (const tick of ticks) {
    try {
      const jobId = await tx.savepoint((sp) => createScheduledJob(sp as unknown as Tx, s, tick));
      lastRun = { tick, jobId };
      result.fired.push({ schedule_id: s.id, job_id: jobId, tick });
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      lastRefusal = { tick, reason: err.reason };
      await refuse(tx, s, tick, err.reason, result);
    }
  }

  // a refusal after the last run is what the operator needs to see; a run after it clears it
  const refusalStands = lastRefusal !== null && (lastRun === null || lastRefusal.tick > lastRun.tick);
  await tx`
    update schedules set
      next_run_at = ${following},
      last_run_at = coalesce(${lastRun?.tick ?? null}::timestamptz, last_run_at),
      last_job_id = coalesce(${lastRun?.jobId ?? null}::uuid, last_job_id),
      last_error = case when ${refusalStands} then ${refusalStands ? REFUSAL_MESSAGES[lastRefusal!.reason] : null}::text
                        when ${lastRun !== null} then null else last_error end,
      last_error_at = case when ${refusalStands} then ${refusalStands ? lastRefusal!.tick : null}::timestamptz
                           when ${lastRun !== null} then null else last_error_at end
    where id = ${s.id} and next_run_at = ${due}`;
  return true;
}

/** One run of one tick, as a trigger makes it: process, machine, quota, audit row, effect. */
async function createScheduledJob(tx: Tx, s: ScheduleRow, tick: Date): Promise<string> {
  const ctx = await loadTriggerContext(tx, s.tenant_id, s.process_id);
  if (!ctx || !isSubscriptionActive(ctx.subscription_status)) throw new Refused('subscription_inactive');
  if (!ctx.process || !ctx.process.is_active) throw new Refused('process_inactive');
  const job = await insertJob(tx, {
    tenantId: s.tenant_id,
    processId: s.process_id,
    machineId: s.machine_id,
    priority: s.priority,
    inputData: s.input_data,
    source: 'schedule',
    slaDeadlineMinutes: ctx.process.sla_deadline_minutes,
    scheduleId: s.id,
    scheduledFor: tick,
  });
  if (!job) throw new Refused('no_machine');
  // consumed last, like every trigger: the savepoint's rollback gives a refused run's job back
  if (!(await consumeExecution(tx, s.tenant_id))) throw new Refused('quota_exceeded');
  await recordAudit(tx, {
    ...SCHEDULE_ACTOR, tenantId: s.tenant_id, action: 'trigger_job', resourceType: 'job', resourceId: job.id,
    details: { schedule_id: s.id, process_id: s.process_id, machine_id: job.machine_id, priority: job.priority, tick: tick.toISOString() },
  });
  await recordEffect(tx, {
    kind: 'jobs-created',
    jobs: [{ id: job.id, tenant_id: job.tenant_id, machine_id: job.machine_id, priority: job.priority, sla_due_at: job.sla_due_at, not_before: job.not_before }],
  });
  return job.id;
}

async function refuse(tx: Tx, s: ScheduleRow, tick: Date, reason: RefusalReason, result: FireResult): Promise<void> {
  result.refused.push({ schedule_id: s.id, tick, reason });
  await recordAudit(tx, {
    ...SCHEDULE_ACTOR, tenantId: s.tenant_id, action: 'refuse_scheduled_run', resourceType: 'schedule', resourceId: s.id,
    details: { reason, tick: tick.toISOString(), process_id: s.process_id, machine_id: s.machine_id },
  });
}
