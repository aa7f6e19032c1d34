import { CLI_ACTOR, ValidationError, es, type CatalogBatch, type Engine, type FieldIssue, type SavedRecord } from '@svc/core';
import type { AssetType } from '@svc/core/schemas';
import { checkWorkspace, resolveEnvRefs, type AssetEntry, type Kind, type WorkspaceFile } from './file';

/**
 * Applies a workspace file to a tenant, in one transaction: each entry is created when no record
 * of that kind has its name, else changed in place where the file differs from the record, else
 * left alone. Nothing is deleted, and fields the file leaves out are not touched, so applying the
 * same file twice changes nothing the second time.
 *
 * Each entry is one call of the engine's "create or update a catalogue record" (engine.catalog,
 * core's catalog/by-resource.ts), the command behind the settings API's routes too: it compares
 * the entry with the record, and writes the change with its audit row (`create_<resource>` /
 * `update_<resource>`, actor `system`, source `cli`; details name fields, never a value) and its
 * effects. All entries share one transaction (engine.catalog.batch); a dry run rolls it back.
 * What is left here is the file's vocabulary: names for references, `$env` values, the report.
 */

export type Action = 'created' | 'updated' | 'unchanged';
export type ResourceKind = 'folder' | 'process' | 'machine' | 'queue' | 'asset' | 'schedule';

export interface AppliedResource {
  kind: ResourceKind;
  name: string;
  id: string;
  action: Action;
  /** Fields that were changed (updates only); asset values appear as `values.<environment>`, never their content. */
  changed?: string[];
  /** The new machine's key: only for a machine created by this run (and not in a dry run). */
  machine_key?: string;
}

export interface ApplyReport {
  tenant: { id: string; name: string };
  dry_run: boolean;
  summary: Record<Action, number>;
  resources: AppliedResource[];
}

export interface ApplyOptions {
  /** Environment for `{"$env": "NAME"}` references in asset values. */
  env?: Record<string, string | undefined>;
  /** Work out and report the changes, then roll them back. */
  dryRun?: boolean;
}

/** Only the keys the file gave (undefined = not given). */
function given<T extends object>(entry: T, keys: ReadonlyArray<keyof T & string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (entry[k] !== undefined) out[k] = entry[k];
  return out;
}

/** Core reports `body → field`; inside a file the entry is `body → processes → 2 → field`. */
async function atEntry<T>(kind: Kind, index: number, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ValidationError) {
      const issues: FieldIssue[] = err.issues.map((i) => {
        const rest = i.loc[0] === 'body' ? i.loc.slice(1) : i.loc;
        const loc = ['body', kind, index, ...rest];
        return { ...i, loc, field: loc.join(' → ') };
      });
      throw new ValidationError(issues, err.message);
    }
    throw err;
  }
}

/** A problem with one field of the entry being applied (atEntry adds where the entry is). */
function entryError(field: string, message: string): ValidationError {
  return ValidationError.single(['body', field], message, 'reference');
}

interface Ctx {
  batch: CatalogBatch;
  out: AppliedResource[];
  folders: Map<string, string>;
  processes: Map<string, string>;
}

function record(ctx: Ctx, r: AppliedResource): AppliedResource {
  ctx.out.push(r);
  return r;
}

const SHOWN_AS: Record<string, string> = {
  folder_id: 'folder', on_success_trigger_process_id: 'on_success', consumer_process_id: 'consumer', process_id: 'process', machine_id: 'machine',
};
/** The changes as the file names them (`folder`, not `folder_id`). */
const shown = (fields: string[]) => fields.map((f) => SHOWN_AS[f] ?? f);

/** One entry saved by name: the report line of what the engine did. */
async function save<R extends ResourceKind>(ctx: Ctx, kind: R, name: string, desired: Record<string, unknown>): Promise<SavedRecord<R>> {
  return ctx.batch.save(kind, { name }, desired);
}

function reported(kind: ResourceKind, name: string, saved: SavedRecord<ResourceKind>): AppliedResource {
  const { action, record: { id } } = saved;
  return action === 'updated' ? { kind, name, id, action, changed: shown(saved.changed) } : { kind, name, id, action };
}

async function folderId(ctx: Ctx, name: string | null): Promise<string | null> {
  if (name === null) return null;
  const id = ctx.folders.get(name) ?? (await ctx.batch.findByName('folder', name))?.id;
  if (!id) throw entryError('folder', es.cli.folderUnknown(name));
  return id;
}

