import { CatalogListQuery, QueuePathParams, QueueCreate, QueueResponse, QueueUpdate } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok } from '../../http/respond';
import { ADMIN, addCrudRoutes, tenantOf, userActorOf } from './crud';

/** /api/v1/settings/queues: work queues, their retry policy and their consumer process. */
export function queueSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { catalog } = rc.deps.engine;
  addCrudRoutes(router, rc, {
    resource: 'queue',
    plural: 'queues',
    noun: 'queue',
    tag: 'settings: queues',
    readers: 'members',
    schemas: { create: QueueCreate, update: QueueUpdate, list: CatalogListQuery, response: QueueResponse },
    notes: {
      create: '`max_retries` 0..10 (default 3), `max_consumers` 1..100 (default 1); `consumer_process_id` must be a process of the same workspace (else 422).',
      list: 'Each record carries `item_counts`, its items per status, read from counters (no scan of the items).',
    },
  });

  for (const change of ['pause', 'resume'] as const) {
    addRoute(router, rc, {
      method: 'post',
      path: `/settings/queues/:queue_id/${change}`,
      operationId: change === 'pause' ? 'pauseQueue' : 'resumeQueue',
      summary: change === 'pause' ? 'Pause a queue' : 'Resume a paused queue',
      description: change === 'pause'
        ? 'The queue keeps accepting items, but no consumer job is started for it, and its running consumers take ' +
          'nothing more: they finish the items they hold (at most their prefetch) and end, leaving nothing in progress. ' +
          'No body. Pausing a paused queue answers the record as it is. Audited as `pause_queue`.'
        : 'Consumers start again for its ready items within a second (the same nudge as a new item). No body. Resuming ' +
          'a queue that is not paused answers the record as it is. Audited as `resume_queue`.',
      tags: ['settings: queues'],
      auth: ADMIN,
      params: QueuePathParams,
      response: QueueResponse,
      errors: [404, 422],
    }, async (ctx, input) => {
      const { queue_id } = input.params();
      await catalog.queues.ref(tenantOf(ctx), queue_id);
      ok(ctx, await catalog.queues.setPaused(userActorOf(ctx), tenantOf(ctx), queue_id, change === 'pause'));
    });
  }
  return router;
}
