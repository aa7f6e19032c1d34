import { Type, type Static, type TObject, type TOptional, type TProperties, type TSchema } from '@sinclair/typebox';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { EnvironmentName } from '../api-keys/schemas';

/**
 * Request and response schemas of the catalogue (folders, processes, machines, queues, assets).
 * The API validates with them, the OpenAPI document describes them, the CLI applies them.
 * Create bodies fill defaults; update bodies are partial (at least one field) and never default.
 */

/** Names are how queues and assets are addressed in URLs: no `/`, no control characters, no outer blanks. */
export const CatalogName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[^\\s/](?:[^/\\u0000-\\u001f]*[^\\s/])?$',
  description: 'Unique per workspace; 1-100 characters, no "/" and no leading or trailing blanks',
});
export const Description = Nullable(Type.String({ maxLength: 2000 }));
/** The first properties of a named record of a workspace as answered (catalogue, schedules). */
export const RecordHead = { id: Uuid(), tenant_id: Uuid(), name: Type.String(), description: Nullable(Type.String()) };

const strict = { additionalProperties: false } as const;

/** A partial version of a create body: every field optional, no defaults, at least one field. */
export function patchOf<T extends TProperties>(props: T): TObject<{ [K in keyof T]: TOptional<T[K]> }> {
  const optional: TProperties = {};
  for (const [k, v] of Object.entries(props)) {
    const copy = { ...v } as Record<string, unknown>;
    delete copy.default;
    optional[k] = Type.Optional(copy as unknown as TSchema);
  }
  return Type.Object(optional, { ...strict, minProperties: 1 }) as never;
}

export const IdParams = Type.Object({ id: Uuid() });
export type IdParams = Static<typeof IdParams>;

export const ActiveFilter = { is_active: Type.Optional(Type.Boolean({ description: 'Only active (true) or inactive (false) records' })) };
export const CatalogListQuery = Type.Object({ ...PageQuery, ...ActiveFilter }, strict);
export type CatalogListQuery = Static<typeof CatalogListQuery>;

// Folders -----------------------------------------------------------------------------------
const folderProps = {
  name: CatalogName,
  description: Type.Optional(Description),
  is_active: Type.Optional(Type.Boolean({ default: true })),
};
export const FolderCreate = Type.Object(folderProps, strict);
export type FolderCreate = Static<typeof FolderCreate>;
export const FolderUpdate = patchOf(folderProps);
export type FolderUpdate = Static<typeof FolderUpdate>;
export const FolderResponse = Type.Object({
  ...RecordHead,
  is_active: Type.Boolean(), created_at: DateTime(), updated_at: DateTime(),
});

// Processes --------------------------------------------------------------------------------
const AssetName = CatalogName;
const processProps = {
  name: CatalogName,
  description: Type.Optional(Description),
  release_id: Type.Optional(Uuid({ description: 'Release of the robot package; generated when omitted' })),
  folder_id: Type.Optional(Nullable(Uuid())),
  input_schema: Type.Optional(Nullable(Type.Object({}, { additionalProperties: true, description: 'A JSON Schema; webhook input_data is validated against it' }))),
  timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 604800, default: 3600 })),
  max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, default: 0 })),
  auto_retry: Type.Optional(Type.Boolean({ default: false })),
  retry_delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400, default: 60 })),
  tags: Type.Optional(Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 50, uniqueItems: true }))),
  sla_deadline_minutes: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 525600 }))),
  on_success_trigger_process_id: Type.Optional(Nullable(Uuid())),
  required_assets: Type.Optional(Type.Array(AssetName, { maxItems: 100, uniqueItems: true, default: [] })),
  is_active: Type.Optional(Type.Boolean({ default: true })),
};
export const ProcessCreate = Type.Object(processProps, strict);
export type ProcessCreate = Static<typeof ProcessCreate>;
export const ProcessUpdate = patchOf(processProps);
export type ProcessUpdate = Static<typeof ProcessUpdate>;
export const ProcessResponse = Type.Object({
  id: Uuid(),
  name: Type.String(),
  description: Nullable(Type.String()),
  release_id: Uuid(),
  folder_id: Nullable(Uuid()),
  input_schema: Nullable(Type.Object({}, { additionalProperties: true })),
  timeout_seconds: Type.Integer(),
  max_retries: Type.Integer(),
  auto_retry: Type.Boolean(),
  retry_delay_seconds: Type.Integer(),
  tags: Nullable(Type.Array(Type.String())),
  sla_deadline_minutes: Nullable(Type.Integer()),
  on_success_trigger_process_id: Nullable(Uuid()),
  required_assets: Type.Array(Type.String()),
  is_active: Type.Boolean(),
  created_at: DateTime(),
  updated_at: DateTime(),
});
export const ProcessListQuery = Type.Object({ ...PageQuery, ...ActiveFilter, folder_id: Type.Optional(Uuid()) }, strict);
export type ProcessListQuery = Static<typeof ProcessListQuery>;

