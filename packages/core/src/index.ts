/**
 * The public surface of @svc/core, named on purpose: what the transports (apps/*, packages/cli),
 * the test helpers, the benchmarks and the tests use. Anything not listed here is internal to core.
 */

// The engine: the domain's commands, grouped and bound to one pool (docs/architecture.md).
export { createEngine } from './engine';
export type { Engine } from './engine';

// Shared vocabulary: errors, configuration, logging, scopes, limits.
export {
  AppError, ConflictError, DEFAULT_MESSAGES, ForbiddenError, HttpError, NotFoundError, PayloadTooLargeError, RateLimitError,
  UnauthorizedError, ValidationError, isAppError,
} from './errors';
export type { ErrorCode, FieldIssue } from './errors';
export { ConfigError, parseConfig, parseEncryptionKey, parseRedisTarget } from './config';
export type { Config, DispatcherRole } from './config';
export { createLogger } from './logger';
export type { Logger } from './logger';
export { onShutdownSignals } from './shutdown';
export type { SignalTarget } from './shutdown';
export { ENVIRONMENTS, PLAN_FEATURES, SCOPES, SCOPE_NAMES, hasScope } from './scopes';
export type { Environment, PlanFeature, Scope } from './scopes';
export { DEFAULT_RATE_LIMIT, RATE_LIMIT_WINDOW_SECONDS, rateLimitFor } from './rate-limits';

// Postgres and Redis.
export { Cluster, allNodes, createRedis, duplicateRedis, existsMany, isCluster, isRedisClient, primaries, redisKeys, watchClusterSubscriber } from './redis';
export type { CreateRedisOptions, Redis, RedisClient, RedisKeys, RedisTarget } from './redis';
export { createSql } from './db/sql';
export { DEFAULT_DATABASE_URL, DatabaseSettingsError, POOLER_MODES, createDirectSql, createPooledSql, databaseSettings, parseDatabaseSettings } from './db/pooler';
export type { DatabaseSettings, PoolerMode } from './db/pooler';
export type { Queryable, Sql, Tx } from './db/sql';
export { loadMigrations, migrate } from './db/migrate';
export { Batcher } from './db/batcher';
export { DbOutage, isConnectionError, retryOnConnectionLoss } from './db/outage';
export { asStoredJsonb, compareJsonbKeys } from './db/jsonb';
export { pingDatabase } from './db/health';

// Request validation and security.
export { validate } from './validation/validate';
export { Nullable, PageQuery, Uuid } from './validation/formats';
export type { PageMeta } from './validation/formats';
export {
  MAX_JSON_DEPTH, assertJsonInput, jsonInputIssue, jsonTextMayHoldUnstorable, printableText, textIssue, textProblem,
} from './validation/json-input';
export { sha256, sha256Hex } from './security/hash';
export { ACCESS_TOKEN_PREFIX, API_KEY_PREFIX, MACHINE_KEY_PREFIX, issueSecret } from './security/secrets';
export { hashPassword, verifyPassword } from './security/password';
export { decrypt } from './security/secret-box';
export { buildAllowList, checkIpEntry, clientIp, ipAllowed, trustedHop } from './security/ip-allow';

// Effects: written with each change, published by the dispatcher's relay (docs/decisions/outbox.md).
export { recordEffect } from './outbox/effects';
export type { Effect } from './outbox/effects';
export { createOutboxRelay, drainOutbox, relayOnce } from './outbox/relay';
export type { OutboxRelay } from './outbox/relay';

