import { randomUUID } from 'node:crypto';
import type { AuditActor, CatalogResource } from './audit/catalog-changes';
import type { ApiKeyChangeListener } from './api-keys/invalidation';
import type { CatalogBatch, Engine, EngineDeps as Deps, InTransaction, OnJobCreated, Paged, SaveOptions, SaveTarget, TransactionHandle } from './engine-contract';
import type { QueueItemResponse } from './queue-items/schemas';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey, type ApiKeyActor } from './api-keys/service';
import { findApiKeyByHash, findApiKeysByHashes, touchApiKeys } from './api-keys/repo';
import { findLiveAccessTokens } from './access-tokens/repo';
import { findAccessTokens, getSession, issueAccessToken, revokeAccessToken, toAccessTokenResponse } from './access-tokens/service';
import { signIn, signOut } from './access-tokens/sessions';
import { authenticateBearer } from './access-tokens/authenticate';
import { assertPlanFeature, createTenant, findTenantByName, getTenant, listTenants, resolveTenant, toTenantResponse, updateTenant } from './tenants/service';
import { createUser, deactivateUser, resolveUser, setPassword, toUserResponse } from './users/service';
import { listUsersOfTenant } from './users/repo';
import { changeOwnPassword, createWorkspaceUser, deactivateWorkspaceUser, listWorkspaceUsers, updateWorkspaceUser } from './users/admin';
import { listProcesses } from './catalog/processes';
import { getQueue } from './catalog/queues';
import { listMachineNames, listMachines } from './catalog/machines';
import { readAssetWithKey, readAssetForMachine } from './catalog/asset-read';
import {
  deactivateCatalogRecord, findCatalogRecordByName, getCatalogRecord, inCatalogBatch, listCatalogRecords, pauseQueue, presentPage,
  rotateMachineKeyAudited, saveCatalogRecord,
} from './catalog/by-resource';
import { listAuditLog } from './audit/read';
import { exportAuditLog, exportJobs, exportQueueItems } from './export/exports';
import { readMachineSeries, readQueueSeries, sampleMinute } from './catalog/queue-series';
import { purgeQueueStatBuckets, readQueueStats } from './catalog/queue-stats';
import { getSchedule, previewSchedule, toScheduleResponse } from './catalog/schedules';
import { fireDueSchedules } from './schedules/fire';
import { getJob, listJobs, stopJob, triggerJobByApi, triggerJobByUser, triggerJobByWebhook, type OnJobCreated as OnJobRowCreated } from './jobs/service';
import { toJobResponse, toStopJobResponse } from './jobs/serialize';
import { answerJobInput, readJobInput } from './jobs/input';
import { addItem, addItemToQueueNamed, addItemsBulk, addItemsMany, getActiveQueueByName, listItems } from './queue-items/service';
import { toQueueItemResponse } from './queue-items/serialize';
import { releaseQueueItems } from './queue-items/transitions';
import { applyItemRetryPolicy } from './queue-items/retry';
import { CLAIM_FLOOR_FULL_EVERY, claimFloorSwitch, recomputeClaimFloors } from './queue-items/claim-floor';
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
import { archiveJobLogs, pgLogArchive, readJobLogs } from './jobs/log-archive';
import {
  createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, redeliver, rotateWebhookSecret, sendTestEvent, updateWebhook,
  type WebhookSettings,
} from './webhooks/subscriptions';
import { purgeOldEvents, readEventFeed } from './events/feed';
import type { EventFeedQuery } from './webhooks/schemas';
import { createWebhookDeliverer, type DelivererOptions } from './webhooks/deliver';
import {
  askItemAction, askJobAction, cancelBulkAction, getBulkAction, runAskedAction, runBulkActions, toBulkActionResponse, type AskOptions, type BulkAsk, type RunBulkOptions,
} from './bulk/actions';
import type { ItemActionBody, JobActionBody } from './bulk/schemas';
import { runRetention, type RetentionOptions, type RetentionScopeResult } from './retention/pass';
import { listArchiveFiles, restoreArchivedItems } from './retention/restore';
import { sweepArchiveOrphans, type OrphanSweepOptions } from './retention/sweep';
import type { QueueItemRow, QueueRef } from './queue-items/repo';
import type { JobWithNames } from './jobs/repo';

