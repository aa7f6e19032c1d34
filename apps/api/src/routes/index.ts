import type { ApiDeps } from '../deps';
import { createRouter, type AppRouter } from '../http/router';
import type { RouteContext } from '../http/route';
import { apiKeyRoutes } from './api-keys';
import { openApiRoutes } from '../openapi/routes';
import { processRoutes } from './processes';
import { machineRoutes } from './machines';
import { assetRoutes } from './assets';
import { authRoutes } from './auth';
import { jobRoutes } from './jobs';
import { webhookRoutes } from './webhooks';
import { queueItemRoutes } from './queue-items';
import { folderSettingsRoutes } from './settings/folders';
import { processSettingsRoutes } from './settings/processes';
import { machineSettingsRoutes } from './settings/machines';
import { queueSettingsRoutes } from './settings/queues';
import { triggerSettingsRoutes } from './settings/triggers';
import { assetSettingsRoutes } from './settings/assets';
import { scheduleSettingsRoutes } from './settings/schedules';
import { queueItemReviewRoutes } from './settings/queue-item-review';
import { jobsAndItemsSettingsRoutes } from './settings/jobs-and-items';
import { auditLogRoutes } from './settings/audit-log';
import { eventRoutes } from './settings/events';
import { userSettingsRoutes } from './settings/users';
import { agentRoutes } from './agent';
import { bulkActionRoutes } from './bulk-actions';

type ResourceRoutes = (rc: RouteContext) => AppRouter;

/**
 * The public and management API under /api/v1. Each resource module exports a factory
 * `(rc: RouteContext) => AppRouter` declaring its routes with `addRoute`; add one line here.
 */
const RESOURCES: ResourceRoutes[] = [
  folderSettingsRoutes,
  processSettingsRoutes,
  machineSettingsRoutes,
  queueSettingsRoutes,
  triggerSettingsRoutes,
  assetSettingsRoutes,
  scheduleSettingsRoutes,
  queueItemReviewRoutes,
  jobsAndItemsSettingsRoutes,
  auditLogRoutes,
  userSettingsRoutes,
  eventRoutes,
  queueItemRoutes,
  bulkActionRoutes,
  jobRoutes,
  webhookRoutes,
  apiKeyRoutes,
  openApiRoutes,
  processRoutes,
  machineRoutes,
  assetRoutes,
  authRoutes,
  agentRoutes,
];

export function apiRoutes(deps: ApiDeps, rc: RouteContext = { deps, keyStore: deps.apiKeys }): AppRouter {
  const api = createRouter('/api/v1');
  for (const make of RESOURCES) {
    const r = make(rc);
    api.use(r.routes());
  }
  return api;
}
