import {
  AddQueueItemBody, AddQueueItemsBulkBody, BulkAddedResponse, QueueItemExportQuery, QueueItemListQuery, QueueItemResponse, QueueNameParams,
} from '@svc/core/schemas';
import { EXPORT_RATE_LIMIT, exportFormatOf, sendDownload } from '../http/download';
import type { AppRouter } from '../http/router';
import { routeGroup, type RouteContext, type RouteSpec } from '../http/route';
import { ok, paged, successBody } from '../http/respond';
import { idempotencyHeaderDoc, withIdempotency } from '../http/idempotency';

/** The two routes that add items declare alike their scope, queue, answers and Idempotency-Key. */
const ADDS_ITEMS = {
  auth: { kind: 'api_key', scope: 'queues:write' },
  params: QueueNameParams,
  successStatus: 200,
  errors: [404, 409, 413, 422],
  headers: [idempotencyHeaderDoc],
} satisfies Partial<RouteSpec>;

/**
 * Items of a queue addressed by name. Order of checks: key (401) → rate limit (429)
 * → scope (403) → the queue exists, active, in the key's tenant (404) → body/query (422).
 */
export function queueItemRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc, { tags: ['queues'] });
  const { deps } = rc;

  add(
    {
      method: 'post',
      path: '/queues/by-name/:name/items',
      operationId: 'addQueueItem',
      summary: 'Add an item to a queue',
      description:
        'Checks after the key: scope queues:write (403), the active queue of that name in the key\'s workspace (404), ' +
        'body (422; unknown fields refused; deadline/postpone RFC 3339 with a time zone). Answers the item with status ' +
        'new, retry_count 0, result null. A queue with unique_references answers 409 CONFLICT to a reference another ' +
        'of its items holds, naming that item (details.item_id). See docs/decisions/queue-items.md and unique-references.md.',
      ...ADDS_ITEMS,
      body: AddQueueItemBody,
      response: QueueItemResponse,
    },
    async (ctx, input) => {
      const tenantId = ctx.state.apiKey!.tenantId;
      if (ctx.headers['idempotency-key'] === undefined) {
        // the hot path (BENCHMARKS.md, B1): the insert finds the queue itself; an invalid body
        // still answers 404 first when the queue does not exist
        let body;
        try {
          body = input.body();
        } catch (err) {
          await deps.engine.items.activeQueueByName(tenantId, ctx.params.name!);
          throw err;
        }
        ok(ctx, await deps.engine.items.addToQueueNamed(tenantId, ctx.params.name!, body));
        return;
      }
      const queue = await deps.engine.items.activeQueueByName(tenantId, ctx.params.name!);
      const body = input.body();
      await withIdempotency(ctx, deps, 'queue-items.add', body, async (claim) => {
        const item = await deps.engine.items.add(queue, body, {
          inTransaction: claim.active ? (tx, added) => claim.record(tx, { status: 200, body: successBody(added) }) : undefined,
        });
        return { status: 200, body: successBody(item) };
      });
    },
  );

  add(
    {
      method: 'post',
      path: '/queues/by-name/:name/items/bulk',
      operationId: 'addQueueItems',
      summary: 'Add 1 to 1000 items to a queue, all or nothing',
      description:
        'Each element of `items` is the `data` of one item (priority 3). One multi-row insert: either every item is ' +
        'stored or none. 0 or more than 1000 items → 422.',
      ...ADDS_ITEMS,
      body: AddQueueItemsBulkBody,
      response: BulkAddedResponse,
    },
    async (ctx, input) => {
      const queue = await deps.engine.items.activeQueueByName(ctx.state.apiKey!.tenantId, ctx.params.name!);
      const body = input.body();
      await withIdempotency(ctx, deps, 'queue-items.bulk', body, async (claim) => {
        const added = await deps.engine.items.addBulk(queue, body, {
          inTransaction: claim.active ? (tx, n) => claim.record(tx, { status: 200, body: successBody({ added: n }) }) : undefined,
        });
        return { status: 200, body: successBody({ added }) };
      });
    },
  );

  add(
    {
      method: 'get',
      path: '/queues/by-name/:name/items',
      operationId: 'listQueueItems',
      summary: 'List the items of a queue, newest first',
      description:
        'Ordered by created_at desc, id desc; optional filters status, reference (exact) and data (a JSON object the ' +
        'item\'s data contains, served by an index); meta.total is exact (read from per-status counters without data or reference).',
      auth: { kind: 'api_key', scope: 'queues:read' },
      params: QueueNameParams,
      query: QueueItemListQuery,
      response: QueueItemResponse,
      paged: true,
      errors: [404, 422],
    },
    async (ctx, input) => {
      const queue = await deps.engine.items.activeQueueByName(ctx.state.apiKey!.tenantId, ctx.params.name!);
      const { data, meta } = await deps.engine.items.list(queue, input.query());
      paged(ctx, data, meta);
    },
  );

  add(
    {
      method: 'get',
      path: '/queues/by-name/:name/items/export',
      operationId: 'exportQueueItems',
      summary: 'Download every item of a queue that matches the filters',
      description: ITEMS_EXPORT_DESCRIPTION,
      auth: { kind: 'api_key', scope: 'queues:read' },
      params: QueueNameParams,
      query: QueueItemExportQuery,
      download: { record: QueueItemResponse },
      rateLimit: EXPORT_RATE_LIMIT,
      errors: [404, 409, 422],
    },
    async (ctx, input) => {
      const queue = await deps.engine.items.activeQueueByName(ctx.state.apiKey!.tenantId, ctx.params.name!);
      const query = input.query();
      const format = exportFormatOf(ctx, query);
      sendDownload(ctx, await deps.engine.items.export(queue, query, format), format, `items-${queue.name}`);
    },
  );

  return router;
}

/** What the public export and its settings twin do alike. */
export const ITEMS_EXPORT_DESCRIPTION =
  'Every item the list\'s filters match (status, reference, data: as GET /queues/by-name/{name}/items, without paging), ' +
  'in the list\'s order (created_at desc, id desc), as NDJSON (one QueueItemResponse a line) or CSV (a header line, ' +
  'then one row per item; data and result as JSON text, empty for null; a text cell starting with = + - @, a tab or ' +
  'a carriage return gets a leading apostrophe). Format: `format` (csv|ndjson), else the Accept header (text/csv, ' +
  'application/x-ndjson), else NDJSON. Read in chunks as the client takes them; items added after the export began ' +
  'are not in it. `include_archived=true` adds the items retention archived that match the filters, after the live ' +
  'ones (each record marked `archived`; 409 when the API has no archive configured). A failure once the download has ' +
  'begun cuts the transfer short (no final chunk): a download that ended without error is complete. See ' +
  'docs/decisions/export.md.';

/** The success wrapper of `ok()` as a value: an idempotent response is stored before it is sent. */