/**
 * The engine: the one front door into core's domain (docs/architecture.md, "The engine"), the
 * implementation of the contract declared in engine-contract.ts. Its commands are grouped by who
 * calls them and bound to one Postgres pool; rows become the public API's records here and in the
 * modules it calls, never in a transport. The API (apps/api/src/deps.ts), the dispatcher
 * (apps/dispatcher/src/dispatcher.ts, deliverer.ts) and the CLI (packages/cli/src/main.ts) each
 * build one; a robot reaches it only through the API's agent session.
 */
export type { Engine, EngineDeps } from './engine-contract';


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

const jobPage = (page: { rows: JobWithNames[]; meta: Paged<unknown>['meta'] }) => ({ data: page.rows.map(toJobResponse), meta: page.meta });
const toJobRecordHook = (onCreated: OnJobCreated | undefined): OnJobRowCreated | undefined =>
  onCreated ? (tx, job) => onCreated(tx, toJobResponse(job)) : undefined;
const itemHook = (opts: InTransaction<QueueItemResponse> | undefined) => {
  const hook = opts?.inTransaction;
  return hook ? { inTransaction: (tx: TransactionHandle, row: QueueItemRow) => hook(tx, toQueueItemResponse(row)) } : {};
};
const bulkAsked = (ask: BulkAsk) => (ask.dryRun ? ask : { ...ask, action: toBulkActionResponse(ask.action) });

