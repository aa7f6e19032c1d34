/**
 * The public surface of @svc/core: what the transports (apps/*, packages/cli, packages/agent)
 * need, named on purpose. The domain is reached through one front door, the engine; besides it
 * this names only vocabulary: schemas and response shapes (TypeBox), errors, configuration, the
 * logger, the Postgres and Redis factories, the BullMQ catalogue, metrics and traces.
 * No repository function is exported (test/layers.test.ts checks it). What only tests, the test
 * helpers and the benchmarks use is in ./internals (`@svc/core/internals`), which the apps and
 * the CLI may not import.
 */

// The engine: the domain's commands, grouped and bound to one pool (docs/architecture.md, "The engine").
export { createEngine } from './engine';
export type { Engine, EngineDeps } from './engine';
export type { CatalogBatch, SaveOptions, SaveTarget, SavedRecord } from './catalog/by-resource';

// Shared vocabulary: errors, configuration, logging, scopes, limits.
export {
  AppError, ConflictError, DEFAULT_MESSAGES, ForbiddenError, HttpError, NotFoundError, PayloadTooLargeError, RateLimitError,
  UnauthorizedError, ValidationError, isAppError,
} from './errors';
export type { ErrorCode, FieldIssue } from './errors';
export { ConfigError, parseArchiveSettings, parseConfig, parseEncryptionKey } from './config';
export type { ArchiveSettings, Config } from './config';
export { createLogger } from './logger';
export type { Logger } from './logger';
export { onShutdownSignals } from './shutdown';
export { ENVIRONMENTS, PLAN_FEATURES, SCOPE_NAMES, hasScope } from './scopes';
export type { Environment, PlanFeature, Scope } from './scopes';
export { DEFAULT_RATE_LIMIT, RATE_LIMIT_WINDOW_SECONDS, rateLimitFor } from './rate-limits';

// Postgres and Redis.
export { createRedis, duplicateRedis, isCluster, primaries, redisKeys, watchClusterSubscriber } from './redis';
export type { RedisClient, RedisKeys, RedisTarget } from './redis';
export { createSql } from './db/sql';
export { DatabaseSettingsError, createDirectSql, createPooledSql, databaseSettings, parseDatabaseSettings } from './db/pooler';
export type { DatabaseSettings } from './db/pooler';
export type { Sql } from './db/sql';
export { createDatabase, migrate } from './db/migrate';
export { Batcher } from './db/call-batcher';
export { DbOutage, isConnectionError, retryOnConnectionLoss } from './db/outage';

// Request validation and security.
export { validate } from './validation/validate';
export { Nullable, PageQuery, Uuid } from './validation/formats';
export { VALIDATION_TIME_LIMIT_MS } from './validation/user-schema/budget';
export type { PageMeta } from './validation/formats';
export {
  MAX_JSON_DEPTH, jsonInputIssue, jsonTextMayHoldUnstorable, printableText, textIssue, textProblem,
} from './validation/json-input';
export { sha256Hex } from './security/hash';
export { API_KEY_PREFIX, MACHINE_KEY_PREFIX } from './security/secrets';
export { buildAllowList, checkIpEntry, clientIp, ipAllowed, trustedHop } from './security/ip-allow';

// Effects: written with each change, published by the dispatcher's relay (docs/decisions/outbox.md).
export type { OutboxRelay } from './outbox/relay';

// Dispatch: the BullMQ catalogue and the port effects are published through.
export type { AgentMachine, HeartbeatReport, HeartbeatResult } from './machines/heartbeat';
export {
  DISPATCH_QUEUE, DISPATCH_SCHEDULERS, IDEMPOTENCY_PURGE_EVERY_MS, machineQueueName, queueDisplayName,
} from './dispatch/bull-queues';
export type { DispatchJobName, DispatchPayloads, MachineJobPayload } from './dispatch/bull-queues';
export { decodeAbort, decodeInputAnswered, decodeMachineWork } from './dispatch/stops';
export type { JobAbortMessage, JobInputMessage, MachineWorkMessage } from './dispatch/stops';
export { createBullDispatch } from './dispatch/bull-dispatch';
export { renewEpoch } from './dispatch/epoch';
export type { BullDispatch } from './dispatch/bull-dispatch';
export {
  ApproveItemBody, QueueItemPathParams, QueuePathParams, RedriveBody, RedriveResponse, RejectItemBody,
} from './queue-items/review';
export type { ReviewActor } from './queue-items/review';
export {
  BULK_ACTION_CHUNK, BULK_ACTION_MAX_IDS, BULK_ACTION_STATUSES, BulkActionParams, BulkActionResponse, BulkDryRunResponse, ITEM_ACTIONS, ITEM_ACTION_STATUSES,
  ItemActionBody, ItemActionFilter, JOB_ACTIONS, JOB_ACTION_STATUSES, JobActionBody, JobActionFilter,
} from './bulk/schemas';
export type { BulkActionStatus, ItemActionName, JobActionName } from './bulk/schemas';
export { toBulkActionResponse } from './bulk/actions';
export type { BulkActionRow, BulkAsk } from './bulk/actions';

