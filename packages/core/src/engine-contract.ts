import type { Readable } from 'node:stream';
import type { Static } from '@sinclair/typebox';
import type { AccessTokenPrincipal } from './access-tokens/authenticate';
import type { LiveAccessTokenRow } from './access-tokens/repo';
import type { AccessTokenResponseBody, IssuedAccessToken, LoginResult } from './access-tokens/service';
import type { RequestOrigin } from './access-tokens/sessions';
import type { ApiKeyRow } from './api-keys/repo';
import type { ApiKeyResponse, ApiKeyWithSecretResponse } from './api-keys/schemas';
import type { ApiKeyActor } from './api-keys/service';
import type { AuditActor, CatalogResource } from './audit/catalog-changes';
import type { AuditEntryResponse, AuditLogQuery, CursorMeta } from './audit/read';
import type { AskOptions, RunBulkOptions } from './bulk/actions';
import type { BulkActionResponse, ItemActionBody, JobActionBody } from './bulk/schemas';
import type { AssetReader, AssetReadRequest, AssetValueRead } from './catalog/asset-read';
import type { MachineName } from './catalog/machines';
import type { MachineSeriesResponse, QueueSeriesResponse, SeriesQuery } from './catalog/queue-series';
import type { QueueStatsResponse } from './catalog/queue-stats';
import type {
  AssetResponse, FolderResponse, MachineResponse, MachineListQuery, ProcessListQuery, ProcessResponse, QueueResponse,
} from './catalog/schemas';
import type { TriggerResponse } from './catalog/triggers';
import type { ClaimFloorMode } from './config';
import type { DbOutage } from './db/outage';
import type { Queryable, Sql } from './db/sql';
import type { BullDispatch } from './dispatch/bull-dispatch';
import type { EndedJobs } from './dispatch/job-end';
import type { JobEnd, JobProgress, LeaseRenewal, StartOptions, StartResult } from './dispatch/job-run';
import type { OwnedRun } from './dispatch/lease-renewal';
import type { DispatchJobRef, DispatchPort } from './dispatch/port';
import type { ReconcileOptions } from './dispatch/reconcile';
import type { FeedPage } from './events/feed';
import type { AuditLogExportQuery, JobExportQuery, QueueItemExportQuery } from './export/exports';
import type { ExportFormat } from './export/stream';
import type { IdempotencyKeyId } from './idempotency/repo';
import type { IdempotencyClaim, IdempotentResult } from './idempotency/service';
import type { AskResult, InputState } from './jobs/input';
import type { JobLogsResponse } from './jobs/log-archive';
import type { LogArchive } from './jobs/log-archive';
import type { LogAppend } from './jobs/logs';
import type { JobListQuery, JobResponse, StopJobResponse, TriggerJobInput, WebhookTriggerInput } from './jobs/schemas';
import type { TriggerActor } from './jobs/service';
import type { Logger } from './logger';
import type { AgentMachine, HeartbeatReport, HeartbeatResult } from './machines/heartbeat';
import type { TakeRequest, TakeResult } from './machines/run-requests';
import type { OutboxRelay } from './outbox/relay';
import type { ApiKeyChangeListener } from './api-keys/invalidation';
import type { QueueRef } from './queue-items/repo';
import type { ReviewActor } from './queue-items/review';
import type { AddQueueItemInput, AddQueueItemsBulkInput, QueueItemListQuery, QueueItemResponse } from './queue-items/schemas';
import type { RecordArchive } from './retention/archive';
import type { RetentionOptions, RetentionScopeResult } from './retention/pass';
import type { ArchiveFileRow } from './retention/restore';
import type { OrphanSweepOptions, OrphanSweepResult } from './retention/sweep';
import type { FireOptions, FireResult } from './schedules/fire';
import type { SchedulePreviewResponse, ScheduleResponse } from './schedules/schemas';
import type { TenantCreateInput, TenantUpdateInput } from './tenants/schemas';
import type { TenantResponseBody } from './tenants/service';
import type { PlanFeature } from './scopes';
import type { MeResponse, UserCreateInput } from './users/schemas';
import type { UserResponseBody } from './users/service';
import type { PageMeta } from './validation/formats';
import type { DeliveryResponse, EventFeedQuery, WebhookResponse, WebhookWithSecretResponse } from './webhooks/schemas';
import type { WebhookDeliverer, DelivererOptions } from './webhooks/deliver';
import type { WebhookSettings } from './webhooks/subscriptions';