export function createEngine(deps: Deps): Engine {
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
    auth: {
      ...bind(sql, {
        apiKeyByHash: findApiKeyByHash, apiKeysByHashes: findApiKeysByHashes, touchApiKeys,
        bearer: authenticateBearer, liveTokens: findLiveAccessTokens, signIn, signOut,
      }),
      session: async (tokenId: string) => {
        const { user, token } = await getSession(sql, tokenId);
        return { ...toUserResponse(user), token: { id: token.id, prefix: token.prefix, expires_at: token.expires_at.toISOString() } };
      },
    },
    /** A tenant's API keys (the change listener drops revoked and rotated keys from every cache). */
    keys: {
      create: (actor: ApiKeyActor, body: unknown) => createApiKey(sql, keyChanges, actor, body),
      rotate: (actor: ApiKeyActor, keyId: string) => rotateApiKey(sql, keyChanges, actor, keyId),
      revoke: (actor: ApiKeyActor, keyId: string) => revokeApiKey(sql, keyChanges, actor, keyId),
      list: (tenantId: string, query: { page: number; limit: number }) => listApiKeys(sql, tenantId, query),
    },
    /** Workspaces (the CLI's `svc tenant`) and their plan. */
    tenants: {
      create: async (input) => toTenantResponse(await createTenant(sql, input)),
      get: async (id) => toTenantResponse(await getTenant(sql, id)),
      list: async () => (await listTenants(sql)).map(toTenantResponse),
      update: async (id, input) => toTenantResponse(await updateTenant(sql, id, input)),
      resolve: async (idOrName) => toTenantResponse(await resolveTenant(sql, idOrName)),
      findByName: async (name) => {
        const row = await findTenantByName(sql, name);
        return row ? toTenantResponse(row) : null;
      },
      requireFeature: (tenantId, feature) => assertPlanFeature(sql, tenantId, feature),
    },
    /** People and their access tokens (the CLI's `svc user` and `svc token`, the API's user admin). */
    users: {
      create: async (tenantId, input) => toUserResponse(await createUser(sql, tenantId, input)),
      deactivate: async (userId) => toUserResponse(await deactivateUser(sql, userId)),
      listOfTenant: async (tenantId) => (await listUsersOfTenant(sql, tenantId)).map(toUserResponse),
      resolve: async (idOrEmail) => toUserResponse(await resolveUser(sql, idOrEmail)),
      setPassword: async (userId, password) => toUserResponse(await setPassword(sql, userId, password)),
      findTokens: async (ref) => (await findAccessTokens(sql, ref)).map(toAccessTokenResponse),
      ...bind(sql, {
        issueToken: issueAccessToken, revokeToken: revokeAccessToken,
        listPage: listWorkspaceUsers, add: createWorkspaceUser, update: updateWorkspaceUser, deactivateInWorkspace: deactivateWorkspaceUser,
        changeOwnPassword,
      }),
    },
    /**
     * The catalogue: folders, processes, machines, queues, triggers, schedules and assets of a
     * tenant (catalog/by-resource.ts). Every write is audited and records its effects in its transaction.
     */
    catalog: {
      save: <R extends CatalogResource>(actor: AuditActor, tenantId: string, resource: R, target: SaveTarget, body: Record<string, unknown>, options?: SaveOptions) =>
        saveCatalogRecord(sql, assetKey, actor, tenantId, resource, target, body, options),
      deactivate: <R extends CatalogResource>(actor: AuditActor, tenantId: string, resource: R, id: string) =>
        deactivateCatalogRecord(sql, assetKey, actor, tenantId, resource, id),
      get: <R extends CatalogResource>(tenantId: string, resource: R, id: string) => getCatalogRecord(sql, assetKey, tenantId, resource, id),
      list: <R extends CatalogResource>(tenantId: string, resource: R, query: Record<string, unknown>) => listCatalogRecords(sql, assetKey, tenantId, resource, query),
      findByName: <R extends CatalogResource>(tenantId: string, resource: R, name: string) => findCatalogRecordByName(sql, assetKey, tenantId, resource, name),
      batch: <T>(actor: AuditActor, tenantId: string, work: (batch: CatalogBatch) => Promise<T>, options?: { dryRun?: boolean }) =>
        inCatalogBatch(sql, assetKey, actor, tenantId, work, options),
      processes: { list: async (tenantId, query) => presentPage(sql, 'process', await listProcesses(sql, tenantId, query)) },
      queues: {
        get: (tenantId, id) => getCatalogRecord(sql, assetKey, tenantId, 'queue', id),
        ref: async (tenantId, id) => {
          const { tenant_id, name, is_active, is_paused } = await getQueue(sql, tenantId, id);
          return { id, tenant_id, name, is_active, is_paused };
        },
        stats: (queue) => readQueueStats(sql, queue),
        series: (queue, query) => readQueueSeries(sql, queue, query),
        setPaused: (actor, tenantId, id, paused) => pauseQueue(sql, actor, tenantId, id, paused),
      },
      machines: {
        list: async (tenantId, query) => presentPage(sql, 'machine', await listMachines(sql, tenantId, query)),
        names: (tenantId) => listMachineNames(sql, tenantId),
        series: (tenantId, query) => readMachineSeries(sql, tenantId, query),
        rotateKey: (actor, tenantId, id) => rotateMachineKeyAudited(sql, actor, tenantId, id),
      },
      schedules: {
        get: async (tenantId, id) => toScheduleResponse(await getSchedule(sql, tenantId, id)),
        preview: (tenantId, id, count) => previewSchedule(sql, tenantId, id, count),
      },
      assets: bind(sql, { readWithKey: readAssetWithKey }),
    },
    /** Jobs: started by an API key, a webhook or a person in the console, stopped, answered, read. */
    jobs: {
      triggerByApi: async (actor, req, onCreated) => toJobResponse(await triggerJobByApi(services, actor, req, toJobRecordHook(onCreated))),
      triggerByUser: async (actor, req, onCreated) => toJobResponse(await triggerJobByUser(services, actor, req, toJobRecordHook(onCreated))),
      triggerByWebhook: async (actor, req, onCreated) => toJobResponse(await triggerJobByWebhook(services, actor, req, toJobRecordHook(onCreated))),
      stop: async (tenantId, id, actor) => toStopJobResponse(await stopJob(services, tenantId, id, actor)),
      answerInput: async (tenantId, jobId, body, actor) => toJobResponse(await answerJobInput(services, tenantId, jobId, body, actor)),
      get: async (tenantId, id) => toJobResponse(await getJob(sql, tenantId, id)),
      list: async (tenantId, query) => jobPage(await listJobs(sql, tenantId, query)),
      export: (tenantId, query, format) => exportJobs(sql, deps.recordArchive ?? null, tenantId, query, format),
      logs: (tenantId, jobId) => readJobLogs(sql, logArchive, tenantId, jobId),
    },
    items: {
      activeQueueByName: (tenantId, name) => getActiveQueueByName(sql, tenantId, name),
      add: async (queue, input, opts) => toQueueItemResponse(await addItem(services, queue, input, itemHook(opts))),
      addToQueueNamed: async (tenantId, queueName, input) => toQueueItemResponse(await addItemToQueueNamed(services, tenantId, queueName, input)),
      addBulk: (queue, input, opts) => addItemsBulk(services, queue, input, opts),
      addMany: (queue, inputs, opts) => addItemsMany(services, queue, inputs, opts),
      list: async (queue, query) => {
        const { rows, meta } = await listItems(sql, queue, query);
        return { data: rows.map(toQueueItemResponse), meta };
      },
      export: (queue, query, format, columns) => exportQueueItems(sql, deps.recordArchive ?? null, queue, query, format, columns),
    },
    review: {
      decide: async (actor, target, decision) => toQueueItemResponse(await reviewQueueItem(services, actor, target, decision)),
      redrive: (actor, queueId, body) => redriveQueueItems(services, actor, queueId, body),
    },
    /** Bulk actions by filter on a queue's items or a tenant's jobs (docs/decisions/bulk-actions.md). */
    bulk: {
      askItems: async (actor: AuditActor, queue: { id: string; tenant_id: string }, body: ItemActionBody, opts?: AskOptions) => bulkAsked(await askItemAction(sql, actor, queue, body, opts)),
      askJobs: async (actor: AuditActor, tenantId: string, body: JobActionBody, opts?: AskOptions) => bulkAsked(await askJobAction(sql, actor, tenantId, body, opts)),
      get: async (tenantId, id, target) => toBulkActionResponse(await getBulkAction(sql, tenantId, id, target)),
      cancel: async (actor, tenantId, id, target) => toBulkActionResponse(await cancelBulkAction(sql, actor, tenantId, id, target)),
      /** open actions' chunks, within a time budget (the dispatcher's pass) */
      run: (opts: Omit<RunBulkOptions, 'logger'> = {}) => runBulkActions(sql, { ...opts, logger: deps.logger }),
      /** a small action to its end, by the request that asked for it and holds its lease */
      runAsked: (id: string, token: string) => runAskedAction(sql, id, token, deps.logger),
    },
    /** The workspace's audit log, as its admins read it. */
    audit: {
      list: async (tenantId, query) => {
        const { rows, meta } = await listAuditLog(sql, tenantId, query);
        return { data: rows, meta };
      },
      export: (tenantId, query, format) => exportAuditLog(sql, tenantId, query, format),
    },
    /** A machine's agent (through the API's agent session): its heartbeat, its runs and the items its consumers take. */
    machines: {
      ...bind(sql, {
        findByKey: findMachineByKeyBatched, lapsedKeys: findLapsedMachineKeys, heartbeat: recordHeartbeatBatched, liveness: recordLiveness, reportLoad: recordMachineLoad, goodbye: machineLeft, giveUpJobs: giveUpMachineJobs,
        startJob, acknowledgeRun, renewLeases: renewJobLeasesBatched, reportProgress: reportJobProgress, pendingStops,
        askInput: askInputForRun, readInput: readJobInput, appendLogs: appendJobLogs,
        releaseItems: releaseQueueItems, hasWaitingJobs: machineHasWaitingJobs, earliestPendingStart,
        readAsset: readAssetForMachine,
      }),
      takeItems: (req: TakeRequest) => takeItemsForRun(sql, req, { floor: floors.current() }),
      finishRun: async (jobId, attempt, end, opts) => {
        const job = await finishRun(sql, jobId, attempt, end, opts);
        return job ? { status: job.status } : null;
      },
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
        list: async (tenantId, query) => {
          const { rows, meta } = await listWebhooks(sql, tenantId, query);
          return { data: rows, meta };
        },
        deliveries: async (tenantId, id, input) => {
          const { rows, meta } = await listDeliveries(sql, tenantId, id, input);
          return { data: rows, meta };
        },
        ...bind(sql, { get: getWebhook, delete: deleteWebhook, redeliver, test: sendTestEvent }),
      },
      deliverer: (opts: Omit<DelivererOptions, 'sql' | 'logger' | 'settings'> = {}) =>
        createWebhookDeliverer({ sql, logger: deps.logger, settings: hooks(), ...opts }),
    },
    /** Effects recorded by the commands, published through a DispatchPort. */
    outbox: {
      relay: (port: DispatchPort, outage?: DbOutage) => createOutboxRelay({ sql, listenSql: deps.directSql, port, logger: deps.logger, outage }),
      drain: (port: DispatchPort) => drainOutbox(sql, port),
    },
    idempotency: { run: (id, request, produce, onStoreError) => runIdempotent(sql, id, request, produce, onStoreError) },
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