// Resources: their schemas, response shapes and row types (the transports validate and render them).
export { AuditEntryResponse, AuditLogQuery } from './audit/read';
export {
  ARCHIVED_COLUMN, AuditLogExportQuery, JobExportQuery, JobExportRecord, QueueItemExportQuery, AUDIT_EXPORT_COLUMNS, JOB_EXPORT_COLUMNS, QUEUE_ITEM_EXPORT_COLUMNS, QUEUE_ITEM_IMPORT_COLUMNS,
} from './export/exports';
export { DEFAULT_EXPORT_FORMAT, EXPORT_CONTENT_TYPES, EXPORT_FORMATS, ExportFormatQuery, neutralizeFormula } from './export/stream';
export type { ExportFormat } from './export/stream';
export { DEADLINE_RISK_MINUTES, QueueStatsResponse } from './catalog/queue-stats';
export { MachineSeriesResponse, QueueSeriesResponse, SERIES_MAX_MACHINES, SERIES_RETENTION_HOURS, SERIES_WINDOWS, SeriesQuery, percentileOf } from './catalog/queue-series';
export { consumerCapacity, forecastDeadlines, type DeadlineForecast, type ForecastMachine, type ForecastTrigger } from './catalog/queue-forecast';
export type { CursorMeta } from './audit/read';
export { CLI_ACTOR } from './audit/catalog-changes';
export type { AuditActor, CatalogResource } from './audit/catalog-changes';
export type { ApiKeyRow } from './api-keys/repo';
export {
  ApiKeyIdParams, ApiKeyListQuery, ApiKeyResponse, ApiKeyWithSecretResponse, AvailableScopeResponse, CreateApiKeyBody,
} from './api-keys/schemas';
export { acknowledgeApiKeyInvalidation, decodeApiKeyInvalidation, publishApiKeyInvalidation } from './api-keys/invalidation';
export type { ApiKeyChangeListener, ApiKeyInvalidation } from './api-keys/invalidation';
export { availableScopes } from './api-keys/service';
export type { ApiKeyActor } from './api-keys/service';
export { SUBSCRIPTION_STATUSES } from './tenants/schemas';
export type { TenantCreateInput, TenantUpdateInput } from './tenants/schemas';
export { toTenantResponse } from './tenants/service';
export type { TenantResponseBody } from './tenants/service';
export {
  LoginBody, LoginResponse, LogoutResponse, MeResponse, USER_ROLES, UserResponse, UserWithPasswordResponse, WorkspaceUserCreateBody,
  UserUpdateBody, UserIdParams, UserListQuery, PasswordChangeBody, PasswordChangeResponse,
} from './users/schemas';
export type { UserRole } from './users/schemas';
export { toUserResponse } from './users/service';
export type { UserResponseBody } from './users/service';
export { toAccessTokenResponse } from './access-tokens/service';
export type { AccessTokenResponseBody, IssuedAccessToken } from './access-tokens/service';
export { bearerToken, requireAdminRole, requirePasswordChanged } from './access-tokens/authenticate';
export type { AccessTokenPrincipal } from './access-tokens/authenticate';
export { IDEMPOTENCY_HEADER, IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS, parseIdempotencyKey } from './idempotency/key';
export type { IdempotencyClaim, IdempotentResult } from './idempotency/service';
export type { JobWithNames } from './jobs/repo';
export {
  JobIdParams, JobListQuery, JobResponse, StopJobResponse, TriggerJobBody, WebhookTriggerBody, WebhookTriggerParams,
} from './jobs/schemas';
export { toJobResponse, toStopJobResponse } from './jobs/serialize';
export { JobLogsResponse } from './jobs/log-archive';
export { checkArchiveKey, directoryArchive, type ArchiveEntry, type RecordArchive } from './retention/archive';
export { ORPHAN_MIN_AGE_MS, type OrphanSweepOptions, type OrphanSweepResult } from './retention/sweep';
export { s3Archive, type S3ArchiveOptions } from './retention/s3-archive';
export { recordArchiveFromConfig } from './retention/archive-config';
export { ENDED_ITEM_STATUSES, RETENTION_ACTIONS, RETENTION_BATCH, type RetentionScopeResult } from './retention/pass';
export { JobInputBody } from './jobs/input';
export type { OnJobCreated } from './jobs/service';
export {
  ASSET_TYPES, AssetCreate, AssetResponse, AssetUpdate, CatalogListQuery, CatalogName, FolderCreate, FolderResponse,
  FolderUpdate, IdParams, MACHINE_STATUSES, MachineCreate, MachineListQuery, MachineResponse, MachineUpdate,
  MachineWithKeyResponse, ProcessCreate, ProcessListQuery, ProcessResponse, ProcessUpdate, QueueCreate, QueueResponse,
  QueueUpdate,
} from './catalog/schemas';
export type { AssetType, MachineStatus } from './catalog/schemas';
export { toFolderResponse } from './catalog/folders';
export { toProcessResponse } from './catalog/processes';
export { toMachineResponse } from './catalog/machines';
export { toQueueResponse } from './catalog/queues';
export type { QueueRow } from './catalog/queues';
export { TriggerCreate, TriggerListQuery, TriggerResponse, TriggerUpdate, toTriggerResponse } from './catalog/triggers';
export type { TriggerRow } from './catalog/triggers';
export { toAssetResponse } from './catalog/assets';
export type { AssetRecord } from './catalog/assets';
export type { FolderRow } from './catalog/folders';
export type { ProcessRow } from './catalog/processes';
export type { MachineRow } from './catalog/machines';
export {
  ScheduleCreate, ScheduleListQuery, SchedulePreviewQuery, SchedulePreviewResponse, ScheduleResponse, ScheduleUpdate,
} from './schedules/schemas';
export { toScheduleResponse } from './catalog/schedules';
export type { ScheduleRow } from './catalog/schedules';
export {
  AddQueueItemBody, AddQueueItemsBulkBody, BULK_MAX_ITEMS, BulkAddedResponse, QueueItemListQuery, QueueItemResponse, QueueNameParams,
} from './queue-items/schemas';
export type { AddQueueItemInput } from './queue-items/schemas';
export { toQueueItemResponse } from './queue-items/serialize';
export { MAX_TAKE } from './queue-items/take';

