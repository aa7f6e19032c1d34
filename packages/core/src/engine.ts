import type { Queryable, Sql } from './db/sql';
import type { AuditActor, CatalogChange } from './audit/catalog-changes';
import type { Logger } from './logger';
import type { ApiKeyChangeListener } from './api-keys/invalidation';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey, type ApiKeyActor } from './api-keys/service';
import { findApiKeyByHash, findApiKeysByHashes, touchApiKeys } from './api-keys/repo';
import { findAccessTokenByHash, findLiveAccessTokens } from './access-tokens/repo';
import { findAccessTokens, getSession, issueAccessToken, revokeAccessToken } from './access-tokens/service';
import { signIn, signOut } from './access-tokens/sessions';
import { authenticateAccessToken, authenticateBearer } from './access-tokens/authenticate';
import { assertPlanFeature, createTenant, findTenantByName, getTenant, listTenants, resolveTenant, updateTenant } from './tenants/service';
import { findTenant } from './tenants/repo';
import { createUser, deactivateUser, resolveUser, setPassword } from './users/service';
import { listUsersOfTenant } from './users/repo';
import {
  createAsset, createFolder, createMachine, createProcess, createQueue, deactivateAsset, deactivateFolder, deactivateMachine,
  deactivateProcess, deactivateQueue, getAsset, getFolder, getMachine, getProcess, getQueue, listAssets, listFolders, listMachines,
  listProcesses, listQueues, loadQueueItemCounts, readAssetValue, rotateMachineKey, updateAsset, updateFolder, updateMachine,
  updateProcess, updateQueue, listMachineNames, readAssetWithKey, readAssetForMachine,
} from './catalog';
import { setQueuePaused } from './catalog/queues';
import { createTrigger, deactivateTrigger, getTrigger, listTriggers, updateTrigger } from './catalog/triggers';
import { writeCatalogEntity } from './catalog/write';
import { listAuditLog } from './audit/read';
import { purgeQueueStatBuckets, readQueueStats } from './catalog/queue-stats';
import { createSchedule, deactivateSchedule, getSchedule, listSchedules, previewSchedule, updateSchedule } from './schedules/catalog';
import { fireDueSchedules } from './schedules/fire';
import { getJob, listJobs, stopJob, triggerJobByApi, triggerJobByWebhook } from './jobs/service';
import { answerJobInput, askJobInput, readJobInput } from './jobs/input';
import { addItem, addItemToQueueNamed, addItemsBulk, getActiveQueueByName, listItems } from './queue-items/service';
import { releaseQueueItems, releaseUnknownClaims, applyItemRetryPolicy } from './queue-items/transitions';
import { settleAndClaimItemsBatched } from './queue-items/settle-batched';
import { redriveQueueItems, reviewQueueItem } from './queue-items/review';
import { findRunEndedAs, finishJob, renewJobLeases, reportJobProgress, startJob } from './dispatch/job-run';
import { findLiveMachineKeys, findMachineByKey, recordGoodbye, recordHeartbeat } from './machines/heartbeat';
import { askInputForRun, finishRun, takeItemsForRun } from './machines/run-requests';
import { giveUpMachineJobs, failOrphans, markSlaBreaches, pendingStops, sweepOfflineMachines, timeOutJobs } from './dispatch/sweeps';
import { machineHasWaitingJobs, queuesNeedingConsumers, startQueueConsumers } from './dispatch/consumers';
import { reconcilePendingJobs } from './dispatch/reconcile';
import { runIdempotent } from './idempotency/service';
import { pingDatabase } from './db/health';
import { sweepExpiredIdempotencyKeys } from './idempotency/repo';
import { createOutboxRelay, drainOutbox } from './outbox/relay';
import type { DispatchPort } from './dispatch/port';
import type { DbOutage } from './db/outage';
import { appendJobLogs } from './jobs/logs';
import { archiveJobLogs, pgLogArchive, readJobLogs, type LogArchive } from './jobs/log-archive';
import {
  createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, redeliver, rotateWebhookSecret, sendTestEvent, updateWebhook,
  type WebhookSettings,
} from './webhooks/subscriptions';
import { purgeOldEvents, readEventFeed } from './events/feed';
import type { EventFeedQuery } from './webhooks/schemas';
import { createWebhookDeliverer, type DelivererOptions } from './webhooks/deliver';

/**
 * The engine (docs/architecture.md, "Where to add things"): the domain's commands, grouped, bound
 * to one Postgres pool. The transports (the API, the dispatcher, the agent, the CLI) build one
 * and call its commands; each command owns its transaction, its audit row and its effects.
 */
