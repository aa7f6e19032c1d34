import type { Queryable, Sql } from '../db/sql';
import type { Logger } from '../logger';
import { recordEffect } from '../outbox/effects';
import { inTransactionPublishingAtOnce, type AtOnceDeps } from '../outbox/at-once';
import { ConflictError, NoMachineAvailableError, NotFoundError, ValidationError, type AppError } from '../errors';
import { isUuid } from '../ids';
import { recordAudit } from '../audit/audit';
import type { AuditActor } from '../audit/catalog-changes';
import { assertQuotaAvailable, assertSubscriptionActive, consumeExecution, quotaExceeded } from '../tenants/quota';
import { checkInputAgainstSchema } from './input-schema';
import { countJobs, findJobWithNames, insertJob, listJobsWithNames, loadTriggerContext, tenantHasProcessAndMachine, type JobFilter, type JobRow, type JobWithNames } from './repo';
import type { JobListQuery } from './schemas';
import { pageMeta, type PageMeta } from '../validation/formats';
import { parseContainmentFilter } from '../validation/containment-filter';
import { isFinalJobStatus, requestRunningJobStop, transitionJob } from './transitions';
import { endJobs } from '../dispatch/job-end';
import { es } from '../messages/server-messages';

/** Items a consumer job still held when it was stopped while waiting for input. */
export const STOPPED_WHILE_WAITING_ITEM_MESSAGE = es.queues.stoppedWhileWaiting;

export interface JobServiceDeps extends AtOnceDeps {
  sql: Sql;
  logger?: Logger;
}

/**
 * Runs inside the trigger's transaction once the job exists, e.g. to store an Idempotency-Key's
 * response so the job and its recorded response commit together. Throwing rolls everything back.
 */
export type OnJobCreated = (tx: Queryable, job: JobWithNames) => Promise<void>;

/**
 * Who triggers: an API key of one tenant (the public and webhook triggers), or a person signed in
 * to the workspace (the console's trigger). The tenant comes from the credential.
 */
export type TriggerActor = {
  tenantId: string;
  requestId?: string | null;
  ip?: string | null;
} & ({ apiKeyId: string; userId?: undefined } | { userId: string; apiKeyId?: undefined });

export const PROCESS_NOT_FOUND_MESSAGE = es.jobs.processNotFound;
export const MACHINE_NOT_FOUND_MESSAGE = es.jobs.machineNotFound;
export const WEBHOOK_MACHINE_INVALID_MESSAGE = es.jobs.webhookMachineInvalid;

interface TriggerSpec {
  source: 'api' | 'webhook' | 'console';
  /** The process id as sent, for the one read that precedes validation (may be anything). */
  rawProcessId: unknown;
  /** The validated process id; throws 422 when it is not a UUID. */
  processId(): string;
  /** Validates the body (throws 422); called only after the process is known to exist. */
  body(): { machine_id?: string | null; input_data?: Record<string, unknown> | null; priority?: number };
  validateInput: boolean;
  /** The error when the named machine is missing, another tenant's or inactive. */
  machineError(): AppError;
  onCreated?: OnJobCreated;
}

/**
 * One trigger, checks in the public error order: [401, 429 rate limit and the plan's
 * feature are the route's] → monthly quota (429 QUOTA_EXCEEDED) → subscription (403) → process
 * exists in the tenant and is active (404) → body (422) → input_schema (422, webhook only) →
 * machine. The job insert, the quota consumption and the audit row are one transaction, so a
 * trigger that fails at any step consumes nothing. The quota is read first (for the order) and
 * consumed last with a guarded UPDATE (for exactness under concurrency).
 */