/**
 * The engine's contract: every command the transports (the API, the dispatcher, the CLI) may give
 * core, grouped by who gives it. Results are what the public API answers (its response objects) or
 * a result named for the caller; no storage row leaves core, and each command owns its
 * transaction, its audit row and its effects. engine.ts implements it; a new command is declared
 * here first, in the group of its caller.
 */
export interface Engine {
  auth: AuthCommands;
  keys: ApiKeyCommands;
  tenants: TenantCommands;
  users: UserCommands;
  catalog: CatalogCommands;
  jobs: JobCommands;
  items: ItemCommands;
  review: ReviewCommands;
  bulk: BulkCommands;
  audit: AuditCommands;
  machines: MachineCommands;
  sweeps: SweepCommands;
  archive: ArchiveCommands;
  events: EventCommands;
  outbox: OutboxCommands;
  idempotency: IdempotencyCommands;
  /** what the metrics endpoint adds to its registry: gauges read from Postgres, refreshed at most every `ttlMs` */
  platformGauges(options: { ttlMs?: number; maxQueues?: number }): void;
  /** the highest migration applied (`svc migrate`) */
  schemaVersion(): Promise<number>;
  /** readiness: Postgres answers */
  ping(): Promise<void>;
}

/** What one engine is built from: its pool, its logger, and the optional parts its commands need. */
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

/** A page of a list, as the public API's paged lists answer it. */
export interface Paged<T> {
  data: T[];
  meta: PageMeta;
}

// Who is calling ------------------------------------------------------------------------------

/** What authenticating a request with an API key needs to know of the key. */
export type ApiKeyCredential = Readonly<Pick<ApiKeyRow, 'id' | 'tenant_id' | 'is_active' | 'expires_at' | 'allowed_ips' | 'scopes' | 'environments'>>;
/** A signed-in person's access token that still grants access, and the role it grants. */
export type LiveAccessToken = Readonly<LiveAccessTokenRow>;
export type SessionRef = { tenantId: string; userId: string; tokenId: string };

/** API keys by their hash (the API's key cache), access tokens, sessions, sign-in. */
export interface AuthCommands {
  apiKeyByHash(hash: Buffer): Promise<ApiKeyCredential | null>;
  apiKeysByHashes(hexes: string[]): Promise<(ApiKeyCredential | null)[]>;
  /** records when keys were last used (the key cache writes them behind, in batches) */
  touchApiKeys(uses: readonly { id: string; at: Date }[]): Promise<number>;
  bearer(authorization: string | undefined): Promise<AccessTokenPrincipal>;
  liveTokens(tokenIds: readonly string[]): Promise<LiveAccessToken[]>;
  /** `GET /auth/me`: the user and the token of a session */
  session(tokenId: string): Promise<Static<typeof MeResponse>>;
  signIn(credentials: { email: string; password: string }, ttlSeconds: number, origin?: RequestOrigin): Promise<LoginResult>;
  signOut(session: SessionRef, origin?: RequestOrigin): Promise<void>;
}

/** A workspace's API keys; a revoked or rotated key leaves every API process's cache. */
export interface ApiKeyCommands {
  create(actor: ApiKeyActor, body: unknown): Promise<ApiKeyWithSecretResponse>;
  rotate(actor: ApiKeyActor, keyId: string): Promise<ApiKeyWithSecretResponse>;
  revoke(actor: ApiKeyActor, keyId: string): Promise<ApiKeyResponse>;
  list(tenantId: string, query: { page: number; limit: number }): Promise<Paged<ApiKeyResponse>>;
}

