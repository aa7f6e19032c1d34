import { readFileSync } from 'node:fs';
import path from 'node:path';
import { es, ValidationError, validate, type FieldIssue } from '@svc/core';
import {
  AssetUpdate, CatalogName, FolderUpdate, MachineUpdate, ProcessUpdate, QueueUpdate, ScheduleUpdate, type AssetType,
} from '@svc/core/schemas';
import { CliError, EXIT, UsageError } from '../errors';

type TSchemaLike = Parameters<typeof validate>[0];

/**
 * The declarative workspace file (docs/workspace-file.md): JSON with optional lists of folders,
 * processes, machines, queues, assets and schedules, each entry named. Entries take the fields of the
 * management API, except that references are by name (`folder`, `on_success`, `consumer`,
 * a schedule's `process` and `machine`) so a
 * file can be applied to any tenant. Fields a file leaves out are left as they are: the entry
 * schemas are the update schemas (no defaults), plus a required name.
 */

const nullableName = { anyOf: [CatalogName, { type: 'null' }] };

function entrySchema(update: TSchemaLike, drop: string[], extra: Record<string, unknown>): TSchemaLike {
  const properties: Record<string, unknown> = { ...(update as unknown as { properties: Record<string, unknown> }).properties };
  for (const key of drop) delete properties[key];
  return { type: 'object', properties: { ...properties, ...extra, name: CatalogName }, required: ['name'], additionalProperties: false } as unknown as TSchemaLike;
}

const list = (items: TSchemaLike) => ({ type: 'array', items, maxItems: 1000 });

export const WorkspaceFileSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    description: { type: 'string' },
    folders: list(entrySchema(FolderUpdate, [], {})),
    processes: list(entrySchema(ProcessUpdate, ['folder_id', 'on_success_trigger_process_id'], {
      folder: { ...nullableName, description: 'Name of a folder (in this file or already in the tenant); null for none' },
      on_success: { ...nullableName, description: 'Name of the process to trigger when a job of this one completes; null for none' },
    })),
    machines: list(entrySchema(MachineUpdate, [], {})),
    queues: list(entrySchema(QueueUpdate, ['consumer_process_id'], {
      consumer: { ...nullableName, description: 'Name of the process whose jobs consume this queue; null for none' },
    })),
    assets: list(entrySchema(AssetUpdate, [], {})),
    schedules: list(entrySchema(ScheduleUpdate, ['process_id', 'machine_id'], {
      process: { ...CatalogName, description: 'Name of the process to start (in this file or already in the tenant); required to create one' },
      machine: { ...nullableName, description: 'Name of the machine to run on; null for the least-loaded online machine' },
    })),
  },
} as unknown as TSchemaLike;

type Nullable<T> = T | null;

export interface FolderEntry { name: string; description?: Nullable<string>; is_active?: boolean }
export interface ProcessEntry {
  name: string;
  description?: Nullable<string>;
  release_id?: string;
  folder?: Nullable<string>;
  input_schema?: Nullable<Record<string, unknown>>;
  timeout_seconds?: number;
  max_retries?: number;
  auto_retry?: boolean;
  retry_delay_seconds?: number;
  tags?: Nullable<string[]>;
  sla_deadline_minutes?: Nullable<number>;
  on_success?: Nullable<string>;
  required_assets?: string[];
  is_active?: boolean;
}
export interface MachineEntry {
  name: string;
  description?: Nullable<string>;
  slots?: number;
  kind?: 'unattended' | 'attended';
  is_active?: boolean;
  environments?: Nullable<Array<'dev' | 'staging' | 'production'>>;
}
export interface QueueEntry {
  name: string;
  description?: Nullable<string>;
  max_retries?: number;
  consumer?: Nullable<string>;
  max_consumers?: number;
  is_active?: boolean;
  is_paused?: boolean;
  retention_completed_days?: number;
  retention_failed_days?: number;
  retention_action?: 'delete' | 'archive';
  unique_references?: boolean;
}
export interface AssetEntry {
  name: string;
  type?: AssetType;
  description?: Nullable<string>;
  values?: Partial<Record<'dev' | 'staging' | 'production', unknown>>;
  is_active?: boolean;
}