async function processId(ctx: Ctx, name: string | null, field: string): Promise<string | null> {
  if (name === null) return null;
  const id = ctx.processes.get(name) ?? (await ctx.batch.findByName('process', name))?.id;
  if (!id) throw entryError(field, es.cli.processUnknown(name));
  return id;
}

async function machineId(ctx: Ctx, name: string | null): Promise<string | null> {
  if (name === null) return null;
  const id = (await ctx.batch.findByName('machine', name))?.id;
  if (!id) throw entryError('machine', es.cli.machineUnknown(name));
  return id;
}

async function applyFolders(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.folders ?? []).entries()) {
    await atEntry('folders', i, async () => {
      const saved = await save(ctx, 'folder', entry.name, given(entry, ['description', 'is_active']));
      ctx.folders.set(entry.name, saved.record.id);
      return record(ctx, reported('folder', entry.name, saved));
    });
  }
}

const PROCESS_FIELDS = [
  'description', 'release_id', 'input_schema', 'timeout_seconds', 'max_retries', 'auto_retry', 'retry_delay_seconds', 'tags',
  'sla_deadline_minutes', 'required_assets', 'is_active',
] as const;

/**
 * Two passes, so a process may name as its successor one defined later in the file (or form a
 * chain): first every new process is created and every process's desired state worked out, then
 * successors are resolved and each process is saved once. One audit row per entry: a create
 * covers its successor too; an update names the fields of both passes.
 */
async function applyProcesses(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  const entries = file.processes ?? [];
  const results: AppliedResource[] = [];
  /** per entry: its desired state (existing records), or null for one created in the first pass */
  const desiredOf: Array<Record<string, unknown> | null> = [];
  for (const [i, entry] of entries.entries()) {
    results[i] = await atEntry('processes', i, async () => {
      const desired = given(entry, PROCESS_FIELDS);
      if (entry.folder !== undefined) desired.folder_id = await folderId(ctx, entry.folder);
      const current = await ctx.batch.findByName('process', entry.name);
      if (current) {
        ctx.processes.set(entry.name, current.id);
        desiredOf[i] = desired;
        // completed by the second pass
        return record(ctx, { kind: 'process', name: entry.name, id: current.id, action: 'unchanged' });
      }
      const saved = await save(ctx, 'process', entry.name, desired);
      ctx.processes.set(entry.name, saved.record.id);
      desiredOf[i] = null;
      return record(ctx, reported('process', entry.name, saved));
    });
  }
  for (const [i, entry] of entries.entries()) {
    await atEntry('processes', i, async () => {
      const res = results[i]!;
      const desired = desiredOf[i];
      const successor = entry.on_success !== undefined ? await processId(ctx, entry.on_success, 'on_success') : undefined;
      if (desired === null) {
        // a process created above gets its successor as the rest of its create (audited as such)
        if (successor) await ctx.batch.completeCreate('process', res.id, { on_success_trigger_process_id: successor });
        return;
      }
      if (successor !== undefined) desired!.on_success_trigger_process_id = successor;
      Object.assign(res, reported('process', entry.name, await save(ctx, 'process', entry.name, desired!)));
    });
  }
}

async function applyMachines(ctx: Ctx, file: WorkspaceFile, dryRun: boolean): Promise<void> {
  for (const [i, entry] of (file.machines ?? []).entries()) {
    await atEntry('machines', i, async () => {
      const saved = await save(ctx, 'machine', entry.name, given(entry, ['description', 'slots', 'kind', 'is_active', 'environments']));
      const r = reported('machine', entry.name, saved);
      return record(ctx, saved.machineKey !== undefined && !dryRun ? { ...r, machine_key: saved.machineKey } : r);
    });
  }
}

async function applyQueues(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.queues ?? []).entries()) {
    await atEntry('queues', i, async () => {
      const desired = given(entry, [
        'description', 'max_retries', 'max_consumers', 'is_active', 'is_paused', 'retention_completed_days', 'retention_failed_days', 'retention_action',
        'unique_references',
      ]);
      if (entry.consumer !== undefined) desired.consumer_process_id = await processId(ctx, entry.consumer, 'consumer');
      return record(ctx, reported('queue', entry.name, await save(ctx, 'queue', entry.name, desired)));
    });
  }
}