/** Workspaces and their plan (the CLI's `svc tenant`). */
export interface TenantCommands {
  create(input: TenantCreateInput): Promise<TenantResponseBody>;
  get(id: string): Promise<TenantResponseBody>;
  list(): Promise<TenantResponseBody[]>;
  update(id: string, input: TenantUpdateInput): Promise<TenantResponseBody>;
  /** by id or by name; unknown → NotFoundError */
  resolve(idOrName: string): Promise<TenantResponseBody>;
  findByName(name: string): Promise<TenantResponseBody | null>;
  /** ForbiddenError unless the workspace's plan includes the feature */
  requireFeature(tenantId: string | null | undefined, feature: PlanFeature): Promise<void>;
}

/** People and their access tokens (`svc user`, `svc token`, the API's user admin). */
export interface UserCommands {
  create(tenantId: string, input: UserCreateInput): Promise<UserResponseBody>;
  deactivate(userId: string): Promise<UserResponseBody>;
  listOfTenant(tenantId: string): Promise<UserResponseBody[]>;
  /** by id or by email; unknown → NotFoundError */
  resolve(idOrEmail: string): Promise<UserResponseBody>;
  setPassword(userId: string, password: string): Promise<UserResponseBody>;
  issueToken(userId: string, ttlSeconds: number): Promise<IssuedAccessToken>;
  revokeToken(tokenId: string): Promise<boolean>;
  /** a user's tokens (by the user's id or email), or the one token of that id */
  findTokens(ref: string): Promise<AccessTokenResponseBody[]>;
  /** a workspace's people, paged (admins) */
  listPage(tenantId: string, query: { page: number; limit: number }): Promise<Paged<UserResponseBody>>;
  /** a new member with a one-time password (audited) */
  add(actor: AuditActor, tenantId: string, input: unknown): Promise<UserResponseBody & { one_time_password: string }>;
  update(actor: AuditActor, tenantId: string, id: string, input: unknown): Promise<UserResponseBody>;
  deactivateInWorkspace(actor: AuditActor, tenantId: string, id: string): Promise<UserResponseBody>;
  /** anyone signed in: their own password (audited) */
  changeOwnPassword(session: SessionRef, input: unknown, origin?: { requestId?: string | null; ip?: string | null }): Promise<void>;
}

// The catalogue --------------------------------------------------------------------------------

/** Each catalogue record as the public API answers it. */
export interface CatalogRecords {
  folder: Static<typeof FolderResponse>;
  process: Static<typeof ProcessResponse>;
  machine: Static<typeof MachineResponse>;
  queue: Static<typeof QueueResponse>;
  trigger: Static<typeof TriggerResponse>;
  schedule: ScheduleResponse;
  asset: Static<typeof AssetResponse>;
}

/** A queue of a workspace as the commands that act on it take it. */
export type QueueHandle = QueueRef & { is_active: boolean; is_paused: boolean };

/** Where a save writes: `'new'` (create), `{ id }` (change the fields given), `{ name }` (create, or change what differs). */
export type SaveTarget = 'new' | { id: string } | { name: string };

export interface SaveOptions {
  /** The name a create's audit row records, for a resource without one (triggers: `queue:<id>`). */
  auditName?: string;
}

export interface SavedRecord<R extends CatalogResource> {
  record: CatalogRecords[R];
  action: 'created' | 'updated' | 'unchanged';
  /** the fields written (updates), as `values.<env>` for asset values */
  changed: string[];
  /** a created machine's key, shown this once */
  machineKey?: string;
}

