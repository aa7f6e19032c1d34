/**
 * `@svc/core/schemas`: the public API's vocabulary, what the transports validate and render: the
 * request and response schemas (TypeBox, so JSON Schema too), their static types, and the limits
 * and value lists the schemas are built from. Nothing here reads or writes anything.
 */

// Paging and identifiers shared by every resource.
export { Nullable, PageQuery, Uuid } from './validation/formats';
export type { PageMeta } from './validation/formats';
export type { CursorMeta } from './audit/read';

// API keys, users, sessions and workspaces.
export {
  ApiKeyIdParams, ApiKeyListQuery, ApiKeyResponse, ApiKeyWithSecretResponse, AvailableScopeResponse, CreateApiKeyBody,
} from './api-keys/schemas';
export {
  LoginBody, LoginResponse, LogoutResponse, MeResponse, USER_ROLES, UserResponse, UserWithPasswordResponse, WorkspaceUserCreateBody,
  UserUpdateBody, UserIdParams, UserListQuery, PasswordChangeBody, PasswordChangeResponse,
} from './users/schemas';
export type { UserRole } from './users/schemas';
export type { UserResponseBody } from './users/service';
export type { AccessTokenResponseBody, IssuedAccessToken } from './access-tokens/service';
export { SUBSCRIPTION_STATUSES } from './tenants/schemas';
export type { TenantCreateInput, TenantUpdateInput } from './tenants/schemas';
export type { TenantResponseBody } from './tenants/service';

// The catalogue.
export {
  ASSET_TYPES, AssetCreate, AssetResponse, AssetUpdate, CatalogListQuery, CatalogName, FolderCreate, FolderResponse,
  FolderUpdate, IdParams, MACHINE_STATUSES, MachineCreate, MachineListQuery, MachineResponse, MachineUpdate,
  MachineWithKeyResponse, ProcessCreate, ProcessListQuery, ProcessResponse, ProcessUpdate, QueueCreate, QueueResponse,
  QueueUpdate,
} from './catalog/schemas';
export type { AssetType, MachineStatus } from './catalog/schemas';
export { TriggerCreate, TriggerListQuery, TriggerResponse, TriggerUpdate } from './catalog/triggers';
export {
  ScheduleCreate, ScheduleListQuery, SchedulePreviewQuery, SchedulePreviewResponse, ScheduleResponse, ScheduleUpdate,
} from './schedules/schemas';
export { DEADLINE_RISK_MINUTES, QueueStatsResponse } from './catalog/queue-stats';
export { MachineSeriesResponse, QueueSeriesResponse, SERIES_MAX_MACHINES, SeriesQuery } from './catalog/queue-series';

// Jobs.
export {
  JobIdParams, JobListQuery, JobResponse, StopJobResponse, TriggerJobBody, WebhookTriggerBody, WebhookTriggerParams,
} from './jobs/schemas';
export { JobInputBody } from './jobs/input';
export { JobLogsResponse } from './jobs/log-archive';

// Queue items, their review and bulk actions.
export {
  AddQueueItemBody, AddQueueItemsBulkBody, BULK_MAX_ITEMS, BulkAddedResponse, QueueItemListQuery, QueueItemResponse, QueueNameParams,
} from './queue-items/schemas';
export type { AddQueueItemInput } from './queue-items/schemas';
export {
  ApproveItemBody, QueueItemPathParams, QueuePathParams, RedriveBody, RedriveResponse, RejectItemBody,
} from './queue-items/review';
export {
  BULK_ACTION_CHUNK, BULK_ACTION_MAX_IDS, BulkActionParams, BulkActionResponse, BulkDryRunResponse, ITEM_ACTIONS,
  ItemActionBody, JOB_ACTIONS, JobActionBody,
} from './bulk/schemas';
export type { ItemActionName, JobActionName } from './bulk/schemas';

// Exports and the audit log.
export { AuditEntryResponse, AuditLogQuery } from './audit/read';
export {
  AuditLogExportQuery, JobExportQuery, JobExportRecord, QueueItemExportQuery, QUEUE_ITEM_EXPORT_COLUMNS, QUEUE_ITEM_IMPORT_COLUMNS,
} from './export/exports';
export { DEFAULT_EXPORT_FORMAT, EXPORT_CONTENT_TYPES, EXPORT_FORMATS, ExportFormatQuery } from './export/stream';
export type { ExportFormat } from './export/stream';

// Events out: the feed and signed webhooks (docs/decisions/events.md).
export {
  DeliveryListQuery, DeliveryParams, DeliveryResponse, EVENT_TYPES, EventFeedQuery, EventResponse, EventStreamQuery,
  WebhookCreate, WebhookListQuery, WebhookResponse, WebhookUpdate, WebhookWithSecretResponse,
} from './webhooks/schemas';
export { MAX_WEBHOOKS_PER_WORKSPACE } from './webhooks/subscriptions';