// Dispatch: the BullMQ catalogue, the port effects are published through, a job's life on its machine, sweeps.
export { noopDispatch } from './dispatch/port';
export type { DispatchJobRef, DispatchPort } from './dispatch/port';
export { findLiveMachineKeys, findMachineByKey, pickMachineForFollowUp, recordGoodbye, recordHeartbeat } from './machines/heartbeat';
export type { AgentMachine } from './machines/heartbeat';
export {
  DISPATCH_QUEUE, DISPATCH_SCHEDULERS, IDEMPOTENCY_PURGE_EVERY_MS, bullJobId, machineQueueName, queueDisplayName,
} from './dispatch/bull-queues';
export type { DispatchJobName, DispatchPayloads, MachineJobPayload } from './dispatch/bull-queues';
export { decodeAbort, decodeInputAnswered } from './dispatch/stops';
export type { JobAbortMessage, JobInputMessage } from './dispatch/stops';
export { createBullDispatch } from './dispatch/bull-dispatch';
export { epochKeys, keySlot, renewEpoch } from './dispatch/epoch';
export type { BullDispatch } from './dispatch/bull-dispatch';
export { findRunEndedAs, finishJob, renewJobLeases, reportJobProgress, startJob } from './dispatch/job-run';
export type { FinishResult, JobEnd, StartedJob } from './dispatch/job-run';
export { giveUpMachineJobs, markSlaBreaches, pendingStops, sweepOfflineMachines, timeOutJobs } from './dispatch/sweeps';
export { queuesNeedingConsumers, startQueueConsumers } from './dispatch/consumers';
export { reconcilePendingJobs } from './dispatch/reconcile';
export {
  ApproveItemBody, QueueItemPathParams, QueuePathParams, RedriveBody, RedriveResponse, RejectItemBody, getTenantQueue,
  reviewQueueItem,
} from './queue-items/review';
export type { ReviewActor } from './queue-items/review';