/** The catalogue commands bound to one transaction, for a batch of saves (`svc apply`). */
export interface CatalogBatch {
  save<R extends CatalogResource>(resource: R, target: SaveTarget, body: Record<string, unknown>, options?: SaveOptions): Promise<SavedRecord<R>>;
  findByName<R extends CatalogResource>(resource: R, name: string): Promise<CatalogRecords[R] | null>;
  /**
   * The rest of a create made earlier in this batch (`svc apply` sets a process's successor once
   * every process exists): written in the batch's transaction, audited as part of that create.
   */
  completeCreate(resource: CatalogResource, id: string, body: Record<string, unknown>): Promise<void>;
}

/**
 * Folders, processes, machines, queues, triggers, schedules and assets of a workspace, as one
 * family (catalog/by-resource.ts). Every write is audited and records its effects in its transaction.
 */
export interface CatalogCommands {
  save<R extends CatalogResource>(actor: AuditActor, tenantId: string, resource: R, target: SaveTarget, body: Record<string, unknown>, options?: SaveOptions): Promise<SavedRecord<R>>;
  deactivate<R extends CatalogResource>(actor: AuditActor, tenantId: string, resource: R, id: string): Promise<CatalogRecords[R]>;
  get<R extends CatalogResource>(tenantId: string, resource: R, id: string): Promise<CatalogRecords[R]>;
  list<R extends CatalogResource>(tenantId: string, resource: R, query: Record<string, unknown>): Promise<Paged<CatalogRecords[R]>>;
  findByName<R extends CatalogResource>(tenantId: string, resource: R, name: string): Promise<CatalogRecords[R] | null>;
  /** several saves in one transaction (`svc apply`), all rolled back on `dryRun` */
  batch<T>(actor: AuditActor, tenantId: string, work: (batch: CatalogBatch) => Promise<T>, options?: { dryRun?: boolean }): Promise<T>;
  processes: {
    /** the public process list (API keys) */
    list(tenantId: string, query?: Partial<ProcessListQuery>): Promise<Paged<CatalogRecords['process']>>;
  };
  queues: {
    get(tenantId: string, id: string): Promise<CatalogRecords['queue']>;
    /** the queue as a reference the item, stats and bulk commands take (no item counts read); unknown → NotFoundError */
    ref(tenantId: string, id: string): Promise<QueueHandle>;
    stats(queue: QueueHandle): Promise<QueueStatsResponse>;
    series(queue: { id: string }, query: SeriesQuery): Promise<QueueSeriesResponse>;
    /** pause (true) or resume (false), audited */
    setPaused(actor: AuditActor, tenantId: string, id: string, paused: boolean): Promise<CatalogRecords['queue']>;
  };
  machines: {
    /** the public machine list (API keys) */
    list(tenantId: string, query?: Partial<MachineListQuery>): Promise<Paged<CatalogRecords['machine']>>;
    names(tenantId: string): Promise<MachineName[]>;
    series(tenantId: string, query: SeriesQuery): Promise<MachineSeriesResponse>;
    /** a new machine key, audited; the key is in the answer only */
    rotateKey(actor: AuditActor, tenantId: string, id: string): Promise<{ record: CatalogRecords['machine']; machineKey: string }>;
  };
  schedules: {
    get(tenantId: string, id: string): Promise<ScheduleResponse>;
    preview(tenantId: string, id: string, count?: number): Promise<SchedulePreviewResponse>;
  };
  assets: {
    /** an asset's value for a robot's job (`GET /assets/...`), decrypted with `encryptionKey` */
    readWithKey(encryptionKey: Buffer, reader: AssetReader, req: AssetReadRequest): Promise<AssetValueRead>;
  };
}

// Work: jobs, items, review, bulk actions --------------------------------------------------------

/** Told in the job's transaction once it exists (the trigger's Idempotency-Key keeps its answer). */
export type OnJobCreated = (tx: TransactionHandle, job: JobResponse) => Promise<void>;
/** A transaction of the engine, handed to a caller's hook so its write (an idempotent answer) commits with the command's. */
export type TransactionHandle = Queryable;

