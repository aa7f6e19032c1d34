import { Type } from '@sinclair/typebox';
import type { AuditActor, BulkAsked, Engine } from '@svc/core';
import {
  BULK_ACTION_CHUNK, BULK_ACTION_MAX_IDS, BulkActionParams, BulkActionResponse, BulkDryRunResponse, ItemActionBody, JobActionBody, QueueNameParams, QueuePathParams,
} from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { ok, successBody } from '../http/respond';
import { idempotencyHeaderDoc, withIdempotency } from '../http/idempotency';
import type { Ctx } from './settings/crud';
import { ADMIN, MEMBER, tenantOf, userActorOf } from './settings/crud';

/**
 * Bulk actions by filter (docs/decisions/bulk-actions.md): on a queue's items for API keys
 * (queues:write) and workspace admins, on the workspace's jobs for its admins; reading and
 * cancelling one. The rules live in core (bulk/).
 */
const AskResponse = Type.Union([BulkActionResponse, BulkDryRunResponse]);

const ITEM_ACTIONS_TEXT =
  'Acts on every item of the queue that matches `filter` (status, reference, data containment, created_after, created_before; ' +
  `an empty filter is every item) or on up to ${BULK_ACTION_MAX_IDS} \`ids\`, never both. redrive: dead_letter → new with ` +
  'retry_count 0; retry: dead_letter → new keeping retry_count (one more attempt); delete: removes items not in progress; ' +
  'set_priority (`priority`) and postpone (`postpone`, null clears it): items not in progress and not completed. Only the ' +
  'items the action can change count, and only those created up to the moment it was asked for. `dry_run: true` answers ' +
  `{dry_run, total} and changes nothing. Otherwise the action is recorded with one audit row and answered: up to ${BULK_ACTION_CHUNK} ` +
  'items it ends within the request (status completed); more run in the background in chunks that commit one by one ' +
  '(status pending or running, `done` / `total` as progress; read it with the action\'s GET, stop it with its cancel).';

/** A small action is created leased to the request, which runs it before it answers. */
const RUN_HERE = { runHere: true } as const;

/** Runs a small action within the request, so that its answer already says it is done. */
async function answer(engine: Engine, tenantId: string, asked: BulkAsked) {
  if (asked.dryRun) return { dry_run: true as const, total: asked.total };
  if (!asked.inlineToken) return asked.action;
  await engine.bulk.runAsked(asked.action.id, asked.inlineToken);
  return engine.bulk.get(tenantId, asked.action.id);
}

function keyActorOf(ctx: Ctx): AuditActor {
  return { actorType: 'api_key', actorId: ctx.state.apiKey!.keyId, source: 'api', requestId: ctx.state.requestId, ip: ctx.state.clientIp };
}

