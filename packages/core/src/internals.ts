/**
 * `@svc/core/internals`: core's internals that tests, the test helpers (packages/testing) and the
 * benchmarks reach directly: repository functions, the services behind the engine's commands,
 * state machines, fixtures' helpers. Not an API: the apps and the CLI may not import it (they go
 * through the engine, src/index.ts); test/layers.test.ts fails when one does.
 */

// Shared vocabulary: errors, configuration, logging, scopes, limits.
export { parseRedisTarget } from './config';
export type { SignalTarget } from './shutdown';
export { SCOPES } from './scopes';

// Postgres and Redis.
export { Cluster, allNodes } from './redis';
export type { Redis } from './redis';
export { DEFAULT_DATABASE_URL } from './db/pooler';
export type { Queryable, Tx } from './db/sql';
export { loadMigrations } from './db/migrate';
export { asStoredJsonb, compareJsonbKeys } from './db/jsonb';
export { pingDatabase } from './db/health';

// Request validation and security.
export { assertJsonInput } from './validation/json-input';
export { sha256 } from './security/hash';
export { ACCESS_TOKEN_PREFIX, issueSecret } from './security/secrets';
export { hashPassword, verifyPassword } from './security/password';
export { decrypt } from './security/secret-box';

// Effects: written with each change, published by the dispatcher's relay (docs/decisions/outbox.md).
export { recordEffect } from './outbox/effects';
export type { Effect } from './outbox/effects';
export { createOutboxRelay, drainOutbox, NUDGE_WINDOW_MS, relayOnce } from './outbox/relay';
export { inTransactionPublishingAtOnce } from './outbox/at-once';

// Dispatch: the port effects are published through, a job's life on its machine, sweeps.
export { noopDispatch } from './dispatch/port';
export type { DispatchJobRef, DispatchPort } from './dispatch/port';
export { findMachineByKey, pickMachineForFollowUp, recordGoodbye, recordHeartbeat } from './machines/heartbeat';
export { recordHeartbeats, recordLiveness } from './machines/heartbeat-batched';
export { findMachinesByKeys } from './machines/key-lookup';
export { bullJobId } from './dispatch/bull-queues';
export { epochKeys, keySlot } from './dispatch/epoch';
export { acknowledgeRun, findRunEndedAs, finishJob, renewJobLeases, reportJobProgress, startJob } from './dispatch/job-run';
export { renewManyJobLeases } from './dispatch/lease-renewal';
export { machineLeft } from './dispatch/hand-back';
export { giveUpMachineJobs, markSlaBreaches, pendingStops, sweepOfflineMachines, timeOutJobs } from './dispatch/sweeps';
export { queuesNeedingConsumers, startQueueConsumers } from './dispatch/consumers';
export { reconcilePendingJobs } from './dispatch/reconcile';
export { getTenantQueue, reviewQueueItem } from './queue-items/review';

// Resources: the commands and queries behind the engine's groups, their repositories and rules.
export { recordAudit } from './audit/audit';
export type { TenantRow } from './tenants/repo';
export {
  deactivateApiKey, findApiKey, findApiKeyByHash, listApiKeyRows, replaceApiKeySecret, touchApiKeys,
} from './api-keys/repo';
export { redisApiKeyPublisher } from './api-keys/invalidation';
export { createApiKey } from './api-keys/service';
export { findAccessTokenByHash } from './access-tokens/repo';
export { createTenant, getTenant, listTenants, resolveTenant, updateTenant } from './tenants/service';
export { deactivateUserRow, findUserByEmail } from './users/repo';
export { createUser, deactivateUser, resolveUser, setPassword } from './users/service';
export { findAccessTokens, getSession, issueAccessToken, login, revokeAccessToken } from './access-tokens/service';
export { authenticateAccessToken, authenticateBearer } from './access-tokens/authenticate';
export { canonicalJson, idempotencyRequestHash } from './idempotency/key';
export {
  findIdempotencyKey, purgeExpiredIdempotencyKeys, releaseLostClaim, sweepExpiredIdempotencyKeys,
} from './idempotency/repo';
export { beginIdempotent, runIdempotent } from './idempotency/service';
export { consumeExecution, isSubscriptionActive, quotaResetsAt, readQuotaUsage } from './tenants/quota';
export { JOB_STATUSES, JOB_TRANSITIONS, canTransition, requestRunningJobStop, transitionJob } from './jobs/transitions';
export type { JobStatus } from './jobs/transitions';
export { findJobWithNames } from './jobs/repo';
export {
  LOG_APPEND_MAX_BYTES, LOG_INLINE_MAX_BYTES, LOG_TOTAL_MAX_BYTES, LOG_TRUNCATED_MARKER, appendJobLogs,
} from './jobs/logs';
export { archiveJobLogs, pgLogArchive, readJobLogs } from './jobs/log-archive';
export { expiredRows } from './retention/pass';
export { listJobs, stopJob, triggerJobByApi, triggerJobByWebhook } from './jobs/service';
export { answerJobInput, askJobInput, checkInputRequest, checkInputValue, readJobInput } from './jobs/input';
export { createFolder, findFolderByName } from './catalog/folders';
export { createProcess, findProcessByName, listProcesses } from './catalog/processes';
export {
  createMachine, deactivateMachine, findMachineByName, listMachineNames, listMachines, rotateMachineKey,
} from './catalog/machines';
export { createQueue, findQueueByName, listQueues, loadQueueItemCounts, setQueuePaused, updateQueue } from './catalog/queues';
export { createTrigger, deactivateTrigger, updateTrigger } from './catalog/triggers';
export { createAsset, deactivateAsset, findAssetByName, readAssetValue, readStoredCredentials } from './catalog/assets';
export { readAssetWithKey } from './catalog/asset-read';
export type { AssetReader } from './catalog/asset-read';
export { writeCatalogEntity } from './catalog/audited-write';
export type { CatalogEffect } from './catalog/audited-write';
export { createSchedule, getSchedule } from './catalog/schedules';
export { assertValidCron, isValidTimeZone, nextTick, nextTicks, ticksBetween } from './schedules/cron';
export { fireDueSchedules } from './schedules/fire';
export { ITEM_COLUMNS, exportQueueItemsChunk } from './queue-items/repo';
export { EXPORT_CHUNK_BYTES, EXPORT_CHUNK_ROWS, walkKeyset } from './export/stream';
export { jsonbContains } from './export/jsonb-contains';
export { parseIncludeArchived } from './export/archived';
export type { QueueItemRow } from './queue-items/repo';
export { addItem, addItemToQueueNamed, addItemsBulk, addItemsMany, getActiveQueueByName, listItems } from './queue-items/service';
export {
  QUEUE_ITEM_TRANSITIONS, canTransitionItem, failItemsOfJobs, failOrphanedItems, releaseQueueItems, releaseUnknownClaims,
} from './queue-items/transitions';
export { compareTakeOrder, settleAndClaimItems, settleAndClaimItemsBatch } from './queue-items/take';
export type { TakeOptions } from './queue-items/take';
export { applyItemRetryPolicy, retryEndedItems } from './queue-items/retry';
export { approveQueueItem, redriveDeadLetterItems, rejectQueueItem } from './queue-items/review';
export { CLAIM_FLOOR_FULL_EVERY, CLAIM_FLOOR_LAG, claimFloorSwitch, recomputeClaimFloors, vacuumHeldBack } from './queue-items/claim-floor';
export { countInScope, nextChunk } from './bulk/matching';
export type { BulkScope } from './bulk/matching';