/** Jobs: started by an API key, a webhook or a person, stopped, answered, read. */
export interface JobCommands {
  triggerByApi(actor: TriggerActor, req: { rawProcessId: unknown; body(): TriggerJobInput }, onCreated?: OnJobCreated): Promise<JobResponse>;
  triggerByUser(actor: TriggerActor & { userId: string }, req: { rawProcessId: unknown; body(): TriggerJobInput }, onCreated?: OnJobCreated): Promise<JobResponse>;
  triggerByWebhook(actor: TriggerActor, req: { rawProcessId: string; processId(): string; body(): WebhookTriggerInput }, onCreated?: OnJobCreated): Promise<JobResponse>;
  stop(tenantId: string, id: string, actor?: AuditActor): Promise<StopJobResponse>;
  answerInput(tenantId: string, jobId: string, body: () => { value: unknown }, actor: AuditActor): Promise<JobResponse>;
  get(tenantId: string, id: string): Promise<JobResponse>;
  list(tenantId: string, query: JobListQuery): Promise<Paged<JobResponse>>;
  /** every job the filters match, as CSV or NDJSON read in keyset chunks; archived ones when asked */
  export(tenantId: string, query: Omit<JobExportQuery, 'format'>, format: ExportFormat): Promise<Readable>;
  /** a job's whole log, inline or archived */
  logs(tenantId: string, jobId: string): Promise<Static<typeof JobLogsResponse>>;
}

/** Told in the add's transaction once the item (or the items) exist. */
export interface InTransaction<T> {
  inTransaction?: (tx: TransactionHandle, result: T) => Promise<void>;
}

/** Queue items: added by API keys (and `svc items import`), listed, exported. */
export interface ItemCommands {
  /** the queue an API key names, active, as a reference the other item commands take; unknown or inactive → NotFoundError */
  activeQueueByName(tenantId: string, name: string): Promise<QueueRef>;
  add(queue: QueueRef, input: AddQueueItemInput, opts?: InTransaction<QueueItemResponse>): Promise<QueueItemResponse>;
  addToQueueNamed(tenantId: string, queueName: string, input: AddQueueItemInput): Promise<QueueItemResponse>;
  addBulk(queue: QueueRef, input: AddQueueItemsBulkInput, opts?: InTransaction<number>): Promise<number>;
  addMany(queue: QueueRef, inputs: readonly AddQueueItemInput[], opts?: InTransaction<number>): Promise<number>;
  list(queue: QueueRef, query: QueueItemListQuery): Promise<Paged<QueueItemResponse>>;
  /** every item of a queue the filters match, as CSV or NDJSON read in keyset chunks; archived ones when asked */
  export(queue: QueueRef, query: Omit<QueueItemExportQuery, 'format'>, format: ExportFormat, columns?: ReadonlyArray<keyof QueueItemResponse & string>): Promise<Readable>;
}

/** People deciding items that wait for review, and dead-lettered items sent back. */
export interface ReviewCommands {
  decide(actor: ReviewActor, target: { queueId: string; itemId: string }, decision: { approve: true; comment?: string } | { approve: false; reason?: string }): Promise<QueueItemResponse>;
  redrive(actor: ReviewActor, queueId: string, body: () => { item_ids?: string[] }): Promise<number>;
}

/** What asking for a bulk action answers: its count (a dry run), or the action and, for a small one, the token to run it now. */
export type BulkAsked = { dryRun: true; total: number } | { dryRun: false; action: BulkActionResponse; inlineToken: string | null };

/** Bulk actions by filter on a queue's items or a workspace's jobs (docs/decisions/bulk-actions.md). */
export interface BulkCommands {
  askItems(actor: AuditActor, queue: { id: string; tenant_id: string }, body: ItemActionBody, opts?: AskOptions): Promise<BulkAsked>;
  askJobs(actor: AuditActor, tenantId: string, body: JobActionBody, opts?: AskOptions): Promise<BulkAsked>;
  get(tenantId: string, id: string, target?: BulkTarget): Promise<BulkActionResponse>;
  cancel(actor: AuditActor, tenantId: string, id: string, target?: BulkTarget): Promise<BulkActionResponse>;
  /** open actions' chunks, within a time budget (the dispatcher's pass) */
  run(opts?: Omit<RunBulkOptions, 'logger'>): Promise<number>;
  /** a small action to its end, by the request that asked for it and holds its lease */
  runAsked(id: string, token: string): Promise<void>;
}

