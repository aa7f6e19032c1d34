import {
  DEADLINE_RISK_MINUTES, JobIdParams, JobInputBody, JobListQuery, JobLogsResponse, JobResponse, QueueItemListQuery, QueueItemResponse, QueuePathParams, QueueSeriesResponse, QueueStatsResponse, SeriesQuery, StopJobResponse,
  toJobResponse, toQueueItemResponse, toStopJobResponse,
} from '@svc/core';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok, paged } from '../../http/respond';
import { ADMIN, MEMBER, tenantOf, userActorOf } from './crud';

/**
 * The work itself for people signed in to the workspace (the console): a queue's items and the
 * jobs, with the same filters, order and bodies as the public routes. Every member may read; only
 * an admin may stop a job (docs/decisions/operator-reads.md).
 */
export function workSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { deps } = rc;

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/queues/:queue_id/items',
    operationId: 'listWorkspaceQueueItems',
    summary: 'List the items of a queue, newest first',
    description:
      'As GET /queues/by-name/{name}/items, for a queue of the workspace by id (active or not): ordered by created_at ' +
      'desc, id desc; filters status, reference (exact) and data (a JSON object the item\'s data contains); meta.total exact. Any member of the workspace.',
    tags: ['settings: queue items'],
    auth: MEMBER,
    params: QueuePathParams,
    query: QueueItemListQuery,
    response: QueueItemResponse,
    paged: true,
    errors: [404, 422],
  }, async (ctx, input) => {
    const queue = await deps.engine.catalog.queues.get(tenantOf(ctx), input.params().queue_id);
    const { rows, meta } = await deps.engine.items.list(queue, input.query());
    paged(ctx, rows.map(toQueueItemResponse), meta);
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/queues/:queue_id/stats',
    operationId: 'getQueueStats',
    summary: 'How a queue is doing',
    description:
      'Counts per status (exact, from counters), ready and postponed items, the oldest ready item, items at risk of ' +
      `missing their deadline (${DEADLINE_RISK_MINUTES} minutes or past), completions, failures and mean processing time ` +
      'over the last hour (per-minute buckets), and running consumers; each field is described in the schema. None of ' +
      'them is a count over the queue. Any member of the workspace; another workspace\'s queue → 404.',
    tags: ['settings: queues'],
    auth: MEMBER,
    params: QueuePathParams,
    response: QueueStatsResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const queue = await deps.engine.catalog.queues.get(tenantOf(ctx), input.params().queue_id);
    ok(ctx, await deps.engine.catalog.queues.stats(queue));
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/queues/:queue_id/series',
    operationId: 'getQueueSeries',
    summary: 'A queue over time',
    description:
      'Bucketed series for charts: items completed and failed, backlog and items in progress (per-minute samples taken by ' +
      'the dispatcher), and the 50th and 95th percentiles of processing time (a per-minute histogram). `window=hour` (default): ' +
      'the current minute and the 59 before; `window=day`: the last 24 hours by 5 minutes. The same buckets as the stats\' ' +
      'last-hour figures. Any member of the workspace; another workspace\'s queue → 404.',
    tags: ['settings: queues'],
    auth: MEMBER,
    params: QueuePathParams,
    query: SeriesQuery,
    response: QueueSeriesResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const queue = await deps.engine.catalog.queues.get(tenantOf(ctx), input.params().queue_id);
    ok(ctx, await deps.engine.catalog.queues.series(queue, input.query()));
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/jobs',
    operationId: 'listWorkspaceJobs',
    summary: 'List jobs, newest first',
    description: 'As GET /jobs/list: filters status, process_id, machine_id (an id the workspace does not have → 422), input_data (JSON containment). Any member of the workspace.',
    tags: ['settings: jobs'],
    auth: MEMBER,
    query: JobListQuery,
    response: JobResponse,
    paged: true,
    errors: [422],
  }, async (ctx, input) => {
    const { rows, meta } = await deps.engine.jobs.list(tenantOf(ctx), input.query());
    paged(ctx, rows.map(toJobResponse), meta);
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/jobs/:job_id',
    operationId: 'getWorkspaceJob',
    summary: 'Read a job',
    description: 'The whole JobResponse, as GET /jobs/{job_id}. Another workspace\'s job answers 404. Any member of the workspace.',
    tags: ['settings: jobs'],
    auth: MEMBER,
    params: JobIdParams,
    response: JobResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, toJobResponse(await deps.engine.jobs.get(tenantOf(ctx), input.params().job_id)));
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/jobs/:job_id/logs',
    operationId: 'readJobLogs',
    summary: 'Read a job\'s whole log',
    description:
      'The full text of the job\'s log, wherever it lives: inline while the job runs and until LOG_RETENTION_DAYS after ' +
      'it ended, then from the archive (`archived: true`, the JobResponse then has `logs: null`). Not capped like the ' +
      'JobResponse\'s `logs`; a log keeps at most its first 1 MiB (`dropped_bytes` counts what came after). Any member ' +
      'of the workspace; another workspace\'s job answers 404.',
    tags: ['settings: jobs'],
    auth: MEMBER,
    params: JobIdParams,
    response: JobLogsResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await deps.engine.jobs.logs(tenantOf(ctx), input.params().job_id));
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/jobs/:job_id/stop',
    operationId: 'stopWorkspaceJob',
    summary: 'Stop a job',
    description:
      'As POST /jobs/{job_id}/stop: a pending job ends `stopped` at once, a running one gets `stop_requested` and its ' +
      'machine aborts it, one waiting for input ends `stopped` at once, a finished one answers 409. No body. Audited as `stop_job`.',
    tags: ['settings: jobs'],
    auth: ADMIN,
    params: JobIdParams,
    response: StopJobResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    const { job_id } = input.params();
    ok(ctx, toStopJobResponse(await deps.engine.jobs.stop(tenantOf(ctx), job_id, userActorOf(ctx))));
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/jobs/:job_id/input',
    operationId: 'answerJobInput',
    summary: 'Answer a job waiting for input',
    description:
      'A job in `waiting_input` asked a person for a value (`pending_input_prompt`, `pending_input_options`). The value ' +
      'must be one of `pending_input_options.choices` (compared as JSON) or valid against `pending_input_options.schema`, ' +
      'else 422 naming `value`; a job that is not waiting answers 409 (checked after the body\'s shape). The job runs ' +
      'again (`running`, prompt and options cleared, its timeout running again with the time it had left) and its robot ' +
      'receives the value at once. Audited as `answer_job_input` (without the value). Another workspace\'s job → 404.',
    tags: ['settings: jobs'],
    auth: ADMIN,
    params: JobIdParams,
    body: JobInputBody,
    response: JobResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    const { job_id } = input.params();
    ok(ctx, toJobResponse(await deps.engine.jobs.answerInput(tenantOf(ctx), job_id, () => input.body(), userActorOf(ctx))));
  });

  return router;
}
