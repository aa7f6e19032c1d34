import { es, type IdempotencyClaim, type OnJobCreated } from '@svc/core';
import { JobIdParams, JobListQuery, JobResponse, StopJobResponse, TriggerJobBody } from '@svc/core/schemas';
import type { AppRouter } from '../http/router';
import { routeGroup, type RouteContext, type RouteSpec } from '../http/route';
import { ok, paged, successBody } from '../http/respond';
import { idempotencyHeaderDoc, withIdempotency, type IdempotentResult } from '../http/idempotency';
import type { AppState } from '../http/state';

export const JOB_TRIGGER_SUCCESS_STATUS = 201;
/** What a route that triggers a job answers (this file's generic trigger, the webhook's). */
export const JOB_TRIGGER_ANSWERS = {
  response: JobResponse,
  successStatus: JOB_TRIGGER_SUCCESS_STATUS,
  errors: [404, 409, 422, 429],
  headers: [idempotencyHeaderDoc],
} satisfies Partial<RouteSpec>;

/**
 * Jobs through an API key: the generic trigger, list jobs, read one job, stop one job.
 * The rules (check order, quota, machine choice, transitions) are in core's jobs/service.
 */
export function jobRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc, { tags: ['jobs'] });
  const { deps } = rc;

  add(
    {
      method: 'post',
      path: '/jobs/trigger',
      operationId: 'triggerJob',
      summary: 'Trigger a job of a process',
      description:
        'Creates a pending job. Checks after the key: plan feature `api_keys` (403), monthly execution quota ' +
        '(429 `QUOTA_EXCEEDED`, consumed only when the job is created), active subscription (403), process active in ' +
        'the tenant (404), body (422), machine: an active machine of the tenant when `machine_id` is given ' +
        `(404 \`${es.jobs.machineNotFound}\`; it may be offline, the job then waits), else the least-loaded online ` +
        'active machine (409 `NO_MACHINE_AVAILABLE` when there is none). `input_data` is not validated against ' +
        'the process input_schema.',
      auth: { kind: 'api_key', scope: 'jobs:write', feature: 'api_keys' },
      body: TriggerJobBody,
      ...JOB_TRIGGER_ANSWERS,
    },
    async (ctx, input) => {
      const raw = input.peekBody() as { process_id?: unknown } | undefined;
      await withIdempotency(ctx, deps, 'jobs.trigger', raw, async (claim) => {
        const job = await deps.engine.jobs.triggerByApi(actorOf(ctx.state), {
          rawProcessId: raw && typeof raw === 'object' ? raw.process_id : undefined,
          body: input.body,
        }, recordIn(claim));
        return created(job);
      });
    },
  );

  // declared before /jobs/:job_id, which would take `list` for a malformed id
  add(
    {
      method: 'get',
      path: '/jobs/list',
      operationId: 'listJobs',
      summary: 'List jobs, newest first',
      description:
        'The workspace\'s jobs ordered by created_at desc, id desc, paged like /processes/list (meta.total exact). ' +
        'Filters combine: status, process_id, machine_id, input_data (a JSON object the job\'s input_data contains); an id the workspace does not have (another workspace\'s ' +
        'included) → 422 naming the filter. Each element is the whole JobResponse, as GET /jobs/{job_id} answers it.',
      auth: { kind: 'api_key', scope: 'jobs:read' },
      query: JobListQuery,
      response: JobResponse,
      paged: true,
      errors: [422],
    },
    async (ctx, input) => {
      const { data, meta } = await deps.engine.jobs.list(ctx.state.apiKey!.tenantId, input.query());
      paged(ctx, data, meta);
    },
  );

  add(
    {
      method: 'get',
      path: '/jobs/:job_id',
      operationId: 'getJob',
      summary: 'Read a job',
      description: 'The whole JobResponse. Another tenant\'s job answers 404 like a missing one.',
      auth: { kind: 'api_key', scope: 'jobs:read' },
      params: JobIdParams,
      response: JobResponse,
      errors: [404, 422],
    },
    async (ctx, input) => {
      const { job_id } = input.params();
      ok(ctx, await deps.engine.jobs.get(ctx.state.apiKey!.tenantId, job_id));
    },
  );

  add(
    {
      method: 'post',
      path: '/jobs/:job_id/stop',
      operationId: 'stopJob',
      summary: 'Stop a job',
      description:
        'No body. A pending job ends `stopped` at once (finished_at set); a running job gets `stop_requested: true` ' +
        'and stays `running` until its machine aborts it (it then ends `stopped`); a job waiting for input ' +
        '(`waiting_input`) ends `stopped` at once; a finished job (completed, ' +
        'failed, stopped, timed_out) answers 409. The response documents the contract\'s subset of job fields.',
      auth: { kind: 'api_key', scope: 'jobs:stop' },
      params: JobIdParams,
      response: StopJobResponse,
      errors: [404, 409, 422],
    },
    async (ctx, input) => {
      const { job_id } = input.params();
      const key = ctx.state.apiKey!;
      const actor = { actorType: 'api_key', actorId: key.keyId, source: 'api', requestId: ctx.state.requestId, ip: ctx.state.clientIp } as const;
      ok(ctx, await deps.engine.jobs.stop(key.tenantId, job_id, actor));
    },
  );

  return router;
}

/** The trigger's success response, as sent and as kept for Idempotency-Key repeats. */
export function created(job: JobResponse): IdempotentResult {
  return { status: JOB_TRIGGER_SUCCESS_STATUS, body: successBody(job) };
}

/** Stores the response with the job, in the job's transaction, when the request has a key. */
export function recordIn(claim: IdempotencyClaim): OnJobCreated | undefined {
  return claim.active ? (tx, job) => claim.record(tx, created(job)) : undefined;
}

export function actorOf(state: AppState) {
  return { tenantId: state.apiKey!.tenantId, apiKeyId: state.apiKey!.keyId, requestId: state.requestId, ip: state.clientIp };
}