export type BulkTarget = 'jobs' | 'queue_items';

/** The workspace's audit log, as its admins read it. */
export interface AuditCommands {
  list(tenantId: string, query: AuditLogQuery): Promise<{ data: AuditEntryResponse[]; meta: CursorMeta }>;
  export(tenantId: string, query: Omit<AuditLogExportQuery, 'format'>, format: ExportFormat): Promise<Readable>;
}

// Robots and the dispatcher ----------------------------------------------------------------------

/** A machine's robot, through the API's agent session: its heartbeat, its runs and the items it takes. */
export interface MachineCommands {
  findByKey(machineKey: string): Promise<AgentMachine | null>;
  /** of the connections given, those whose machine key no longer admits them */
  lapsedKeys(connections: readonly { id: string; keyHashHex: string }[]): Promise<string[]>;
  heartbeat(machineId: string, report: HeartbeatReport): Promise<HeartbeatResult | null>;
  liveness(machineIds: readonly string[]): Promise<(HeartbeatResult | null)[]>;
  reportLoad(machineId: string, running: number): Promise<void>;
  /** the machine said goodbye: it goes offline, its pending jobs go to others */
  goodbye(machineId: string): Promise<DispatchJobRef[]>;
  giveUpJobs(machineId: string): Promise<EndedJobs>;
  startJob(jobId: string, machineId: string, opts?: StartOptions): Promise<StartResult>;
  acknowledgeRun(jobId: string, attempt: number, machineId: string, leaseSeconds?: number | null): Promise<{ stop_requested: boolean } | null>;
  renewLeases(machineId: string, runs: readonly LeaseRenewal[], leaseSeconds: number): Promise<OwnedRun[]>;
  reportProgress(jobId: string, attempt: number, p: JobProgress): Promise<{ stop_requested: boolean } | null>;
  /** null: the run is no longer this attempt's (fenced) */
  finishRun(jobId: string, attempt: number, end: JobEnd, opts?: { repeat?: boolean }): Promise<{ status: JobResponse['status'] } | null>;
  pendingStops(olderThanMs: number): Promise<{ id: string; machine_id: string }[]>;
  askInput(jobId: string, attempt: number, ask: { prompt?: unknown; options?: unknown }, opts?: { repeat?: boolean }): Promise<AskResult>;
  readInput(jobId: string, attempt: number): Promise<InputState | null>;
  appendLogs(jobId: string, attempt: number, append: LogAppend): Promise<{ stop_requested: boolean } | null>;
  takeItems(req: TakeRequest): Promise<TakeResult>;
  releaseItems(jobId: string, items: readonly { id: string; attempt: number }[]): Promise<number>;
  hasWaitingJobs(machineId: string, exceptJobId: string): Promise<boolean>;
  earliestPendingStart(machineId: string): Promise<Date | null>;
  readAsset(encryptionKey: Buffer, reader: { tenantId: string; machineId: string; jobId: string; attempt: number }, name: string, asked?: 'dev' | 'staging' | 'production'): Promise<AssetValueRead>;
}