export interface ScheduleEntry {
  name: string;
  description?: Nullable<string>;
  process?: string;
  cron?: string;
  timezone?: string;
  machine?: Nullable<string>;
  input_data?: Nullable<Record<string, unknown>>;
  priority?: number;
  is_active?: boolean;
  missed_runs?: 'skip' | 'run_once';
}

export interface WorkspaceFile {
  folders?: FolderEntry[];
  processes?: ProcessEntry[];
  machines?: MachineEntry[];
  queues?: QueueEntry[];
  assets?: AssetEntry[];
  schedules?: ScheduleEntry[];
}

export const KINDS = ['folders', 'processes', 'machines', 'queues', 'assets', 'schedules'] as const;
export type Kind = (typeof KINDS)[number];

function issue(loc: Array<string | number>, message: string, type = 'value_error'): FieldIssue {
  return { field: loc.join(' → '), message, loc, type };
}

/**
 * Checks the document's shape, that names are unique per kind, and that every asset has a type
 * (required to create one; checked against the tenant later for existing assets).
 */
export function checkWorkspace(doc: unknown): WorkspaceFile {
  const file = validate(WorkspaceFileSchema, doc, 'body') as WorkspaceFile;
  const problems: FieldIssue[] = [];
  for (const kind of KINDS) {
    const seen = new Map<string, number>();
    (file[kind] ?? []).forEach((entry: { name: string }, i: number) => {
      const first = seen.get(entry.name);
      if (first !== undefined) problems.push(issue(['body', kind, i, 'name'], es.cli.duplicateName(kind, first), 'unique'));
      else seen.set(entry.name, i);
    });
  }
  if (problems.length) throw new ValidationError(problems);
  return file;
}

/**
 * The only variables `{"$env": …}` may read. An asset is readable by the tenant's robots and
 * admins, so an open `$env` would let whoever writes the file copy the operator's own secrets
 * (DATABASE_URL, ASSET_ENCRYPTION_KEY, …) into the tenant; a prefix makes exporting a value for a
 * tenant a deliberate act (docs/decisions/operator-secrets.md).
 */
export const ENV_REF_PREFIX = 'SVC_ASSET_';

/**
 * Replaces `{"$env": "NAME"}` inside asset values with the environment variable NAME (which must
 * start with ENV_REF_PREFIX), so a file can be committed without its secrets.
 */
export function resolveEnvRefs(value: unknown, env: Record<string, string | undefined>, loc: Array<string | number>): unknown {
  if (Array.isArray(value)) return value.map((v, i) => resolveEnvRefs(v, env, [...loc, i]));
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$env') {
      const name = (value as { $env: unknown }).$env;
      if (typeof name !== 'string' || !name) throw new ValidationError([issue(loc, es.cli.envNameRequired)]);
      // refused before it is read: nothing of another variable reaches the tenant, not even whether it is set
      if (!name.startsWith(ENV_REF_PREFIX) || name.length === ENV_REF_PREFIX.length) {
        throw new ValidationError([issue(loc, es.cli.envPrefix(ENV_REF_PREFIX, name), 'env')]);
      }
      const v = env[name];
      if (v === undefined) throw new ValidationError([issue(loc, es.cli.envUndefined(name), 'env')]);
      return v;
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveEnvRefs(v, env, [...loc, k])]));
  }
  return value;
}

/** Reads and parses a workspace file (JSON; `-` reads standard input). */
export async function readWorkspaceFile(file: string, readStdin: () => Promise<string>): Promise<unknown> {
  if (/\.ya?ml$/i.test(file)) {
    throw new UsageError('YAML workspace files are not supported: write the file as JSON (see docs/workspace-file.md)');
  }
  let text: string;
  try {
    text = file === '-' ? await readStdin() : readFileSync(path.resolve(file), 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`, code === 'ENOENT' ? EXIT.notFound : EXIT.failed, code === 'ENOENT' ? 'NOT_FOUND' : 'FAILED');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`, EXIT.usage, 'VALIDATION_ERROR');
  }
}
