import {
  addItem, addItemsBulk, getActiveQueueByName, listItems, toQueueItemResponse,
  AddQueueItemBody, AddQueueItemsBulkBody, BulkAddedResponse, QueueItemListQuery, QueueItemResponse, QueueNameParams,
} from '@svc/core';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { paged } from '../http/respond';
import { idempotencyHeaderDoc, withIdempotency } from '../http/idempotency';

/**
 * Contract 4.2: items of a queue addressed by name. Order of checks: key (401) → rate limit (429)
 * → scope (403) → the queue exists, active, in the key's tenant (404) → body/query (422).
 */
export function queueItemRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { deps } = rc;

  addRoute(
    router,
    rc,
    {
      method: 'post',
      path: '/queues/by-name/:name/items',
      summary: 'Añadir un elemento a una cola',
      tags: ['queues'],
      auth: { kind: 'api_key', scope: 'queues:write' },
      params: QueueNameParams,
      body: AddQueueItemBody,
      response: QueueItemResponse,
      successStatus: 200,
      errors: [404, 409, 413, 422],
      headers: [idempotencyHeaderDoc],
    },
    async (ctx, input) => {
      const queue = await getActiveQueueByName(deps.sql, ctx.state.apiKey!.tenantId, ctx.params.name!);
      const body = input.body();
      await withIdempotency(ctx, deps, 'queue-items.add', body, async (claim) => {
        const row = await addItem(deps, queue, body, {
          inTransaction: claim.active ? (tx, r) => claim.record(tx, { status: 200, body: envelope(toQueueItemResponse(r)) }) : undefined,
        });
        return { status: 200, body: envelope(toQueueItemResponse(row)) };
      });
    },
  );

  addRoute(
    router,
    rc,
    {
      method: 'post',
      path: '/queues/by-name/:name/items/bulk',
      summary: 'Añadir hasta 1000 elementos a una cola (todo o nada)',
      tags: ['queues'],
      auth: { kind: 'api_key', scope: 'queues:write' },
      params: QueueNameParams,
      body: AddQueueItemsBulkBody,
      response: BulkAddedResponse,
      successStatus: 200,
      errors: [404, 409, 413, 422],
      headers: [idempotencyHeaderDoc],
    },
    async (ctx, input) => {
      const queue = await getActiveQueueByName(deps.sql, ctx.state.apiKey!.tenantId, ctx.params.name!);
      const body = input.body();
      await withIdempotency(ctx, deps, 'queue-items.bulk', body, async (claim) => {
        const added = await addItemsBulk(deps, queue, body, {
          inTransaction: claim.active ? (tx, n) => claim.record(tx, { status: 200, body: envelope({ added: n }) }) : undefined,
        });
        return { status: 200, body: envelope({ added }) };
      });
    },
  );

  addRoute(
    router,
    rc,
    {
      method: 'get',
      path: '/queues/by-name/:name/items',
      summary: 'Listar los elementos de una cola (más recientes primero)',
      tags: ['queues'],
      auth: { kind: 'api_key', scope: 'queues:read' },
      params: QueueNameParams,
      query: QueueItemListQuery,
      response: QueueItemResponse,
      paged: true,
      errors: [404, 422],
    },
    async (ctx, input) => {
      const queue = await getActiveQueueByName(deps.sql, ctx.state.apiKey!.tenantId, ctx.params.name!);
      const { rows, meta } = await listItems(deps.sql, queue, input.query());
      paged(ctx, rows.map(toQueueItemResponse), meta);
    },
  );

  return router;
}

/** The success wrapper of `ok()` as a value: an idempotent response is stored before it is sent. */
function envelope(data: unknown): { success: true; data: unknown } {
  return { success: true, data };
}