/** The dispatcher's periodic work and what nudges start. */
export interface SweepCommands {
  timeOutJobs(): Promise<EndedJobs>;
  offlineMachines(offlineAfterSeconds: number): Promise<EndedJobs & { offline: { id: string; tenant_id: string; name: string }[]; handedBack: DispatchJobRef[] }>;
  retryItems(queueId?: string | null): Promise<{ retried: number; deadLettered: number; readyQueues: string[] }>;
  slaBreaches(): Promise<{ id: string; tenant_id: string; process_id: string; sla_due_at: Date }[]>;
  expiredIdempotencyKeys(batch?: number): Promise<number>;
  oldQueueStatBuckets(): Promise<number>;
  sampleMinute(): Promise<{ claimed: boolean; queues: number; machines: number }>;
  reconcile(dispatch: BullDispatch, opts?: ReconcileOptions): Promise<{ readded: number; replaced: number }>;
  fireSchedules(opts: FireOptions): Promise<FireResult>;
  /** items still in progress under a job that is no longer active → failed (a safety net) */
  failOrphans(): Promise<string[]>;
  /** consumer jobs a queue's triggers need now */
  startConsumers(queueId: string): Promise<DispatchJobRef[]>;
  queuesNeedingConsumers(tenantId?: string | null): Promise<string[]>;
  /** finished jobs' logs past the retention, into the archive */
  archiveLogs(retentionDays: number): Promise<string[]>;
  /** the claim floors from the items (docs/decisions/claim-floor.md) */
  claimFloors(): Promise<number>;
  /** events (and finished webhook deliveries) past the retention */
  oldEvents(retentionDays: number): Promise<number>;
  /** ended items and jobs past their retention: archived when asked, then deleted, within a budget */
  retention(opts?: Omit<RetentionOptions, 'logger' | 'archive' | 'logArchive' | 'holder'>): Promise<RetentionScopeResult[]>;
}

/** The retention archive: its manifest, and items brought back as new ones (`svc archive`). */
export interface ArchiveCommands {
  /** whether an archive is configured (restore reads it) */
  configured(): boolean;
  list(tenantId: string, filter?: { queueId?: string; from?: Date; to?: Date }): Promise<ArchiveFile[]>;
  restoreItems(queue: QueueRef, from: Date, to: Date): Promise<number>;
  /** removes the archive's files that no manifest row lists (killed batches' orphans) */
  sweepOrphans(opts?: OrphanSweepOptions): Promise<OrphanSweepResult>;
}

/** One file of the retention archive, as its manifest lists it. */
export type ArchiveFile = Readonly<ArchiveFileRow>;

/** The event feed and webhook subscriptions of a workspace, and their delivery (docs/decisions/events.md). */
export interface EventCommands {
  feed(tenantId: string, query: EventFeedQuery): Promise<FeedPage>;
  webhooks: {
    create(actor: AuditActor, tenantId: string, body: unknown): Promise<WebhookWithSecretResponse>;
    update(actor: AuditActor, tenantId: string, id: string, body: unknown): Promise<WebhookResponse>;
    rotateSecret(actor: AuditActor, tenantId: string, id: string): Promise<WebhookWithSecretResponse>;
    list(tenantId: string, query: { page: number; limit: number }): Promise<Paged<WebhookResponse>>;
    get(tenantId: string, id: string): Promise<WebhookResponse>;
    delete(actor: AuditActor, tenantId: string, id: string): Promise<WebhookResponse>;
    deliveries(tenantId: string, id: string, input: unknown): Promise<Paged<DeliveryResponse>>;
    redeliver(actor: AuditActor, tenantId: string, id: string, deliveryId: string): Promise<DeliveryResponse>;
    test(tenantId: string, id: string): Promise<DeliveryResponse>;
  };
  deliverer(opts?: Omit<DelivererOptions, 'sql' | 'logger' | 'settings'>): WebhookDeliverer;
}

/** Effects recorded by the commands, published through a DispatchPort. */
export interface OutboxCommands {
  relay(port: DispatchPort, outage?: DbOutage): OutboxRelay;
  drain(port: DispatchPort): Promise<number>;
}

export interface IdempotencyCommands {
  run(
    id: Omit<IdempotencyKeyId, 'key'> & { key: string | null },
    request: unknown,
    produce: (claim: IdempotencyClaim) => Promise<IdempotentResult>,
    onStoreError?: (err: unknown) => void,
  ): Promise<IdempotentResult & { replayed: boolean }>;
}