/** Schedules name their process and machine; both may be defined earlier in the same file. */
async function applySchedules(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.schedules ?? []).entries()) {
    await atEntry('schedules', i, async () => {
      const desired = given(entry, ['description', 'cron', 'timezone', 'input_data', 'priority', 'is_active', 'missed_runs']);
      if (entry.process !== undefined) desired.process_id = await processId(ctx, entry.process, 'process');
      if (entry.machine !== undefined) desired.machine_id = await machineId(ctx, entry.machine);
      if (!(await ctx.batch.findByName('schedule', entry.name))) {
        if (entry.process === undefined) throw entryError('process', es.cli.scheduleNeedsProcess);
        if (entry.cron === undefined) throw entryError('cron', es.cli.scheduleNeedsCron);
      }
      return record(ctx, reported('schedule', entry.name, await save(ctx, 'schedule', entry.name, desired)));
    });
  }
}

const ENVS = ['dev', 'staging', 'production'] as const;

/**
 * A value from `{"$env": …}` arrives as text; integer and boolean assets take it as the number or
 * the boolean it spells.
 */
function typedValue(type: AssetType, raw: unknown, resolved: unknown): unknown {
  const fromEnv = raw !== null && typeof raw === 'object' && Object.keys(raw).length === 1 && '$env' in raw;
  if (!fromEnv || typeof resolved !== 'string') return resolved;
  if (type === 'integer' && /^-?\d+$/.test(resolved.trim())) return Number(resolved);
  if (type === 'boolean' && /^(true|false)$/i.test(resolved.trim())) return resolved.trim().toLowerCase() === 'true';
  return resolved;
}

function assetValues(entry: AssetEntry, type: AssetType | undefined, env: Record<string, string | undefined>) {
  if (!entry.values) return undefined;
  const out: Record<string, unknown> = {};
  for (const e of ENVS) {
    const raw = entry.values[e];
    if (raw === undefined) continue;
    const resolved = resolveEnvRefs(raw, env, ['body', 'values', e]);
    out[e] = type ? typedValue(type, raw, resolved) : resolved;
  }
  return out;
}

/** Asset values are compared by the engine per environment (credentials decrypted); the report names `values.<env>`. */
async function applyAssets(ctx: Ctx, file: WorkspaceFile, opts: ApplyOptions): Promise<void> {
  const env = opts.env ?? {};
  for (const [i, entry] of (file.assets ?? []).entries()) {
    await atEntry('assets', i, async () => {
      const current = await ctx.batch.findByName('asset', entry.name);
      const values = assetValues(entry, entry.type ?? current?.type, env);
      if (!current && !entry.type) throw entryError('type', es.cli.assetNeedsType);
      const desired = {
        ...(current ? {} : { type: entry.type }),
        ...given(entry, ['description', 'is_active']),
        ...(current && entry.type !== undefined ? { type: entry.type } : {}),
        ...(values ? { values } : {}),
      };
      const saved = await save(ctx, 'asset', entry.name, desired);
      const { action, record: { id } } = saved;
      // asset changes are reported as the engine names them (`values.<env>`, not mapped)
      return record(ctx, action === 'updated'
        ? { kind: 'asset', name: entry.name, id, action, changed: saved.changed }
        : { kind: 'asset', name: entry.name, id, action });
    });
  }
}

/** Validates the document, then applies it to the tenant in one transaction (rolled back on `dryRun`). */
export async function applyWorkspace(engine: Engine, tenantId: string, doc: unknown, opts: ApplyOptions = {}): Promise<ApplyReport> {
  const file = checkWorkspace(doc);
  const tenant = await engine.tenants.get(tenantId);
  return engine.catalog.batch(CLI_ACTOR, tenant.id, async (batch) => {
    const ctx: Ctx = { batch, out: [], folders: new Map(), processes: new Map() };
    await applyFolders(ctx, file);
    await applyProcesses(ctx, file);
    await applyMachines(ctx, file, !!opts.dryRun);
    await applyQueues(ctx, file);
    await applyAssets(ctx, file, opts);
    await applySchedules(ctx, file);
    const summary: Record<Action, number> = { created: 0, updated: 0, unchanged: 0 };
    for (const r of ctx.out) summary[r.action]++;
    return { tenant: { id: tenant.id, name: tenant.name }, dry_run: !!opts.dryRun, summary, resources: ctx.out };
  }, { dryRun: !!opts.dryRun });
}