// Resources: their schemas and responses (the transports render them), and the commands and queries
// behind the engine's groups (the CLI's workspace apply and the tests call some of them directly).
export { recordAudit } from './audit/audit';
export { AUDIT_ACTOR_TYPES, AuditEntryResponse, AuditLogQuery, listAuditLog } from './audit/read';
export { DEADLINE_RISK_MINUTES, QueueStatsResponse, purgeQueueStatBuckets, readQueueStats } from './catalog/queue-stats';
export type { CursorMeta } from './audit/read';
export { CLI_ACTOR } from './audit/catalog-changes';
export type { AuditActor, CatalogChange, CatalogResource } from './audit/catalog-changes';
export type { TenantRow } from './tenants/repo';
export {
  deactivateApiKey, findApiKey, findApiKeyByHash, findApiKeysByHashes, listApiKeyRows, replaceApiKeySecret, touchApiKeys,
} from './api-keys/repo';
export type { ApiKeyRow } from './api-keys/repo';
export {
  ApiKeyIdParams, ApiKeyListQuery, ApiKeyResponse, ApiKeyWithSecretResponse, AvailableScopeResponse, CreateApiKeyBody,
} from './api-keys/schemas';
export { acknowledgeApiKeyInvalidation, decodeApiKeyInvalidation, publishApiKeyInvalidation, redisApiKeyPublisher } from './api-keys/invalidation';
export type { ApiKeyChangeListener, ApiKeyInvalidation } from './api-keys/invalidation';
export { availableScopes, createApiKey } from './api-keys/service';
export type { ApiKeyActor } from './api-keys/service';
export { findAccessTokenByHash } from './access-tokens/repo';
export { SUBSCRIPTION_STATUSES } from './tenants/schemas';
export type { TenantCreateInput, TenantUpdateInput } from './tenants/schemas';
export {
  createTenant, findTenantByName, getTenant, listTenants, resolveTenant, toTenantResponse, updateTenant,
} from './tenants/service';
export type { TenantResponseBody } from './tenants/service';
export { LoginBody, LoginResponse, LogoutResponse, MeResponse, USER_ROLES } from './users/schemas';
export type { UserRole } from './users/schemas';
export { deactivateUserRow, findUserByEmail, listUsersOfTenant } from './users/repo';
export { createUser, deactivateUser, resolveUser, setPassword, toUserResponse } from './users/service';
export type { UserResponseBody } from './users/service';
export {
  findAccessTokens, getSession, issueAccessToken, login, revokeAccessToken, toAccessTokenResponse,
} from './access-tokens/service';
export type { AccessTokenResponseBody, IssuedAccessToken } from './access-tokens/service';
export { authenticateAccessToken, authenticateBearer, bearerToken, requireAdminRole } from './access-tokens/authenticate';
export type { AccessTokenPrincipal } from './access-tokens/authenticate';
export { IDEMPOTENCY_HEADER, canonicalJson, idempotencyRequestHash, parseIdempotencyKey } from './idempotency/key';
export {
  findIdempotencyKey, purgeExpiredIdempotencyKeys, releaseLostClaim, sweepExpiredIdempotencyKeys,
} from './idempotency/repo';
export { beginIdempotent, runIdempotent } from './idempotency/service';
export type { IdempotencyClaim, IdempotentResult } from './idempotency/service';
export { consumeExecution, isSubscriptionActive, quotaResetsAt, readQuotaUsage } from './tenants/quota';
export { JOB_STATUSES, JOB_TRANSITIONS, canTransition, requestRunningJobStop, transitionJob } from './jobs/transitions';
export type { JobStatus } from './jobs/transitions';
export { findJobWithNames } from './jobs/repo';
export type { JobWithNames } from './jobs/repo';
export {
  JobIdParams, JobListQuery, JobResponse, StopJobResponse, TriggerJobBody, WebhookTriggerBody, WebhookTriggerParams,
} from './jobs/schemas';
export { toJobResponse, toStopJobResponse } from './jobs/serialize';
export {
  LOG_APPEND_MAX_BYTES, LOG_INLINE_MAX_BYTES, LOG_TOTAL_MAX_BYTES, LOG_TRUNCATED_MARKER, appendJobLogs, inlineLogs,
} from './jobs/logs';
export type { LogAppend } from './jobs/logs';
export { JobLogsResponse, archiveJobLogs, pgLogArchive, readJobLogs } from './jobs/log-archive';
export type { LogArchive } from './jobs/log-archive';
export { stopJob, triggerJobByApi, triggerJobByWebhook } from './jobs/service';
export {
  JobInputBody, MAX_INPUT_CHOICES, MAX_INPUT_PROMPT_LENGTH, answerJobInput, askJobInput, checkInputRequest, checkInputValue, readJobInput,
} from './jobs/input';
export type { AskResult, InputOptions, InputRequest, InputState } from './jobs/input';
export type { OnJobCreated } from './jobs/service';
export {
  ASSET_TYPES, AssetCreate, AssetResponse, AssetUpdate, CatalogListQuery, CatalogName, FolderCreate, FolderResponse,
  FolderUpdate, IdParams, MACHINE_STATUSES, MachineCreate, MachineListQuery, MachineResponse, MachineUpdate,
  MachineWithKeyResponse, ProcessCreate, ProcessListQuery, ProcessResponse, ProcessUpdate, QueueCreate, QueueResponse,
  QueueUpdate,
} from './catalog/schemas';
export type { AssetType, MachineKind, MachineStatus } from './catalog/schemas';
export {
  createFolder, deactivateFolder, findFolderByName, getFolder, listFolders, toFolderResponse, updateFolder,
} from './catalog/folders';
export {
  createProcess, deactivateProcess, findProcessByName, getProcess, listProcesses, toProcessResponse, updateProcess,
} from './catalog/processes';
export {
  createMachine, deactivateMachine, findMachineByName, getMachine, listMachineNames, listMachines, rotateMachineKey,
  toMachineResponse, updateMachine,
} from './catalog/machines';
export {
  createQueue, deactivateQueue, findQueueByName, getQueue, listQueues, loadQueueItemCounts, setQueuePaused, toQueueResponse, updateQueue,
} from './catalog/queues';
export type { QueueRow } from './catalog/queues';
export {
  MAX_MIN_ITEMS_TO_START, TriggerCreate, TriggerListQuery, TriggerResponse, TriggerUpdate, createTrigger, deactivateTrigger, findTrigger,
  getTrigger, listTriggers, toTriggerResponse, updateTrigger,
} from './catalog/triggers';
export type { TriggerRow } from './catalog/triggers';
export {
  createAsset, deactivateAsset, findAssetByName, getAsset, listAssets, readAssetValue, readStoredCredentials, toAssetResponse,
  updateAsset,
} from './catalog/assets';
export type { AssetRecord } from './catalog/assets';
export { readAssetForMachine, readAssetWithKey } from './catalog/asset-read';
export type { AssetReader } from './catalog/asset-read';
export { writeCatalogEntity } from './catalog/write';
export type { CatalogBatch, SaveOptions, SaveTarget, SavedRecord } from './catalog/records';
export type { FolderRow } from './catalog/folders';
export type { ProcessRow } from './catalog/processes';
export type { MachineRow } from './catalog/machines';
export type { CatalogEffect } from './catalog/write';
export {
  MISSED_RUNS, ScheduleCreate, ScheduleListQuery, SchedulePreviewQuery, SchedulePreviewResponse, ScheduleResponse, ScheduleUpdate,
} from './schedules/schemas';
export type { MissedRuns } from './schedules/schemas';
export {
  createSchedule, deactivateSchedule, findScheduleByName, getSchedule, listSchedules, previewSchedule, toScheduleResponse, updateSchedule,
} from './schedules/catalog';
export type { ScheduleRow } from './schedules/catalog';
export { assertValidCron, isValidTimeZone, nextTick, nextTicks, ticksBetween } from './schedules/cron';
export { fireDueSchedules } from './schedules/fire';
export type { FireOptions, FireResult, RefusalReason } from './schedules/fire';
export {
  AddQueueItemBody, AddQueueItemsBulkBody, BulkAddedResponse, QueueItemListQuery, QueueItemResponse, QueueNameParams,
} from './queue-items/schemas';
export { ITEM_COLUMNS } from './queue-items/repo';
export type { QueueItemRow } from './queue-items/repo';
export { toQueueItemResponse } from './queue-items/serialize';
export { addItem, addItemToQueueNamed, addItemsBulk, getActiveQueueByName, listItems } from './queue-items/service';
export {
  MAX_TAKE, QUEUE_ITEM_TRANSITIONS, applyItemRetryPolicy, approveQueueItem, canTransitionItem, compareTakeOrder, failItemsOfJobs,
  failOrphanedItems, redriveDeadLetterItems, rejectQueueItem, releaseQueueItems, releaseUnknownClaims, settleAndClaimItems, settleAndClaimItemsBatch,
} from './queue-items/transitions';
export type { ClaimedItem, ItemOutcome, SettleAndClaimResult } from './queue-items/transitions';