async function trigger(deps: JobServiceDeps, actor: TriggerActor, spec: TriggerSpec): Promise<JobWithNames> {
  const { sql } = deps;
  const ctx = await loadTriggerContext(sql, actor.tenantId, isUuid(spec.rawProcessId) ? spec.rawProcessId : null);
  if (!ctx) throw new NotFoundError();
  const usage = { monthly_quota: ctx.monthly_quota, quota_used: ctx.period_used, period_start: ctx.period_start };
  assertQuotaAvailable(usage);
  assertSubscriptionActive(ctx.subscription_status);
  const processId = spec.processId();
  const process = ctx.process;
  if (!process || process.id !== processId.toLowerCase() || !process.is_active) throw new NotFoundError(PROCESS_NOT_FOUND_MESSAGE);
  const body = spec.body();
  if (spec.validateInput) checkInputAgainstSchema(process.input_schema, body.input_data);
  const machineId = body.machine_id ?? null;

  // the statements of each step go out together on the transaction's connection (one round
  // trip, not one each): the trigger's latency is a job's time to start
  const job = await inTransactionPublishingAtOnce(deps, async (tx) => {
    const [created, consumed] = await Promise.all([
      insertJob(tx, {
        tenantId: actor.tenantId,
        processId: process.id,
        machineId,
        priority: body.priority ?? 3,
        inputData: body.input_data ?? null,
        source: spec.source,
        slaDeadlineMinutes: process.sla_deadline_minutes,
      }),
      consumeExecution(tx, actor.tenantId),
    ]);
    // the machine's error before the quota's, as when they ran one after the other
    if (!created) throw machineId === null ? new NoMachineAvailableError() : spec.machineError();
    if (!consumed) throw quotaExceeded({ ...usage, quota_used: Math.max(usage.quota_used, usage.monthly_quota) });
    // sla_due_at lets the engine put an SLA-bound job first among equals on its machine
    const ref = { id: created.id, tenant_id: created.tenant_id, machine_id: created.machine_id, priority: created.priority, sla_due_at: created.sla_due_at, not_before: created.not_before };
    await Promise.all([recordAudit(tx, {
      tenantId: actor.tenantId,
      actorType: actor.userId !== undefined ? 'user' : 'api_key',
      actorId: actor.userId ?? actor.apiKeyId,
      action: 'trigger_job',
      source: spec.source,
      resourceType: 'job',
      resourceId: created.id,
      details: { process_id: process.id, machine_id: created.machine_id, priority: created.priority },
      requestId: actor.requestId ?? null,
      ip: actor.ip ?? null,
    }), recordEffect(tx, { kind: 'jobs-created', jobs: [ref] }), spec.onCreated?.(tx, created)]);
    return created;
  });
  return job;
}

/** POST /jobs/trigger: machine optional (auto-selected), priority settable, input not validated. */
export function triggerJobByApi(
  deps: JobServiceDeps,
  actor: TriggerActor,
  req: { rawProcessId: unknown; body(): { process_id: string; machine_id?: string | null; input_data?: Record<string, unknown> | null; priority?: number } },
  onCreated?: OnJobCreated,
): Promise<JobWithNames> {
  return trigger(deps, actor, {
    source: 'api',
    rawProcessId: req.rawProcessId,
    processId: () => (isUuid(req.rawProcessId) ? req.rawProcessId : req.body().process_id),
    body: req.body,
    validateInput: false,
    machineError: () => new NotFoundError(MACHINE_NOT_FOUND_MESSAGE),
    onCreated,
  });
}

/**
 * POST /settings/jobs, a person in the console: as the generic trigger (machine optional, priority
 * settable), and the input checked against the process's input_schema, since the console's form
 * is made from it; a machine that is not the workspace's, or inactive, is a 422 on the field.
 */
export function triggerJobByUser(
  deps: JobServiceDeps,
  actor: TriggerActor & { userId: string },
  req: { rawProcessId: unknown; body(): { process_id: string; machine_id?: string | null; input_data?: Record<string, unknown> | null; priority?: number } },
  onCreated?: OnJobCreated,
): Promise<JobWithNames> {
  return trigger(deps, actor, {
    source: 'console',
    rawProcessId: req.rawProcessId,
    processId: () => (isUuid(req.rawProcessId) ? req.rawProcessId : req.body().process_id),
    body: req.body,
    validateInput: true,
    machineError: () => ValidationError.single(['body', 'machine_id'], WEBHOOK_MACHINE_INVALID_MESSAGE, 'reference'),
    onCreated,
  });
}

/** POST /webhooks/trigger/{process_id}: machine required, default priority, input_schema checked. */
export function triggerJobByWebhook(
  deps: JobServiceDeps,
  actor: TriggerActor,
  req: { rawProcessId: string; processId(): string; body(): { machine_id: string; input_data?: Record<string, unknown> | null } },
  onCreated?: OnJobCreated,
): Promise<JobWithNames> {
  return trigger(deps, actor, {
    source: 'webhook',
    rawProcessId: req.rawProcessId,
    processId: req.processId,
    body: () => ({ ...req.body(), priority: 3 }),
    validateInput: true,
    machineError: () => ValidationError.single(['body', 'machine_id'], WEBHOOK_MACHINE_INVALID_MESSAGE, 'reference'),
    onCreated,
  });
}

export async function getJob(sql: Sql, tenantId: string, id: string): Promise<JobWithNames> {
  const job = await findJobWithNames(sql, tenantId, id);
  if (!job) throw new NotFoundError(es.jobs.notFound);
  return job;
}

