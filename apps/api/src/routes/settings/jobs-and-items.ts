import {
  DEADLINE_RISK_MINUTES, JobExportQuery, JobExportRecord, JobIdParams, JobInputBody, JobListQuery, QueueItemExportQuery, JobLogsResponse, JobResponse, QueueItemListQuery, QueueItemResponse, QueuePathParams, QueueSeriesResponse, QueueStatsResponse, SeriesQuery, StopJobResponse, TriggerJobBody,
} from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok, paged } from '../../http/respond';
import { ADMIN, MEMBER, tenantOf, userActorOf } from './crud';
import { EXPORT_RATE_LIMIT, exportFormatOf, sendDownload } from '../../http/download';
import { ITEMS_EXPORT_DESCRIPTION } from '../queue-items';
import { created, JOB_TRIGGER_ANSWERS, recordIn } from '../jobs';
import { withIdempotency } from '../../http/idempotency';

/**
 * The work itself for people signed in to the workspace (the console): a queue's items and the
 * jobs, with the same filters, order and bodies as the public routes. Every member may read; only
 * an admin may stop a job (docs/decisions/operator-reads.md).
 */
export function jobsAndItemsSettingsRoutes(rc: RouteContext): AppRouter {
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
    const queue = await deps.engine.catalog.queues.ref(tenantOf(ctx), input.params().queue_id);
    const { data, meta } = await deps.engine.items.list(queue, input.query());
    paged(ctx, data, meta);
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/queues/:queue_id/items/export',
    operationId: 'exportWorkspaceQueueItems',
    summary: 'Download every item of a queue that matches the filters',
    description: `As GET /queues/by-name/{name}/items/export, for a queue of the workspace by id (active or not). ${ITEMS_EXPORT_DESCRIPTION} Any member of the workspace.`,
    tags: ['settings: queue items'],
    auth: MEMBER,
    params: QueuePathParams,
    query: QueueItemExportQuery,
    download: { record: QueueItemResponse },
    rateLimit: EXPORT_RATE_LIMIT,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    const queue = await deps.engine.catalog.queues.ref(tenantOf(ctx), input.params().queue_id);
    const query = input.query();
    const format = exportFormatOf(ctx, query);
    sendDownload(ctx, await deps.engine.items.export(queue, query, format), format, `items-${queue.name}`);
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
      'them is a count over the queue. `forecast`: whether the ready items make their deadlines at the current pace (the ' +
      'median handling time of the last hour, the consumers that can work now, the take order), read over the first ' +
      'ready items in take order. Any member of the workspace; another workspace\'s queue → 404.',
    tags: ['settings: queues'],
    auth: MEMBER,
    params: QueuePathParams,
    response: QueueStatsResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const queue = await deps.engine.catalog.queues.ref(tenantOf(ctx), input.params().queue_id);
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
    const queue = await deps.engine.catalog.queues.ref(tenantOf(ctx), input.params().queue_id);
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
    const { data, meta } = await deps.engine.jobs.list(tenantOf(ctx), input.query());
    paged(ctx, data, meta);
  });

  // declared before /settings/jobs/:job_id, which would take `export` for a malformed id
  addRoute(router, rc, {
    method: 'get',
    path: '/settings/jobs/export',
    operationId: 'exportWorkspaceJobs',
    summary: 'Download every job that matches the filters',
    description:
      'Every job the list\'s filters match (status, process_id, machine_id, input_data: as GET /settings/jobs, without ' +
      'paging), newest first (created_at desc, id desc), each a JobResponse without `logs` (read a log with GET ' +
      '/settings/jobs/{job_id}/logs), as NDJSON (one a line) or CSV (a header line, then one row per job; objects as JSON ' +
      'text, empty for null; a text cell starting with = + - @, a tab or a carriage return gets a leading apostrophe). ' +
      'Format: `format` (csv|ndjson), else the Accept header, else NDJSON. A failure once the download has begun cuts the ' +
      'transfer short. `include_archived=true` adds the jobs retention archived that match the filters, after the live ones ' +
      '(each record marked `archived`; 409 when the API has no archive configured). Any member of the workspace. ' +
      'See docs/decisions/export.md.',
    tags: ['settings: jobs'],
    auth: MEMBER,
    query: JobExportQuery,
    download: { record: JobExportRecord },
    rateLimit: EXPORT_RATE_LIMIT,
    errors: [409, 422],
  }, async (ctx, input) => {
    const query = input.query();
    const format = exportFormatOf(ctx, query);
    sendDownload(ctx, await deps.engine.jobs.export(tenantOf(ctx), query, format), format, 'jobs');
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
    ok(ctx, await deps.engine.jobs.get(tenantOf(ctx), input.params().job_id));
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
    path: '/settings/jobs',
    operationId: 'triggerWorkspaceJob',
    summary: 'Trigger a job of a process',
    description:
      'As POST /jobs/trigger, for a workspace admin in the console: the same checks in the same order (monthly quota ' +
      '429, subscription 403, process 404, body 422, machine: omitted or null = the least-loaded online machine, 409 ' +
      'when none), and `input_data` is checked against the process\'s input_schema as the webhook trigger does (422 ' +
      'naming each field under `input_data`): the console\'s form is made from that schema. A machine that is not an ' +
      'active machine of the workspace → 422 on `machine_id`. Audited as `trigger_job` by the user; source `console`.',
    tags: ['settings: jobs'],
    auth: ADMIN,
    body: TriggerJobBody,
    ...JOB_TRIGGER_ANSWERS,
  }, async (ctx, input) => {
    const raw = input.peekBody() as { process_id?: unknown } | undefined;
    const user = ctx.state.user!;
    await withIdempotency(ctx, deps, 'jobs.trigger.console', raw, async (claim) => {
      const job = await deps.engine.jobs.triggerByUser(
        { tenantId: user.tenantId, userId: user.userId, requestId: ctx.state.requestId, ip: ctx.state.clientIp },
        { rawProcessId: raw && typeof raw === 'object' ? raw.process_id : undefined, body: input.body },
        recordIn(claim),
      );
      return created(job);
    });
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
    ok(ctx, await deps.engine.jobs.stop(tenantOf(ctx), job_id, userActorOf(ctx)));
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
    ok(ctx, await deps.engine.jobs.answerInput(tenantOf(ctx), job_id, () => input.body(), userActorOf(ctx)));
  });

  return router;
}