// Events out: the feed and signed webhooks (docs/decisions/events.md).
export {
  DeliveryListQuery, DeliveryParams, DeliveryResponse, EVENT_TYPES, EventFeedQuery, EventResponse, EventStreamQuery, TEST_EVENT_TYPE,
  WebhookCreate, WebhookListQuery, WebhookResponse, WebhookUpdate, WebhookWithSecretResponse,
} from './webhooks/schemas';
export type { EventType } from './webhooks/schemas';
export { decodeEventCursor, parseEventTypes, purgeOldEvents, readEventFeed, readEventsAfter } from './events/feed';
export type { EventRow, FeedPage, FeedPosition } from './events/feed';
export { SIGNATURE_TOLERANCE_SECONDS, signWebhook, verifyWebhookSignature } from './webhooks/sign';
export { checkWebhookUrl, isRefusedAddress } from './webhooks/target';
export type { TargetPolicy } from './webhooks/target';
export { createWebhookDeliverer, retryDelayMs } from './webhooks/deliver';
export { postWebhook } from './webhooks/post';
export type { DelivererOptions, WebhookDeliverer } from './webhooks/deliver';
export { MAX_WEBHOOKS_PER_WORKSPACE, delivererTimingsOf, webhookSettingsOf } from './webhooks/subscriptions';
export type { WebhookSettings } from './webhooks/subscriptions';
// Observability: Prometheus metrics (docs/decisions/observability.md).
export {
  metricsRegistry, renderMetrics, observeHttpRequest, rateLimitRejections, apiKeyCacheLookups, UNMATCHED_ROUTE,
  registerPlatformGauges, OTHER_LABEL, startMetricsServer, metricsAuthorized, dispatcherPassSeconds, dispatcherPassesStarted, countWebhookOutcome,
} from './metrics';
export type { MetricsServer, PlatformGaugeOptions } from './metrics';
// Traces: OpenTelemetry, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/decisions/observability.md).
export {
  startTracing, stopTracing, tracingEnabled, withSpan, withTraceCarrier, currentTraceCarrier, describeActiveSpan, activeTraceIds, SpanKind,
} from './tracing';
export type { TraceCarrier } from './tracing';
export { REQUESTS as AGENT_REQUESTS, CLOSE as AGENT_CLOSE, MAX_MESSAGE_BYTES as AGENT_MAX_MESSAGE_BYTES } from './machines/protocol';
export type { RequestType as AgentRequestType, RequestOf as AgentRequestOf } from './machines/protocol';
export { skipDelivery } from './dispatch/skipped-start';