// Machines ----------------------------------------------------------------------------------
export const MACHINE_STATUSES = ['online', 'offline', 'busy'] as const;
export type MachineStatus = (typeof MACHINE_STATUSES)[number];
export const MachineStatusSchema = Type.Union(MACHINE_STATUSES.map((s) => Type.Literal(s)));
/** An attended machine is a person's desktop robot: never auto-selected, only named (docs/decisions/triggers.md). */
export const MACHINE_KINDS = ['unattended', 'attended'] as const;
export type MachineKind = (typeof MACHINE_KINDS)[number];
export const MachineKindSchema = Type.Union(MACHINE_KINDS.map((k) => Type.Literal(k)), {
  default: 'unattended',
  description: '`attended`: a person\'s desktop robot, never chosen by auto-selection (a trigger or job may name it); its jobs have `is_attended: true`',
});
const machineProps = {
  name: CatalogName,
  description: Type.Optional(Description),
  slots: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, default: 1, description: 'Jobs the machine runs at once' })),
  kind: Type.Optional(MachineKindSchema),
  is_active: Type.Optional(Type.Boolean({ default: true })),
  environments: Type.Optional(Nullable(Type.Array(EnvironmentName, {
    minItems: 1,
    uniqueItems: true,
    description: 'Environments whose assets the machine\'s runs may read; null = all (an empty list is refused).',
  }))),
};
export const MachineCreate = Type.Object(machineProps, strict);
export type MachineCreate = Static<typeof MachineCreate>;
export const MachineUpdate = patchOf(machineProps);
export type MachineUpdate = Static<typeof MachineUpdate>;
export const MachineResponse = Type.Object({
  ...RecordHead,
  status: MachineStatusSchema,
  slots: Type.Integer(),
  kind: MachineKindSchema,
  running_jobs: Type.Integer(),
  is_active: Type.Boolean(),
  environments: Nullable(Type.Array(EnvironmentName)),
  last_heartbeat_at: Nullable(DateTime()),
  agent_version: Nullable(Type.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
});
export const MachineWithKeyResponse = Type.Intersect([
  MachineResponse,
  Type.Object({ machine_key: Type.String({ description: 'The agent\'s secret (svc_mk_…): returned only by create and rotate-key' }) }),
]);
export const MachineListQuery = Type.Object({ ...PageQuery, ...ActiveFilter, status: Type.Optional(MachineStatusSchema) }, strict);
export type MachineListQuery = Static<typeof MachineListQuery>;

// Queues ------------------------------------------------------------------------------------
const queueProps = {
  name: CatalogName,
  description: Type.Optional(Description),
  max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, default: 3 })),
  consumer_process_id: Type.Optional(Nullable(Uuid({ description: 'Process whose jobs take this queue\'s items' }))),
  max_consumers: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 1, description: 'Most consumer jobs at once' })),
  is_active: Type.Optional(Type.Boolean({ default: true })),
  is_paused: Type.Optional(Type.Boolean({ default: false, description: 'Paused: items are accepted, no consumer takes them' })),
  retention_completed_days: Type.Optional(Type.Number({
    minimum: 0, maximum: 36500, default: 30, description: 'Days a completed item stays after it ended (fractions allowed; docs/decisions/retention.md)',
  })),
  retention_failed_days: Type.Optional(Type.Number({
    minimum: 0, maximum: 36500, default: 90, description: 'Days a failed or dead-letter item stays after it ended (fractions allowed)',
  })),
  retention_action: Type.Optional(Type.Union([Type.Literal('delete'), Type.Literal('archive')], {
    default: 'delete', description: 'What happens to an item past its retention: deleted, or archived (ARCHIVE_DIR or ARCHIVE_S3_BUCKET) then deleted',
  })),
  unique_references: Type.Optional(Type.Boolean({
    default: false,
    description: 'No two items of the queue share a reference: an add whose reference another item of the queue holds answers 409 (items removed by retention no longer count)',
  })),
};
export const QueueCreate = Type.Object(queueProps, strict);
export type QueueCreate = Static<typeof QueueCreate>;
export const QueueUpdate = patchOf(queueProps);
export type QueueUpdate = Static<typeof QueueUpdate>;
export const QueueItemCountsSchema = Type.Object({
  total: Type.Integer(), new: Type.Integer(), in_progress: Type.Integer(), pending_review: Type.Integer(),
  completed: Type.Integer(), failed: Type.Integer(), dead_letter: Type.Integer(),
});
export const QueueResponse = Type.Object({
  ...RecordHead,
  max_retries: Type.Integer(),
  consumer_process_id: Nullable(Uuid()),
  max_consumers: Type.Integer(),
  is_active: Type.Boolean(),
  is_paused: Type.Boolean({ description: 'No consumer is started and running ones take nothing more (POST …/pause, …/resume)' }),
  retention_completed_days: Type.Number(),
  retention_failed_days: Type.Number(),
  retention_action: Type.Union([Type.Literal('delete'), Type.Literal('archive')]),
  unique_references: Type.Boolean({ description: 'No two items of the queue share a reference (docs/decisions/unique-references.md)' }),
  item_counts: QueueItemCountsSchema,
  created_at: DateTime(),
  updated_at: DateTime(),
});

