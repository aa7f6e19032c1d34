import {
  CatalogListQuery, QueueCreate, QueueResponse, QueueUpdate,
  createQueue, deactivateQueue, getQueue, listQueues, loadQueueItemCounts, toQueueResponse, updateQueue,
} from '@svc/core';
import { createRouter, type AppRouter } from '../../http/router';
import type { RouteContext } from '../../http/route';
import { addCrudRoutes } from './crud';

/** /api/v1/settings/queues: work queues, their retry policy and their consumer process. */
export function queueSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
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
    create: createQueue,
    list: listQueues,
    get: getQueue,
    update: updateQueue,
    deactivate: deactivateQueue,
    present: async (sql, rows) => {
      const counts = await loadQueueItemCounts(sql, rows.map((r) => r.id));
      return rows.map((r) => toQueueResponse(r, counts.get(r.id)));
    },
  });
  return router;
}
