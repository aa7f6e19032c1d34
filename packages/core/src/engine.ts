import { randomUUID } from 'node:crypto';
import type { Sql } from './db/sql';
import type { AuditActor, CatalogResource } from './audit/catalog-changes';
import type { Logger } from './logger';
import type { ApiKeyChangeListener } from './api-keys/invalidation';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey, type ApiKeyActor } from './api-keys/service';
import { findApiKeyByHash, findApiKeysByHashes, touchApiKeys } from './api-keys/repo';
import { findLiveAccessTokens } from './access-tokens/repo';
import { findAccessTokens, getSession, issueAccessToken, revokeAccessToken } from './access-tokens/service';
import { signIn, signOut } from './access-tokens/sessions';
import { authenticateBearer } from './access-tokens/authenticate';
import { assertPlanFeature, createTenant, findTenantByName, getTenant, listTenants, resolveTenant, updateTenant } from './tenants/service';
import { createUser, deactivateUser, resolveUser, setPassword } from './users/service';
import { listUsersOfTenant } from './users/repo';
import { changeOwnPassword, createWorkspaceUser, deactivateWorkspaceUser, listWorkspaceUsers, updateWorkspaceUser } from './users/admin';
import { listProcesses } from './catalog/processes';
import { getQueue, loadQueueItemCounts } from './catalog/queues';
import { listMachineNames, listMachines } from './catalog/machines';
import { readAssetWithKey, readAssetForMachine } from './catalog/asset-read';
import {
  deactivateCatalogRecord, findCatalogRecordByName, getCatalogRecord, inCatalogBatch, listCatalogRecords, pauseQueue, rotateMachineKeyAudited,
  saveCatalogRecord, type CatalogBatch, type SaveOptions, type SaveTarget,
} from './catalog/by-resource';
import { listAuditLog } from './audit/read';
import { exportAuditLog, exportJobs, exportQueueItems } from './export/exports';
import { readMachineSeries, readQueueSeries, sampleMinute } from './catalog/queue-series';
import { purgeQueueStatBuckets, readQueueStats } from './catalog/queue-stats';
import { getSchedule, previewSchedule } from './catalog/schedules';
import { fireDueSchedules } from './schedules/fire';
import { getJob, listJobs, stopJob, triggerJobByApi, triggerJobByUser, triggerJobByWebhook } from './jobs/service';
import { answerJobInput, readJobInput } from './jobs/input';
import { addItem, addItemToQueueNamed, addItemsBulk, addItemsMany, getActiveQueueByName, listItems } from './queue-items/service';
import { releaseQueueItems } from './queue-items/transitions';
import { applyItemRetryPolicy } from './queue-items/retry';
import { CLAIM_FLOOR_FULL_EVERY, claimFloorSwitch, recomputeClaimFloors } from './queue-items/claim-floor';
import type { ClaimFloorMode } from './config';
import { redriveQueueItems, reviewQueueItem } from './queue-items/review';
import { acknowledgeRun, reportJobProgress, startJob } from './dispatch/job-run';
import { renewJobLeasesBatched } from './dispatch/lease-renewal';
import { machineLeft } from './dispatch/hand-back';
import { findLapsedMachineKeys, recordMachineLoad } from './machines/heartbeat';
import { findMachineByKeyBatched } from './machines/key-lookup';
import { recordHeartbeatBatched, recordLiveness } from './machines/heartbeat-batched';
import { askInputForRun, finishRun, takeItemsForRun, type TakeRequest } from './machines/run-requests';
import { giveUpMachineJobs, failOrphans, markSlaBreaches, pendingStops, sweepOfflineMachines, timeOutJobs } from './dispatch/sweeps';
import { earliestPendingStart, machineHasWaitingJobs, queuesNeedingConsumers, startQueueConsumers } from './dispatch/consumers';
import { reconcilePendingJobs } from './dispatch/reconcile';
import { runIdempotent } from './idempotency/service';
import { pingDatabase } from './db/health';
import { schemaVersion } from './db/migrate';
import { registerPlatformGauges, type PlatformGaugeOptions } from './metrics/platform';
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
import { askItemAction, askJobAction, cancelBulkAction, getBulkAction, runAskedAction, runBulkActions, type AskOptions, type BulkActionRow, type RunBulkOptions } from './bulk/actions';
import type { ItemActionBody, JobActionBody } from './bulk/schemas';
import type { RecordArchive } from './retention/archive';
import { runRetention, type RetentionOptions, type RetentionScopeResult } from './retention/pass';
import { listArchiveFiles, restoreArchivedItems } from './retention/restore';
import { sweepArchiveOrphans, type OrphanSweepOptions } from './retention/sweep';
import type { QueueRef } from './queue-items/repo';

