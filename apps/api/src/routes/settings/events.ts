import { PassThrough } from 'node:stream';
import { es, ValidationError } from '@svc/core';
import {
  DeliveryListQuery, DeliveryParams, DeliveryResponse, EVENT_TYPES, EventFeedQuery, EventResponse, EventStreamQuery, IdParams, MAX_WEBHOOKS_PER_WORKSPACE, WebhookCreate, WebhookListQuery, WebhookResponse, WebhookUpdate, WebhookWithSecretResponse,
} from '@svc/core/schemas';
import type { AppRouter } from '../../http/router';
import { routeGroup, type RouteContext } from '../../http/route';
import { ok, paged } from '../../http/respond';
import { ADMIN, tenantOf, userActorOf } from './crud';

const tags = ['settings: events and webhooks'];
const TYPES = `Event types: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`;

/** How often the stream looks for new events, and sends a comment to keep proxies from closing it. */
const STREAM_POLL_MS = 1000;
const STREAM_KEEPALIVE_MS = 15_000;

/**
 * /api/v1/settings/webhooks and /settings/events (docs/decisions/events.md): signed webhooks and
 * the replayable event feed, for the workspace's admins.
 */
export function eventRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc, { tags, auth: ADMIN });
  const { engine } = rc.deps;
  const hooks = engine.events.webhooks;

  add({
    method: 'get',
    path: '/settings/events',
    operationId: 'readEvents',
    summary: 'Read the event feed of the workspace',
    description:
      'The workspace\'s events in order, oldest first: `after` = an event `id` or the `meta.next_cursor` of the previous ' +
      'page (from the oldest kept event when absent), `types` = comma-separated types, `limit` 1..500 (default 100). ' +
      '`newest=true` gives the newest `limit` events instead (still oldest first), where a live view starts. ' +
      '`meta.next_cursor` is the last event\'s id (or `after` when there is nothing new): a client that keeps it never ' +
      `misses an event. Events are kept EVENT_RETENTION_DAYS days (default 7). ${TYPES}`,
    query: EventFeedQuery,
    response: EventResponse,
    paged: 'cursor',
    errors: [422],
  }, async (ctx, input) => {
    const { rows, meta } = await engine.events.feed(tenantOf(ctx), input.query());
    paged(ctx, rows, meta);
  });

  add({
    method: 'get',
    path: '/settings/events/stream',
    operationId: 'streamEvents',
    summary: 'Stream the event feed (Server-Sent Events)',
    description:
      'The same events as `GET /settings/events`, as `text/event-stream`: each message has `id` (the event id), `event` ' +
      '(its type) and `data` (the event as JSON). Resumes after `Last-Event-ID` (or `after`); a comment every 15 s keeps ' +
      'the connection open. The stream ends within a second of its token\'s logout, revocation or expiry, or its ' +
      'user\'s deactivation or loss of the admin role. At most EVENT_STREAMS_PER_USER (default 5) streams per user and ' +
      'EVENT_STREAMS_PER_WORKSPACE (default 20) per workspace are open at once: past that, 429.',
    query: EventStreamQuery,
    headers: [{ name: 'Last-Event-ID', description: 'The id of the last event received: the stream resumes after it' }],
    errors: [422, 429],
  }, async (ctx, input) => {
    const query = input.query();
    const lastId = ctx.get('last-event-id');
    if (lastId !== '' && !/^[0-9a-f]{32}$/.test(lastId)) {
      throw ValidationError.single(['header', 'Last-Event-ID'], es.feeds.notAnEventId, 'invalid_cursor');
    }
    let after = lastId || query.after;
    const tenantId = tenantOf(ctx);
    // the client may leave during the awaits below: its close is seen whenever it comes
    let left = false;
    let onLeave = () => {
      left = true;
    };
    ctx.res.once('close', () => onLeave());
    // the first read answers a bad cursor or type with a 422 before the stream starts
    const first = await engine.events.feed(tenantId, { after, types: query.types, limit: 500 });
    const stream = new PassThrough();
    let closed = false;
    // ended by the registry (credential lapsed, shutdown), by the client leaving or by a failed read
    const end = () => {
      closed = true;
      stream.end();
    };
    const release = await rc.deps.streams.open(ctx.state.user!, { admin: true }, end);
    const leave = () => {
      release();
      end();
    };
    if (left || ctx.res.destroyed) {
      leave();
      return;
    }
    onLeave = leave;
    // a stream Koa or the socket destroyed without a response close still lets its lease go
    stream.once('close', leave);
    ctx.req.socket.setTimeout(0);
    ctx.status = 200;
    ctx.set('content-type', 'text/event-stream; charset=utf-8');
    ctx.set('cache-control', 'no-cache');
    ctx.set('x-accel-buffering', 'no');
    // the socket closes with the stream, so a shutdown's drain does not wait for a keep-alive
    ctx.set('connection', 'close');
    ctx.body = stream;
    // nothing is written once the stream ended (its credential lapsed meanwhile, or a shutdown)
    const write = (text: string) => {
      if (!closed) stream.write(text);
    };
    const send = (rows: typeof first.rows) => {
      for (const e of rows) write(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    };
    write(': events\n\n');
    send(first.rows);
    after = first.meta.next_cursor ?? undefined;
    void (async () => {
      let quietSince = Date.now();
      while (!closed) {
        await new Promise((r) => setTimeout(r, STREAM_POLL_MS));
        if (closed) break;
        try {
          const page = await engine.events.feed(tenantId, { after, types: query.types, limit: 500 });
          if (page.rows.length) {
            send(page.rows);
            after = page.meta.next_cursor ?? undefined;
            quietSince = Date.now();
          } else if (Date.now() - quietSince >= STREAM_KEEPALIVE_MS) {
            write(': keep-alive\n\n');
            quietSince = Date.now();
          }
        } catch (err) {
          // Postgres away: the client reconnects with its Last-Event-ID
          rc.deps.logger.warn('event stream ended', { err: (err as Error).message });
          leave();
          break;
        }
      }
    })();
  });

  add({
    method: 'post',
    path: '/settings/webhooks',
    operationId: 'createWebhook',
    summary: 'Subscribe a URL to events',
    description:
      '`url`: https (http only when the server sets WEBHOOK_ALLOW_INSECURE), no credentials, not a private or local ' +
      'address; `event_types`: a list or `["*"]`. The answer holds the signing `secret`, shown this once. Each event is ' +
      'POSTed as JSON with `Svc-Event-Id`, `Svc-Event-Type`, `Svc-Timestamp` and `Svc-Signature: v1=<hex HMAC-SHA256 of ' +
      '"<timestamp>.<body>">` (README "Webhooks"); at least once, in order, retried with back-off for 24 h. ' +
      `A workspace has at most ${MAX_WEBHOOKS_PER_WORKSPACE} subscriptions: one more answers 409. Audited as ` +
      `\`create_webhook\`. ${TYPES}`,
    body: WebhookCreate,
    response: WebhookWithSecretResponse,
    successStatus: 201,
    errors: [409, 422],
  }, async (ctx, input) => {
    ok(ctx, await hooks.create(userActorOf(ctx), tenantOf(ctx), input.body()), 201);
  });

  add({
    method: 'get',
    path: '/settings/webhooks',
    operationId: 'listWorkspaceWebhooks',
    summary: 'List the webhook subscriptions of the workspace',
    description: 'Oldest first; the secrets are never shown again (only `secret_prefix`).',
    query: WebhookListQuery,
    response: WebhookResponse,
    paged: true,
    errors: [422],
  }, async (ctx, input) => {
    const { data, meta } = await hooks.list(tenantOf(ctx), input.query());
    paged(ctx, data, meta);
  });

  add({
    method: 'get',
    path: '/settings/webhooks/:id',
    operationId: 'getWebhook',
    summary: 'Get a webhook subscription',
    description: 'Another workspace\'s subscription answers 404, like a missing one.',
    params: IdParams,
    response: WebhookResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await hooks.get(tenantOf(ctx), input.params().id));
  });

  add({
    method: 'patch',
    path: '/settings/webhooks/:id',
    operationId: 'updateWebhook',
    summary: 'Change a webhook subscription',
    description: 'Partial update (at least one field). `is_active: true` re-enables a subscription disabled after 24 h of failures. Audited as `update_webhook`.',
    params: IdParams,
    body: WebhookUpdate,
    response: WebhookResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { id } = input.params();
    await hooks.get(tenantOf(ctx), id);
    ok(ctx, await hooks.update(userActorOf(ctx), tenantOf(ctx), id, input.body()));
  });

  add({
    method: 'delete',
    path: '/settings/webhooks/:id',
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook subscription',
    description: 'Deletes it with its deliveries and returns the record. Audited as `delete_webhook`.',
    params: IdParams,
    response: WebhookResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await hooks.delete(userActorOf(ctx), tenantOf(ctx), input.params().id));
  });

  add({
    method: 'post',
    path: '/settings/webhooks/:id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret of a webhook subscription',
    description: 'The new `secret` is shown this once and signs every delivery from now on. Audited as `rotate_webhook_secret`.',
    params: IdParams,
    response: WebhookWithSecretResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await hooks.rotateSecret(userActorOf(ctx), tenantOf(ctx), input.params().id));
  });

  add({
    method: 'post',
    path: '/settings/webhooks/:id/test',
    operationId: 'testWebhook',
    summary: 'Send a test event to a webhook subscription',
    description: 'Queues a `webhook.test` event (signed like any other, not in the feed) for this subscription; its delivery is returned (202).',
    params: IdParams,
    response: DeliveryResponse,
    successStatus: 202,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await hooks.test(tenantOf(ctx), input.params().id), 202);
  });

  add({
    method: 'get',
    path: '/settings/webhooks/:id/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: 'List the deliveries of a webhook subscription',
    description: 'Newest first: status (`pending`, `delivered`, `failed`), attempts, last response code, time and duration; filter by `status`.',
    params: IdParams,
    query: DeliveryListQuery,
    response: DeliveryResponse,
    paged: true,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { data, meta } = await hooks.deliveries(tenantOf(ctx), input.params().id, input.query());
    paged(ctx, data, meta);
  });

  add({
    method: 'post',
    path: '/settings/webhooks/:id/deliveries/:delivery_id/redeliver',
    operationId: 'redeliverWebhookEvent',
    summary: 'Deliver an event again',
    description: 'Sends the delivery\'s event again as a new delivery (returned, 202), outside the subscription\'s order, with the same body. Audited as `redeliver_webhook`. 404 also when the event is older than the retention (`EVENT_RETENTION_DAYS`) and the delivery kept no body of its own.',
    params: DeliveryParams,
    response: DeliveryResponse,
    successStatus: 202,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { id, delivery_id } = input.params();
    ok(ctx, await hooks.redeliver(userActorOf(ctx), tenantOf(ctx), id, delivery_id), 202);
  });

  return router;
}