// Assets ------------------------------------------------------------------------------------
export const ASSET_TYPES = ['text', 'integer', 'boolean', 'credential'] as const;
export type AssetType = (typeof ASSET_TYPES)[number];
export const AssetTypeSchema = Type.Union(ASSET_TYPES.map((t) => Type.Literal(t)));

export const CredentialInput = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 500 }),
  password: Type.String({ minLength: 1, maxLength: 2000 }),
}, strict);
export const TextValue = Type.String({ maxLength: 10000 });
export const IntegerValue = Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });

/** Which value shape each asset type takes (checked in code, once the type is known). */
export const ASSET_VALUE_SCHEMAS = {
  text: TextValue,
  integer: IntegerValue,
  boolean: Type.Boolean(),
  credential: CredentialInput,
} as const;

/**
 * One value per environment; null removes an environment's value on update. The shape of each
 * value depends on the asset type (text → string, integer → integer, boolean → boolean,
 * credential → {username, password}); it is checked against the type after this schema.
 */
const envValue = Type.Optional(Type.Unknown({
  description: 'text: string; integer: integer; boolean: boolean; credential: {username, password}; null removes it',
}));
export const AssetValuesInput = Type.Object({ dev: envValue, staging: envValue, production: envValue }, strict);

const assetProps = {
  name: CatalogName,
  type: AssetTypeSchema,
  description: Type.Optional(Description),
  values: Type.Optional(AssetValuesInput),
  is_active: Type.Optional(Type.Boolean({ default: true })),
};
export const AssetCreate = Type.Object(assetProps, strict);
export type AssetCreate = Static<typeof AssetCreate>;
export const AssetUpdate = patchOf(assetProps);
export type AssetUpdate = Static<typeof AssetUpdate>;

/** What the management API shows of a credential: never the password. */
export const CredentialView = Type.Object({ username: Type.String(), has_password: Type.Boolean() });
const envView = Nullable(Type.Union([Type.String(), Type.Integer(), Type.Boolean(), CredentialView]));
export const AssetResponse = Type.Object({
  id: Uuid(),
  tenant_id: Uuid(),
  name: Type.String(),
  type: AssetTypeSchema,
  description: Nullable(Type.String()),
  is_active: Type.Boolean(),
  values: Type.Object({ dev: envView, staging: envView, production: envView }),
  created_at: DateTime(),
  updated_at: DateTime(),
});