/**
 * GET /jobs/list: a page of the tenant's jobs, newest first, each the full JobResponse. A
 * process_id or machine_id the workspace does not have is a 422 naming the filter (a list that
 * is merely empty would hide a typo); another tenant's id is just as unknown
 * (docs/decisions/operator-reads.md).
 */
/** The list's (and the export's) filters, checked: a process or machine id the workspace does not have is a 422. */
export async function resolveJobFilter(sql: Sql, tenantId: string, query: Omit<JobListQuery, 'page' | 'limit'>): Promise<JobFilter> {
  const filter = {
    status: query.status, process_id: query.process_id, machine_id: query.machine_id, input_data: parseContainmentFilter(query.input_data, 'input_data'),
  };
  if (filter.process_id !== undefined || filter.machine_id !== undefined) {
    const known = await tenantHasProcessAndMachine(sql, tenantId, filter.process_id ?? null, filter.machine_id ?? null);
    if (filter.process_id !== undefined && !known.process) {
      throw ValidationError.single(['query', 'process_id'], es.jobs.notAProcessOfWorkspace, 'unknown_id');
    }
    if (filter.machine_id !== undefined && !known.machine) {
      throw ValidationError.single(['query', 'machine_id'], es.jobs.notAMachineOfWorkspace, 'unknown_id');
    }
  }
  return filter;
}

export async function listJobs(sql: Sql, tenantId: string, query: JobListQuery): Promise<{ rows: JobWithNames[]; meta: PageMeta }> {
  const page = query.page ?? 1;
  const limit = query.limit ?? 20;
  const filter = await resolveJobFilter(sql, tenantId, query);
  const [rows, total] = await Promise.all([
    listJobsWithNames(sql, tenantId, filter, limit, (page - 1) * limit),
    countJobs(sql, tenantId, filter),
  ]);
  return { rows, meta: pageMeta(page, limit, total) };
}

/**
 * POST /jobs/{job_id}/stop: pending → stopped at once; running → stop_requested (the engine
 * aborts it and ends it `stopped`); waiting_input → stopped at once, with what follows an end
 * (endJobs) and a `job-stop` effect so its robot stops waiting; finished → 409. Each write is guarded, and a job that moved
 * under us is read again (statuses only move forward, so this ends within three rounds).
 */
/**
 * Stops one active job in the caller's transaction, as it was read (`status` is the guard): a
 * pending job or one waiting for input ends `stopped` at once, a running one is asked to stop and
 * its agent aborts it. Null when the job moved on since it was read.
 */
export async function stopActiveJob(tx: Queryable, tenantId: string, job: { id: string; status: string }): Promise<JobRow | null> {
  const { id } = job;
  const stopped = job.status === 'pending'
    ? await transitionJob(tx, { id, tenantId, from: 'pending', to: 'stopped', set: { stop_requested: true } })
    : job.status === 'waiting_input'
      ? await transitionJob(tx, {
        id, tenantId, from: 'waiting_input', to: 'stopped',
        set: { stop_requested: true, pending_input_prompt: null, pending_input_options: null },
      })
      : job.status === 'running' ? await requestRunningJobStop(tx, id, tenantId) : null;
  if (!stopped) return null;
  if (job.status === 'waiting_input') await endJobs(tx, [stopped], { itemMessage: () => STOPPED_WHILE_WAITING_ITEM_MESSAGE });
  if (job.status !== 'pending') await recordEffect(tx, { kind: 'job-stop', job_id: stopped.id, machine_id: stopped.machine_id });
  return stopped;
}

export async function stopJob(deps: JobServiceDeps, tenantId: string, id: string, actor?: AuditActor): Promise<JobWithNames> {
  for (let round = 0; round < 3; round++) {
    const job = await getJob(deps.sql, tenantId, id);
    if (isFinalJobStatus(job.status)) {
      throw new ConflictError(es.jobs.alreadyEnded(job.status), { status: job.status });
    }
    const names = { process_name: job.process_name, machine_name: job.machine_name };
    const row = await inTransactionPublishingAtOnce(deps, async (tx) => {
      const stopped = await stopActiveJob(tx, tenantId, job);
      if (stopped && actor) {
        await recordAudit(tx, {
          ...actor, tenantId, action: 'stop_job', resourceType: 'job', resourceId: id, details: { from: job.status, to: stopped.status },
        });
      }
      return stopped;
    });
    if (row) return { ...row, ...names };
  }
  throw new ConflictError(es.jobs.changedDuringRequest);
}
