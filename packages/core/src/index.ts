/**
 * The public surface of @svc/core, named on purpose: the engine (the one front door into the
 * domain, whose contract is engine-contract.ts), and what a transport needs around it: errors,
 * configuration, logging, the Postgres and Redis factories, the BullMQ catalogue, request checks
 * and the server's texts. Three more entries hold vocabulary by concern: `@svc/core/schemas` (the
 * public API's request and response schemas), `@svc/core/machine-protocol` (the robots' protocol)
 * and `@svc/core/observability` (metrics and traces). No storage row, repository function or
 * row-to-response mapper is public (test/front-door.test.ts); what only tests, the test helpers
 * and the benchmarks use is in `@svc/core/internals`, which the apps and the CLI may not import.
 */

// The engine and its contract (docs/architecture.md, "The engine").
export { createEngine } from './engine';
export type {
  ApiKeyCredential, BulkAsked, BulkTarget, CatalogBatch, CatalogRecords, Engine, EngineDeps, InTransaction, OnJobCreated, Paged, QueueHandle,
  SaveOptions, SaveTarget, SavedRecord, TransactionHandle,
} from './engine-contract';
export { CLI_ACTOR } from './audit/catalog-changes';
export type { AuditActor, CatalogResource } from './audit/catalog-changes';
export type { ApiKeyActor } from './api-keys/service';
export type { ReviewActor } from './queue-items/review';
export type { AccessTokenPrincipal } from './access-tokens/authenticate';
export type { IdempotencyClaim, IdempotentResult } from './idempotency/service';

// Errors, configuration, logging, scopes, limits, texts.
export {
  AppError, ConflictError, DEFAULT_MESSAGES, ForbiddenError, HttpError, NotFoundError, PayloadTooLargeError, RateLimitError,
  UnauthorizedError, ValidationError, isAppError,
} from './errors';
export type { ErrorCode, FieldIssue } from './errors';
export { ConfigError, parseArchiveSettings, parseConfig, parseEncryptionKey } from './config';
export type { Config } from './config';
export { createLogger } from './logger';
export type { Logger } from './logger';
export { onShutdownSignals } from './shutdown';
export { ENVIRONMENTS, PLAN_FEATURES, SCOPE_NAMES, hasScope } from './scopes';
export type { Environment, PlanFeature, Scope } from './scopes';
export { DEFAULT_RATE_LIMIT, RATE_LIMIT_WINDOW_SECONDS, rateLimitFor } from './rate-limits';
export { es } from './messages/server-messages';

// Postgres, Redis and the archive.
export { createRedis, duplicateRedis, isCluster, primaries, redisKeys, watchClusterSubscriber } from './redis';
export type { RedisClient, RedisKeys } from './redis';
export { createSql } from './db/sql';
export type { Sql } from './db/sql';
export { DatabaseSettingsError, createDirectSql, createPooledSql, databaseSettings, parseDatabaseSettings } from './db/pooler';
export type { DatabaseSettings } from './db/pooler';
export { createDatabase, migrate } from './db/migrate';
export { Batcher } from './db/call-batcher';
export { DbOutage, isConnectionError, retryOnConnectionLoss } from './db/outage';
export { recordArchiveFromConfig } from './retention/archive-config';

// Request checks and security.
export { validate } from './validation/validate';
export { VALIDATION_TIME_LIMIT_MS } from './validation/user-schema/budget';
export { MAX_JSON_DEPTH, jsonInputIssue, jsonTextMayHoldUnstorable, printableText, textIssue, textProblem } from './validation/json-input';
export { sha256Hex } from './security/hash';
export { API_KEY_PREFIX, MACHINE_KEY_PREFIX } from './security/secrets';
export { buildAllowList, checkIpEntry, clientIp, ipAllowed, trustedHop } from './security/ip-allow';
export { bearerToken, requireAdminRole, requirePasswordChanged } from './access-tokens/authenticate';
export { IDEMPOTENCY_HEADER, IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS, parseIdempotencyKey } from './idempotency/key';
export { availableScopes } from './api-keys/service';
export { acknowledgeApiKeyInvalidation, decodeApiKeyInvalidation, publishApiKeyInvalidation } from './api-keys/invalidation';
export type { ApiKeyChangeListener, ApiKeyInvalidation } from './api-keys/invalidation';

// Dispatch: the BullMQ catalogue, the messages on it, and where effects are published.
export {
  DISPATCH_QUEUE, DISPATCH_SCHEDULERS, IDEMPOTENCY_PURGE_EVERY_MS, machineQueueName, queueDisplayName,
} from './dispatch/bull-queues';
export type { DispatchJobName, DispatchPayloads, MachineJobPayload } from './dispatch/bull-queues';
export { decodeAbort, decodeInputAnswered, decodeMachineWork } from './dispatch/stops';
export type { JobAbortMessage, JobInputMessage, MachineWorkMessage } from './dispatch/stops';
export { createBullDispatch } from './dispatch/bull-dispatch';
export type { BullDispatch } from './dispatch/bull-dispatch';
export { renewEpoch } from './dispatch/epoch';
export { deliverLater, skipDelivery } from './dispatch/skip-delivery';
export type { OutboxRelay } from './outbox/relay';
export type { WebhookDeliverer } from './webhooks/deliver';
export { delivererTimingsOf, webhookSettingsOf } from './webhooks/subscriptions';
