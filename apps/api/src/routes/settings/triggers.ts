import { TriggerCreate, TriggerListQuery, TriggerResponse, TriggerUpdate } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import type { RouteContext } from '../../http/route';
import { addCrudRoutes } from './crud';

/**
 * /api/v1/settings/triggers: queue triggers (docs/decisions/triggers.md), what starts consumer
 * jobs for a queue. Admins write, members read.
 */
export function triggerSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addCrudRoutes(router, rc, {
    resource: 'trigger',
    plural: 'triggers',
    noun: 'queue trigger',
    tag: 'settings: triggers',
    readers: 'members',
    schemas: { create: TriggerCreate, update: TriggerUpdate, list: TriggerListQuery, response: TriggerResponse },
    notes: {
      create:
        '`type` must be `queue`. While the queue (active, not paused) has at least `min_items_to_start` (1..10000, default 1) ' +
        'ready items and the trigger fewer than `max_concurrent_jobs` (1..100, default 1) pending or running jobs, jobs of ' +
        '`process_id` are started, carrying `trigger_id`: on `machine_id` when set (an attended machine too), else on online ' +
        'unattended machines with free slots. `queue_id`, `process_id` and `machine_id` must be of the same workspace (else 422 ' +
        'naming the field). Audited as `create_trigger`; the queue is looked at within a second.',
      update:
        '`type` and `queue_id` are fixed. Changing the queue\'s default trigger (`is_queue_default`) changes the queue\'s ' +
        '`consumer_process_id` / `max_consumers` too, and the other way round. Audited as `update_trigger`.',
      deactivate: 'Its running jobs finish; none starts. On the default trigger the queue then shows `consumer_process_id: null`.',
      list: 'Oldest first (triggers have no name); filter by `queue_id` and `is_active`.',
    },
    unnamed: { auditName: (body) => `queue:${(body as { queue_id: string }).queue_id}` },
  });
  return router;
}