/**
 * The engine: the one front door into core's domain (docs/architecture.md, "The engine"). Its
 * commands are grouped by who calls them and bound to one Postgres pool. The API (apps/api/src/deps.ts),
 * the dispatcher (apps/dispatcher/src/dispatcher.ts, deliverer.ts) and the CLI (packages/cli/src/main.ts)
 * each build one; the agent reaches it only through the API's agent session. Each command owns its
 * transaction, its audit row and its effects. Apps and the CLI import nothing else from core but
 * vocabulary: schemas, response mappers, errors, config and the infrastructure factories.
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
  /** where retention archives items and jobs (retention/archive-config.ts; ARCHIVE_DIR or ARCHIVE_S3_BUCKET); without it scopes that archive wait */
  recordArchive?: RecordArchive | null;
  /** webhook secrets' key and target policy (docs/decisions/events.md); without it webhook writes refuse */
  webhooks?: WebhookSettings;
  /** the asset encryption key (or how to get it, asked for only by asset commands); without it asset commands refuse */
  assetKey?: Buffer | (() => Buffer);
  /**
   * Where a trigger, a stop, an input answer, an add's queue nudge and the dispatcher's consumer
   * jobs publish their effects right after their commit (BullMQ dispatch), one hop sooner than the
   * outbox relay, which publishes them again (outbox/at-once.ts); absent, only the relay publishes.
   */
  atOnce?: DispatchPort;
  /** CLAIM_FLOOR: when the take reads past each queue's claim floor, and the floors are kept (docs/decisions/claim-floor.md) */
  claimFloor?: ClaimFloorMode;
  /** CLAIM_FLOOR=auto: the age of the oldest snapshot from which the dispatcher keeps floors */
  claimFloorEngageSeconds?: number;
  /** how often a process asks whether floors exist (CLAIM_FLOOR=auto; CLAIM_FLOOR_EVERY_MS) */
  claimFloorEveryMs?: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type DropFirst<T extends any[]> = T extends [unknown, unknown, ...infer Rest] ? Rest : never;

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
  const services = { sql, logger: deps.logger, atOnce: deps.atOnce };
  const keyChanges = deps.apiKeyChanges ?? NO_KEY_LISTENER;
  const logArchive = deps.logArchive ?? pgLogArchive;
  const hooks = (): WebhookSettings => {
    if (!deps.webhooks) throw new Error('createEngine: webhooks settings are missing');
    return deps.webhooks;
  };
  const claimFloor = deps.claimFloor ?? 'off';
  const floors = claimFloorSwitch(sql, claimFloor, deps.claimFloorEveryMs);
  let floorPasses = 0;
  let orphanSweeps = 0;
  // the retention pass's holder of its scopes' leases, and whether its pass runs now
  const retentionHolder = randomUUID();
  let retentionRunning = false;
  const assetKey = (): Buffer => {
    if (!deps.assetKey) throw new Error('createEngine: the asset encryption key is missing');
    return typeof deps.assetKey === 'function' ? deps.assetKey() : deps.assetKey;
  };
  return {
    /** Who is calling: API keys by their hash (the API's key cache), access tokens, sessions, sign-in. */
    auth: bind(sql, {
      apiKeyByHash: findApiKeyByHash, apiKeysByHashes: findApiKeysByHashes, touchApiKeys,
      bearer: authenticateBearer, liveTokens: findLiveAccessTokens, session: getSession, signIn, signOut,
    }),
    /** A tenant's API keys (the change listener drops revoked and rotated keys from every cache). */
    keys: {
      create: (actor: ApiKeyActor, body: unknown) => createApiKey(sql, keyChanges, actor, body),
      rotate: (actor: ApiKeyActor, keyId: string) => rotateApiKey(sql, keyChanges, actor, keyId),
      revoke: (actor: ApiKeyActor, keyId: string) => revokeApiKey(sql, keyChanges, actor, keyId),
      list: (tenantId: string, query: { page: number; limit: number }) => listApiKeys(sql, tenantId, query),
    },
    /** Workspaces (the CLI's `svc tenant`) and their plan. */
    tenants: bind(sql, {
      create: createTenant, get: getTenant, list: listTenants, update: updateTenant, resolve: resolveTenant, findByName: findTenantByName,
      requireFeature: assertPlanFeature,
    }),
    /** People and their access tokens (the CLI's `svc user` and `svc token`, the API's user admin). */
    users: bind(sql, {
      create: createUser, deactivate: deactivateUser, listOfTenant: listUsersOfTenant, resolve: resolveUser, setPassword,
      issueToken: issueAccessToken, revokeToken: revokeAccessToken, findTokens: findAccessTokens,
      /** a workspace's admins: paged list, create with a one-time password, role/name, deactivate (audited) */
      listPage: listWorkspaceUsers, add: createWorkspaceUser, update: updateWorkspaceUser, deactivateInWorkspace: deactivateWorkspaceUser,
      /** anyone signed in: their own password (audited) */
      changeOwnPassword,
    }),
    /**
     * The catalogue: folders, processes, machines, queues, triggers, schedules and assets of a
     * tenant (catalog/by-resource.ts). Every write is audited and records its effects in its transaction.
     */
    catalog: {
      /** the one "create or update a record": `'new'` (create), `{ id }` (change these fields), `{ name }` (create or change what differs) */
      save: <Row extends { id: string } = { id: string }>(
        actor: AuditActor, tenantId: string, resource: CatalogResource, target: SaveTarget, body: Record<string, unknown>, options?: SaveOptions,
      ) => saveCatalogRecord<Row>(sql, assetKey, actor, tenantId, resource, target, body, options),
      deactivate: <Row extends { id: string } = { id: string }>(actor: AuditActor, tenantId: string, resource: CatalogResource, id: string) =>
        deactivateCatalogRecord<Row>(sql, assetKey, actor, tenantId, resource, id),
      get: <Row extends { id: string } = { id: string }>(tenantId: string, resource: CatalogResource, id: string) =>
        getCatalogRecord<Row>(sql, assetKey, tenantId, resource, id),
      list: <Row extends { id: string } = { id: string }>(tenantId: string, resource: CatalogResource, query: Record<string, unknown>) =>
        listCatalogRecords<Row>(sql, assetKey, tenantId, resource, query),
      findByName: <Row extends { id: string } = { id: string }>(tenantId: string, resource: CatalogResource, name: string) =>
        findCatalogRecordByName<Row>(sql, assetKey, tenantId, resource, name),
      /** several saves in one transaction (`svc apply`), all rolled back on `dryRun` */
      batch: <T>(actor: AuditActor, tenantId: string, work: (batch: CatalogBatch) => Promise<T>, options?: { dryRun?: boolean }) =>
        inCatalogBatch(sql, assetKey, actor, tenantId, work, options),
      processes: bind(sql, { list: listProcesses }),
      queues: {
        ...bind(sql, { get: getQueue, itemCounts: loadQueueItemCounts, stats: readQueueStats, series: readQueueSeries }),
        /** pause (true) or resume (false), audited */
        setPaused: (actor: AuditActor, tenantId: string, id: string, paused: boolean) => pauseQueue(sql, actor, tenantId, id, paused),
      },
      machines: {
        ...bind(sql, { list: listMachines, names: listMachineNames, series: readMachineSeries }),
        /** a new machine key, audited; the key is in the answer only */
        rotateKey: (actor: AuditActor, tenantId: string, id: string) => rotateMachineKeyAudited(sql, actor, tenantId, id),
      },
      schedules: bind(sql, { get: getSchedule, preview: previewSchedule }),
      assets: bind(sql, { readWithKey: readAssetWithKey }),
    },
    /** Jobs: started by an API key, a webhook or a person in the console, stopped, answered, read. */
    jobs: {
      ...bind(services, { triggerByApi: triggerJobByApi, triggerByUser: triggerJobByUser, triggerByWebhook: triggerJobByWebhook, stop: stopJob, answerInput: answerJobInput }),
      ...bind(sql, { get: getJob, list: listJobs }),
      /** every job the list's filters match, as CSV or NDJSON read in keyset chunks (export/stream.ts); archived ones when asked */
      export: (...args: DropFirst<Parameters<typeof exportJobs>>) => exportJobs(sql, deps.recordArchive ?? null, ...args),
      /** a job's whole log, inline or archived */
      logs: (tenantId: string, jobId: string) => readJobLogs(sql, logArchive, tenantId, jobId),
    },
    /** Queue items: added by API keys (and `svc items import`), listed, reviewed by people. */
    items: {
      ...bind(services, { add: addItem, addToQueueNamed: addItemToQueueNamed, addBulk: addItemsBulk, addMany: addItemsMany }),
      ...bind(sql, { list: listItems, activeQueueByName: getActiveQueueByName }),
      /** every item of a queue the list's filters match, as CSV or NDJSON read in keyset chunks (export/stream.ts); archived ones when asked */
      export: (...args: DropFirst<Parameters<typeof exportQueueItems>>) => exportQueueItems(sql, deps.recordArchive ?? null, ...args),
    },
    review: bind(services, { decide: reviewQueueItem, redrive: redriveQueueItems }),
    /** Bulk actions by filter on a queue's items or a tenant's jobs (docs/decisions/bulk-actions.md). */
    bulk: {
      askItems: (actor: AuditActor, queue: { id: string; tenant_id: string }, body: ItemActionBody, opts?: AskOptions) => askItemAction(sql, actor, queue, body, opts),
      askJobs: (actor: AuditActor, tenantId: string, body: JobActionBody, opts?: AskOptions) => askJobAction(sql, actor, tenantId, body, opts),
      get: (tenantId: string, id: string, target?: BulkActionRow['target']) => getBulkAction(sql, tenantId, id, target),
      cancel: (actor: AuditActor, tenantId: string, id: string, target?: BulkActionRow['target']) => cancelBulkAction(sql, actor, tenantId, id, target),
      /** open actions' chunks, within a time budget (the dispatcher's pass) */
      run: (opts: Omit<RunBulkOptions, 'logger'> = {}) => runBulkActions(sql, { ...opts, logger: deps.logger }),
      /** a small action to its end, by the request that asked for it and holds its lease */
      runAsked: (id: string, token: string) => runAskedAction(sql, id, token, deps.logger),
    },
    /** The workspace's audit log, as its admins read it. */
    audit: bind(sql, { list: listAuditLog, export: exportAuditLog }),
    /** A machine's agent (through the API's agent session): its heartbeat, its runs and the items its consumers take. */
    machines: {
      ...bind(sql, {
        findByKey: findMachineByKeyBatched, lapsedKeys: findLapsedMachineKeys, heartbeat: recordHeartbeatBatched, liveness: recordLiveness, reportLoad: recordMachineLoad, goodbye: machineLeft, giveUpJobs: giveUpMachineJobs,
        startJob, acknowledgeRun, renewLeases: renewJobLeasesBatched, reportProgress: reportJobProgress, finishRun, pendingStops,
        askInput: askInputForRun, readInput: readJobInput, appendLogs: appendJobLogs,
        releaseItems: releaseQueueItems, hasWaitingJobs: machineHasWaitingJobs, earliestPendingStart,
        readAsset: readAssetForMachine,
      }),
      takeItems: (req: TakeRequest) => takeItemsForRun(sql, req, { floor: floors.current() }),
    },
    /** The dispatcher's periodic work and what nudges start. */
    sweeps: {
      ...bind(sql, {
        timeOutJobs, offlineMachines: sweepOfflineMachines, retryItems: applyItemRetryPolicy, slaBreaches: markSlaBreaches,
        expiredIdempotencyKeys: sweepExpiredIdempotencyKeys, oldQueueStatBuckets: purgeQueueStatBuckets, sampleMinute,
        reconcile: reconcilePendingJobs, fireSchedules: fireDueSchedules,
      }),
      /**
       * Items still in progress under a job that is no longer active → failed: a safety net (the
       * job-end paths fail their items themselves). It reads the partial index of in-progress
       * items, where every item taken leaves an entry vacuum cannot remove while a snapshot is
       * held: while the claim floors are engaged it runs one sweep in CLAIM_FLOOR_FULL_EVERY.
       */
      failOrphans: async () => (floors.current() && orphanSweeps++ % CLAIM_FLOOR_FULL_EVERY !== 0 ? [] : failOrphans(sql)),
      /** consumer jobs a queue's triggers need now; the ready items read past the claim floors while they are engaged */
      startConsumers: (queueId: string) => startQueueConsumers(sql, queueId, { floor: floors.current(), atOnce: deps.atOnce, logger: deps.logger }),
      queuesNeedingConsumers: (tenantId: string | null = null) => queuesNeedingConsumers(sql, tenantId, { floor: floors.current() }),
      /** finished jobs' logs past the retention, into the archive */
      archiveLogs: (retentionDays: number) => archiveJobLogs(sql, logArchive, retentionDays),
      /** the claim floors from the items (docs/decisions/claim-floor.md); with CLAIM_FLOOR off, or auto while vacuum runs, their removal */
      claimFloors: () => recomputeClaimFloors(sql, { mode: claimFloor, engageSeconds: deps.claimFloorEngageSeconds, full: floorPasses++ % CLAIM_FLOOR_FULL_EVERY === 0 }),
      /** events (and finished webhook deliveries) past the retention */
      oldEvents: (retentionDays: number) => purgeOldEvents(sql, retentionDays),
      /**
       * ended items and jobs past their retention: archived when asked, then deleted, within a
       * budget (docs/decisions/retention.md). A tick that comes while this engine's pass still
       * runs does nothing: the pass's duty share holds per process, whatever the ticks' period.
       */
      retention: async (opts: Omit<RetentionOptions, 'logger' | 'archive' | 'logArchive' | 'holder'> = {}): Promise<RetentionScopeResult[]> => {
        if (retentionRunning) return [];
        retentionRunning = true;
        try {
          return await runRetention(sql, { ...opts, holder: retentionHolder, logger: deps.logger, archive: deps.recordArchive ?? null, logArchive });
        } finally {
          retentionRunning = false;
        }
      },
    },
    /** The retention archive: its manifest, and items brought back as new ones (`svc archive`). */
    archive: {
      /** whether an archive is configured (restore reads it) */
      configured: () => !!deps.recordArchive,
      list: (tenantId: string, filter: { queueId?: string; from?: Date; to?: Date } = {}) => listArchiveFiles(sql, tenantId, filter),
      restoreItems: (queue: QueueRef, from: Date, to: Date) => {
        if (!deps.recordArchive) throw new Error('createEngine: the record archive (ARCHIVE_DIR or ARCHIVE_S3_BUCKET) is missing');
        return restoreArchivedItems(services, deps.recordArchive, queue, from, to);
      },
      /** removes the archive's files that no manifest row lists (killed batches' orphans) */
      sweepOrphans: (opts: OrphanSweepOptions = {}) => {
        if (!deps.recordArchive) throw new Error('createEngine: the record archive (ARCHIVE_DIR or ARCHIVE_S3_BUCKET) is missing');
        return sweepArchiveOrphans(sql, deps.recordArchive, opts);
      },
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
    /** Effects recorded by the commands, published through a DispatchPort. */
    outbox: {
      relay: (port: DispatchPort, outage?: DbOutage) => createOutboxRelay({ sql, listenSql: deps.directSql, port, logger: deps.logger, outage }),
      drain: (port: DispatchPort) => drainOutbox(sql, port),
    },
    idempotency: bind(sql, { run: runIdempotent }),
    /**
     * This process's scrapes report the platform's state (queues by workspace, machines, the outbox)
     * read through this engine's pool, cached for `ttlMs` (metrics/platform.ts; the API's /metrics).
     */
    platformGauges: (opts: PlatformGaugeOptions = {}) => registerPlatformGauges(sql, opts),
    /** The highest migration applied (`svc migrate`). */
    schemaVersion: () => schemaVersion(sql),
    /** Readiness: Postgres answers. */
    ping: () => pingDatabase(sql),
  };
}

export type Engine = ReturnType<typeof createEngine>;
