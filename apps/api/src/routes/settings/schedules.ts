import {
  IdParams, ScheduleCreate, ScheduleListQuery, SchedulePreviewQuery, SchedulePreviewResponse, ScheduleResponse, ScheduleUpdate,
} from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok } from '../../http/respond';
import { MEMBER, addCrudRoutes, tenantOf } from './crud';

/** /api/v1/settings/schedules: processes started by a cron expression (docs/decisions/schedules.md). */
export function scheduleSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addCrudRoutes(router, rc, {
    resource: 'schedule',
    plural: 'schedules',
    noun: 'schedule',
    tag: 'settings: schedules',
    readers: 'members',
    schemas: { create: ScheduleCreate, update: ScheduleUpdate, list: ScheduleListQuery, response: ScheduleResponse },
    notes: {
      create: '`cron` has five fields, or six with leading seconds (at most 120 characters), read in `timezone` (IANA, default UTC); ' +
        'an invalid one → 422 naming `cron` or `timezone`. `process_id` and `machine_id` must be of the same workspace (else 422). ' +
        '`machine_id` null = the least-loaded online machine at each run. `priority` 1..5 (default 3); `missed_runs` `skip` ' +
        '(default) or `run_once`. Each tick starts exactly one job (`schedule_id` set, counted against the monthly quota); a run ' +
        'refused by the quota, by no machine being available or by an inactive process is recorded in `last_error` and the audit log.',
      update: 'A new `cron`, `timezone` or activation recomputes `next_run_at` from now; ticks passed while inactive do not run.',
      deactivate: 'The schedule stops firing (`next_run_at` null).',
    },
  });

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/schedules/:id/preview',
    operationId: 'previewSchedule',
    summary: 'Preview the next runs of a schedule',
    description: 'The next `count` ticks (1..50, default 10) of the schedule\'s cron in its time zone, from now, as UTC instants; ' +
      'computed for an inactive schedule too. Any member of the workspace.',
    tags: ['settings: schedules'],
    auth: MEMBER,
    params: IdParams,
    query: SchedulePreviewQuery,
    response: SchedulePreviewResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { id } = input.params();
    await rc.deps.engine.catalog.schedules.get(tenantOf(ctx), id);
    const { count } = input.query();
    ok(ctx, await rc.deps.engine.catalog.schedules.preview(tenantOf(ctx), id, count ?? 10));
  });
  return router;
}