export interface EngineDeps {
  sql: Sql;
  /** Postgres itself, for the outbox relay's LISTEN when `sql` is a transaction pooler (db/pooler.ts); default `sql` */
  directSql?: Sql;
  logger: Logger;
  /** told after an API key changes, so every API process drops it from its cache */
  apiKeyChanges?: ApiKeyChangeListener;
  /** where finished jobs' logs are archived (default: the Postgres table, jobs/log-archive.ts) */
  logArchive?: LogArchive;
  /** webhook secrets' key and target policy (docs/decisions/events.md); without it webhook writes refuse */
  webhooks?: WebhookSettings;
}

/** `f(sql, …rest)` → `(…rest)`: a command bound to the engine's pool. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type BoundToSql<F> = F extends (sql: any, ...rest: infer A) => infer R ? (...rest: A) => R : never;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Group<T extends Record<string, (sql: any, ...rest: any[]) => unknown>> = { readonly [K in keyof T]: BoundToSql<T[K]> };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function bind<T extends Record<string, (first: any, ...rest: any[]) => unknown>>(first: unknown, fns: T): Group<T> {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(fns)) out[name] = (...rest: unknown[]) => fn(first, ...rest);
  return out as Group<T>;
}

const NO_KEY_LISTENER: ApiKeyChangeListener = { invalidate: async () => undefined };

export function createEngine(deps: EngineDeps) {
  const { sql } = deps;
  const services = { sql, logger: deps.logger };
  const keyChanges = deps.apiKeyChanges ?? NO_KEY_LISTENER;
  const logArchive = deps.logArchive ?? pgLogArchive;
  const hooks = (): WebhookSettings => {
    if (!deps.webhooks) throw new Error('createEngine: webhooks settings are missing');
    return deps.webhooks;
  };
  return {
    sql,
    /** Who is calling: API keys and access tokens by their hash, sessions, sign-in. */
    auth: bind(sql, { findApiKeyByHash, findApiKeysByHashes, touchApiKeys, findAccessTokenByHash, liveTokens: findLiveAccessTokens, bearer: authenticateBearer, accessToken: authenticateAccessToken, session: getSession, signIn, signOut }),
    /** A tenant's API keys (the change listener drops revoked and rotated keys from every cache). */
    keys: {
      create: (actor: ApiKeyActor, body: unknown) => createApiKey(sql, keyChanges, actor, body),
      rotate: (actor: ApiKeyActor, keyId: string) => rotateApiKey(sql, keyChanges, actor, keyId),
      revoke: (actor: ApiKeyActor, keyId: string) => revokeApiKey(sql, keyChanges, actor, keyId),
      list: (tenantId: string, query: { page: number; limit: number }) => listApiKeys(sql, tenantId, query),
    },
    tenants: bind(sql, { requireFeature: assertPlanFeature, create: createTenant, get: getTenant, list: listTenants, update: updateTenant, resolve: resolveTenant, find: findTenant, findByName: findTenantByName }),
    users: bind(sql, {
      create: createUser, deactivate: deactivateUser, listOfTenant: listUsersOfTenant, resolve: resolveUser, setPassword,
      issueToken: issueAccessToken, revokeToken: revokeAccessToken, findTokens: findAccessTokens,
    }),
    /** Processes, queues, machines, folders and assets of a tenant. */
    catalog: {
      /** every create, update, deactivation and key rotation: the write, its audit row and its effects */
      write: <T extends { id: string }>(actor: AuditActor, tenantId: string, change: CatalogChange, work: (tx: Queryable) => Promise<T>) =>
        writeCatalogEntity(sql, actor, tenantId, change, work),
      processes: bind(sql, { create: createProcess, list: listProcesses, get: getProcess, update: updateProcess, deactivate: deactivateProcess }),
      queues: bind(sql, { create: createQueue, list: listQueues, get: getQueue, update: updateQueue, deactivate: deactivateQueue, itemCounts: loadQueueItemCounts, stats: readQueueStats, setPaused: setQueuePaused }),
      triggers: bind(sql, { create: createTrigger, list: listTriggers, get: getTrigger, update: updateTrigger, deactivate: deactivateTrigger }),
      machines: bind(sql, { create: createMachine, list: listMachines, get: getMachine, update: updateMachine, deactivate: deactivateMachine, rotateKey: rotateMachineKey, names: listMachineNames }),
      folders: bind(sql, { create: createFolder, list: listFolders, get: getFolder, update: updateFolder, deactivate: deactivateFolder }),
      schedules: bind(sql, { create: createSchedule, list: listSchedules, get: getSchedule, update: updateSchedule, deactivate: deactivateSchedule, preview: previewSchedule }),
      assets: bind(sql, { create: createAsset, list: listAssets, get: getAsset, update: updateAsset, deactivate: deactivateAsset, readValue: readAssetValue, readWithKey: readAssetWithKey }),
    },
    jobs: {
      ...bind(services, { triggerByApi: triggerJobByApi, triggerByWebhook: triggerJobByWebhook, stop: stopJob, answerInput: answerJobInput }),
      ...bind(sql, { get: getJob, list: listJobs }),
      /** a job's whole log, inline or archived */
      logs: (tenantId: string, jobId: string) => readJobLogs(sql, logArchive, tenantId, jobId),
    },
    items: {
      ...bind(services, { add: addItem, addToQueueNamed: addItemToQueueNamed, addBulk: addItemsBulk }),
      ...bind(sql, { list: listItems, activeQueueByName: getActiveQueueByName }),
    },
    /** The workspace's audit log, as its admins read it. */
    audit: bind(sql, { list: listAuditLog }),
    review: bind(services, { decide: reviewQueueItem, redrive: redriveQueueItems }),
    /** A machine's agent: its heartbeat, its runs and the items its consumers take. */
    machines: bind(sql, {
      findByKey: findMachineByKey, liveKeys: findLiveMachineKeys, heartbeat: recordHeartbeat, goodbye: recordGoodbye, giveUpJobs: giveUpMachineJobs,
      startJob, renewLeases: renewJobLeases, reportProgress: reportJobProgress, finishRun, pendingStops,
      askInput: askInputForRun, readInput: readJobInput, appendLogs: appendJobLogs,
      takeItems: takeItemsForRun, releaseItems: releaseQueueItems, hasWaitingJobs: machineHasWaitingJobs,
      readAsset: readAssetForMachine,
    }),
    /** The dispatcher's periodic work and what nudges start. */
    sweeps: {
      ...bind(sql, {
        timeOutJobs, offlineMachines: sweepOfflineMachines, failOrphans, retryItems: applyItemRetryPolicy, slaBreaches: markSlaBreaches,
        expiredIdempotencyKeys: sweepExpiredIdempotencyKeys, oldQueueStatBuckets: purgeQueueStatBuckets, startConsumers: startQueueConsumers, queuesNeedingConsumers,
        reconcile: reconcilePendingJobs, fireSchedules: fireDueSchedules,
      }),
      /** finished jobs' logs past the retention, into the archive */
      archiveLogs: (retentionDays: number) => archiveJobLogs(sql, logArchive, retentionDays),
      /** events (and finished webhook deliveries) past the retention */
      oldEvents: (retentionDays: number) => purgeOldEvents(sql, retentionDays),
    },
    /** The event feed and webhook subscriptions of a tenant, and their delivery (docs/decisions/events.md). */
    events: {
      feed: (tenantId: string, query: EventFeedQuery) => readEventFeed(sql, tenantId, query),
      webhooks: {
        create: (actor: AuditActor, tenantId: string, body: unknown) => createWebhook(sql, hooks(), actor, tenantId, body),
        update: (actor: AuditActor, tenantId: string, id: string, body: unknown) => updateWebhook(sql, hooks(), actor, tenantId, id, body),
        rotateSecret: (actor: AuditActor, tenantId: string, id: string) => rotateWebhookSecret(sql, hooks(), actor, tenantId, id),
        ...bind(sql, { list: listWebhooks, get: getWebhook, delete: deleteWebhook, deliveries: listDeliveries, redeliver, test: sendTestEvent }),
      },
      deliverer: (opts: Omit<DelivererOptions, 'sql' | 'logger' | 'settings'> = {}) =>
        createWebhookDeliverer({ sql, logger: deps.logger, settings: hooks(), ...opts }),
    },
    idempotency: bind(sql, { run: runIdempotent }),
    /** Readiness: Postgres answers. */
    ping: () => pingDatabase(sql),
    /** Effects recorded by the commands, published through a DispatchPort. */
    outbox: {
      relay: (port: DispatchPort, outage?: DbOutage) => createOutboxRelay({ sql, listenSql: deps.directSql, port, logger: deps.logger, outage }),
      drain: (port: DispatchPort) => drainOutbox(sql, port),
    },
  };
}

export type Engine = ReturnType<typeof createEngine>;