// Events out: the feed and signed webhooks (docs/decisions/events.md).
export { readEventFeed } from './events/feed';
export { verifyWebhookSignature } from './webhooks/sign';
export { checkWebhookUrl, isRefusedAddress } from './webhooks/target';
export { retryDelayMs } from './webhooks/deliver';
export { postWebhook } from './webhooks/post';
// Observability: Prometheus metrics (docs/decisions/observability.md).
export { metricsRegistry } from './metrics';
// Traces: OpenTelemetry, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/decisions/observability.md).

// Rows and the mappers that make them the public API's records (the engine applies them; tests read rows).
export { toBulkActionResponse, type BulkActionRow, type BulkAsk } from './bulk/actions';
export { BULK_ACTION_STATUSES, ITEM_ACTION_STATUSES, JOB_ACTION_STATUSES, ItemActionFilter, JobActionFilter, type BulkActionStatus } from './bulk/schemas';
export type { ApiKeyRow } from './api-keys/repo';
export { toTenantResponse } from './tenants/service';
export { toUserResponse } from './users/service';
export { toAccessTokenResponse } from './access-tokens/service';
export type { JobWithNames } from './jobs/repo';
export { toJobResponse, toStopJobResponse } from './jobs/serialize';
export { toFolderResponse, type FolderRow } from './catalog/folders';
export { toProcessResponse, type ProcessRow } from './catalog/processes';
export { toMachineResponse, type MachineRow } from './catalog/machines';
export { toQueueResponse, type QueueRow } from './catalog/queues';
export { toTriggerResponse, type TriggerRow } from './catalog/triggers';
export { toAssetResponse, type AssetRecord } from './catalog/assets';
export { toScheduleResponse, type ScheduleRow } from './catalog/schedules';
export { toQueueItemResponse } from './queue-items/serialize';

// The rules' constants and helpers that tests check directly.
export { ARCHIVED_COLUMN, AUDIT_EXPORT_COLUMNS, JOB_EXPORT_COLUMNS } from './export/exports';
export { neutralizeFormula } from './export/stream';
export { SERIES_RETENTION_HOURS, SERIES_WINDOWS, percentileOf } from './catalog/queue-series';
export { consumerCapacity, forecastDeadlines, type DeadlineForecast, type ForecastMachine, type ForecastTrigger } from './catalog/queue-forecast';
export { checkArchiveKey, directoryArchive, type ArchiveEntry, type RecordArchive } from './retention/archive';
export { ORPHAN_MIN_AGE_MS, type OrphanSweepOptions, type OrphanSweepResult } from './retention/sweep';
export { s3Archive, type S3ArchiveOptions } from './retention/s3-archive';
export { ENDED_ITEM_STATUSES, RETENTION_ACTIONS, RETENTION_BATCH, type RetentionScopeResult } from './retention/pass';
export type { ArchiveSettings } from './config';
export type { RedisTarget } from './redis';
export { sqlFormat, type ServerMessages } from './messages/server-messages';