// Events out: the feed and signed webhooks (docs/decisions/events.md).
export {
  DeliveryListQuery, DeliveryParams, DeliveryResponse, EVENT_TYPES, EventFeedQuery, EventResponse, EventStreamQuery,
  WebhookCreate, WebhookListQuery, WebhookResponse, WebhookUpdate, WebhookWithSecretResponse,
} from './webhooks/schemas';
export type { WebhookDeliverer } from './webhooks/deliver';
export { MAX_WEBHOOKS_PER_WORKSPACE, delivererTimingsOf, webhookSettingsOf } from './webhooks/subscriptions';
// Observability: Prometheus metrics (docs/decisions/observability.md).
export {
  renderMetrics, observeHttpRequest, rateLimitRejections, apiKeyCacheLookups, UNMATCHED_ROUTE,
  startMetricsServer, metricsAuthorized, dispatcherPassSeconds, dispatcherPassesStarted, countAgentCut, trackAgentHub,
} from './metrics';
export type { AgentCutReason } from './metrics';
// Traces: OpenTelemetry, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/decisions/observability.md).
export {
  startTracing, stopTracing, tracingEnabled, withSpan, withTraceCarrier, currentTraceCarrier, describeActiveSpan, SpanKind,
} from './tracing';
export {
  REQUESTS as AGENT_REQUESTS, RESULTS as AGENT_RESULTS, PUSHES as AGENT_PUSHES, ReplyResult as AgentReplyResult, ReplyError as AgentReplyError,
  CLOSE as AGENT_CLOSE, MAX_MESSAGE_BYTES as AGENT_MAX_MESSAGE_BYTES, FIELD_MAX_BYTES as AGENT_FIELD_MAX_BYTES,
  CONNECTION_LIMITS as AGENT_CONNECTION_LIMITS, oversizedField as agentOversizedField, misplacedException as agentMisplacedException,
} from './machines/protocol';
export type {
  RequestType as AgentRequestType, RequestOf as AgentRequestOf, ResultOf as AgentResultOf, PushType as AgentPushType, PushOf as AgentPushOf,
  ServerMessage as AgentServerMessage,
} from './machines/protocol';
export { deliverLater, skipDelivery } from './dispatch/skip-delivery';
export { es, sqlFormat, type ServerMessages } from './messages/server-messages';