export function bulkActionRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { engine } = rc.deps;

  /**
   * An ask under an Idempotency-Key is answered once: a repeat (a client retrying a lost answer)
   * gets the first answer back instead of recording a second action.
   */
  const once = (ctx: Ctx, scope: string, body: unknown, produce: () => Promise<unknown>) =>
    withIdempotency(ctx, rc.deps, scope, body, async () => ({ status: 200, body: successBody(await produce()) }));

  addRoute(router, rc, {
    method: 'post',
    path: '/queues/by-name/:name/items/actions',
    operationId: 'startQueueItemAction',
    summary: 'Act on every item of a queue that matches a filter',
    description: `${ITEM_ACTIONS_TEXT} Checks after the key: scope queues:write (403), the active queue of that name in the key's workspace (404), the body (422).`,
    tags: ['queue items'],
    auth: { kind: 'api_key', scope: 'queues:write' },
    params: QueueNameParams,
    body: ItemActionBody,
    response: AskResponse,
    headers: [idempotencyHeaderDoc],
    errors: [404, 422],
  }, async (ctx, input) => {
    const tenantId = ctx.state.apiKey!.tenantId;
    const queue = await engine.items.activeQueueByName(tenantId, input.params().name);
    const body = input.body();
    await once(ctx, 'bulk.items', body, async () => answer(engine, tenantId, await engine.bulk.askItems(keyActorOf(ctx), queue, body, RUN_HERE)));
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/bulk-actions/:action_id',
    operationId: 'getBulkAction',
    summary: 'How a bulk action on queue items is going',
    description: 'Its status and progress (`done` of `total`, `changed`). Scope queues:read; an action of another workspace, or one on jobs, → 404.',
    tags: ['queue items'],
    auth: { kind: 'api_key', scope: 'queues:read' },
    params: BulkActionParams,
    response: BulkActionResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const row = await engine.bulk.get(ctx.state.apiKey!.tenantId, input.params().action_id, 'queue_items');
    ok(ctx, row);
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/bulk-actions/:action_id/cancel',
    operationId: 'cancelBulkAction',
    summary: 'Stop a bulk action on queue items',
    description:
      'No body. A pending action ends cancelled at once; a running one ends cancelled before its next chunk (what its ' +
      'committed chunks did stays done). Scope queues:write; another workspace\'s action, or one on jobs → 404; an action that already ended → 409.',
    tags: ['queue items'],
    auth: { kind: 'api_key', scope: 'queues:write' },
    params: BulkActionParams,
    response: BulkActionResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    const row = await engine.bulk.cancel(keyActorOf(ctx), ctx.state.apiKey!.tenantId, input.params().action_id, 'queue_items');
    ok(ctx, row);
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/queues/:queue_id/items/actions',
    operationId: 'startWorkspaceQueueItemAction',
    summary: 'Act on every item of a queue that matches a filter',
    description: `${ITEM_ACTIONS_TEXT} For a queue of the workspace by id (active or not); workspace admins. Another workspace's queue → 404.`,
    tags: ['settings: queue items'],
    auth: ADMIN,
    params: QueuePathParams,
    body: ItemActionBody,
    response: AskResponse,
    headers: [idempotencyHeaderDoc],
    errors: [404, 422],
  }, async (ctx, input) => {
    const queue = await engine.catalog.queues.ref(tenantOf(ctx), input.params().queue_id);
    const body = input.body();
    await once(ctx, 'bulk.items', body, async () => answer(engine, tenantOf(ctx), await engine.bulk.askItems(userActorOf(ctx), queue, body, RUN_HERE)));
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/jobs/actions',
    operationId: 'startWorkspaceJobAction',
    summary: 'Act on every job that matches a filter',
    description:
      'Acts on every job of the workspace that matches `filter` (status, process_id, machine_id, input_data containment, ' +
      `created_after, created_before) or on up to ${BULK_ACTION_MAX_IDS} \`ids\`. stop: as POST /jobs/{id}/stop for every ` +
      'pending, running or waiting job; retry: a new pending job (same process, input and priority, retry_count + 1, ' +
      'parent the retried job) for every failed, timed-out or stopped job of an active process not retried yet. ' +
      '`dry_run`, the answer, the background run and the audit row as for queue items. Workspace admins.',
    tags: ['settings: jobs'],
    auth: ADMIN,
    body: JobActionBody,
    response: AskResponse,
    headers: [idempotencyHeaderDoc],
    errors: [422],
  }, async (ctx, input) => {
    const body = input.body();
    await once(ctx, 'bulk.jobs', body, async () => answer(engine, tenantOf(ctx), await engine.bulk.askJobs(userActorOf(ctx), tenantOf(ctx), body, RUN_HERE)));
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/bulk-actions/:action_id',
    operationId: 'getWorkspaceBulkAction',
    summary: 'How a bulk action is going',
    description: 'Its status and progress (`done` of `total`, `changed`). Any member of the workspace; another workspace\'s action → 404.',
    tags: ['settings: jobs'],
    auth: MEMBER,
    params: BulkActionParams,
    response: BulkActionResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await engine.bulk.get(tenantOf(ctx), input.params().action_id));
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/bulk-actions/:action_id/cancel',
    operationId: 'cancelWorkspaceBulkAction',
    summary: 'Stop a bulk action',
    description: 'As POST /bulk-actions/{action_id}/cancel, for any action of the workspace. Workspace admins.',
    tags: ['settings: jobs'],
    auth: ADMIN,
    params: BulkActionParams,
    response: BulkActionResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    ok(ctx, await engine.bulk.cancel(userActorOf(ctx), tenantOf(ctx), input.params().action_id));
  });

  return router;
}
