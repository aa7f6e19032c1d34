import {
  CLI_ACTOR, createAsset, createFolder, createMachine, createProcess, createQueue, findAssetByName, findFolderByName,
  findMachineByName, findProcessByName, findQueueByName, getTenant, readStoredCredentials, toFolderResponse, toMachineResponse,
  toProcessResponse, toQueueResponse, updateAsset, updateFolder, updateMachine, updateProcess, updateQueue, writeCatalogEntity,
  createSchedule, findScheduleByName, toScheduleResponse, updateSchedule,
  ValidationError, type AssetType, type CatalogChange, type FieldIssue, type Queryable, type Sql,
} from '@svc/core';
import { checkWorkspace, resolveEnvRefs, type AssetEntry, type Kind, type WorkspaceFile } from './file';

/**
 * Applies a workspace file to a tenant, in one transaction: each entry is created when no record
 * of that kind has its name, else changed in place where the file differs from the record, else
 * left alone. Nothing is deleted, and fields the file leaves out are not touched, so applying the
 * same file twice changes nothing the second time.
 *
 * Every create and update goes through core's writeCatalogEntity, like the settings API, so it
 * writes its audit row in the same transaction (`create_<resource>` / `update_<resource>`), with
 * actor `system` and source `cli`; details name fields, never a value. A dry run rolls them back
 * with the rest.
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
  /** The asset encryption key; asked for only when the file has assets. */
  assetKey?: () => Buffer;
  /** Work out and report the changes, then roll them back. */
  dryRun?: boolean;
}

class DryRun extends Error {
  constructor(readonly report: ApplyReport) {
    super('dry run');
  }
}

/** Deep equality of JSON values; object key order does not matter (jsonb reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => sameJson(v, (b as unknown[])[i]));
  const ka = Object.keys(a), kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson((a as never)[k], (b as never)[k]));
}

/** Only the keys the file gave (undefined = not given). */
function given<T extends object>(entry: T, keys: ReadonlyArray<keyof T & string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (entry[k] !== undefined) out[k] = entry[k];
  return out;
}

function differences(desired: Record<string, unknown>, current: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(desired)) if (!sameJson(v, current[k])) patch[k] = v;
  return patch;
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
  tx: Queryable;
  tenantId: string;
  out: AppliedResource[];
  folders: Map<string, string>;
  processes: Map<string, string>;
}

/**
 * One catalogue write, its audit row and its effects (a queue that may need consumers), under a
 * savepoint of the apply's transaction: the dispatcher's relay publishes the effects once the
 * apply commits, as for the settings API.
 */
async function write<T extends { id: string }>(ctx: Ctx, change: CatalogChange, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return (await writeCatalogEntity(ctx.tx, CLI_ACTOR, ctx.tenantId, change, work)).row;
}

function record(ctx: Ctx, r: AppliedResource): AppliedResource {
  ctx.out.push(r);
  return r;
}

async function folderId(ctx: Ctx, name: string | null): Promise<string | null> {
  if (name === null) return null;
  const id = ctx.folders.get(name) ?? (await findFolderByName(ctx.tx, ctx.tenantId, name))?.id;
  if (!id) throw entryError('folder', `La carpeta "${name}" no existe en el fichero ni en el workspace`);
  return id;
}

async function processId(ctx: Ctx, name: string | null, field: string): Promise<string | null> {
  if (name === null) return null;
  const id = ctx.processes.get(name) ?? (await findProcessByName(ctx.tx, ctx.tenantId, name))?.id;
  if (!id) throw entryError(field, `El proceso "${name}" no existe en el fichero ni en el workspace`);
  return id;
}

async function applyFolders(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.folders ?? []).entries()) {
    await atEntry('folders', i, async () => {
      const desired = given(entry, ['description', 'is_active']);
      const current = await findFolderByName(ctx.tx, ctx.tenantId, entry.name);
      if (!current) {
        const row = await write(ctx, { change: 'create', resource: 'folder', name: entry.name },
          (tx) => createFolder(tx, ctx.tenantId, { name: entry.name, ...desired }));
        ctx.folders.set(entry.name, row.id);
        return record(ctx, { kind: 'folder', name: entry.name, id: row.id, action: 'created' });
      }
      ctx.folders.set(entry.name, current.id);
      const patch = differences(desired, toFolderResponse(current));
      if (Object.keys(patch).length) {
        await write(ctx, { change: 'update', resource: 'folder', fields: Object.keys(patch) }, (tx) => updateFolder(tx, ctx.tenantId, current.id, patch));
      }
      return record(ctx, change('folder', entry.name, current.id, Object.keys(patch)));
    });
  }
}

function change(kind: ResourceKind, name: string, id: string, changed: string[]): AppliedResource {
  return changed.length ? { kind, name, id, action: 'updated', changed } : { kind, name, id, action: 'unchanged' };
}

const PROCESS_FIELDS = [
  'description', 'release_id', 'input_schema', 'timeout_seconds', 'max_retries', 'auto_retry', 'retry_delay_seconds', 'tags',
  'sla_deadline_minutes', 'required_assets', 'is_active',
] as const;
const SHOWN_AS: Record<string, string> = {
  folder_id: 'folder', on_success_trigger_process_id: 'on_success', consumer_process_id: 'consumer', process_id: 'process', machine_id: 'machine',
};
const shown = (fields: string[]) => fields.map((f) => SHOWN_AS[f] ?? f);

/**
 * Two passes, so a process may name as its successor one defined later in the file (or form a
 * chain): first every process is created or compared with its record, then successors are
 * resolved and each changed process is written once. One audit row per entry: a create covers its
 * successor too; an update names the fields of both passes.
 */
async function applyProcesses(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  const entries = file.processes ?? [];
  const results: AppliedResource[] = [];
  /** per entry: what its record still needs, and the successor it has now */
  const pending: Array<{ patch: Record<string, unknown>; successor: string | null }> = [];
  for (const [i, entry] of entries.entries()) {
    results[i] = await atEntry('processes', i, async () => {
      const desired = given(entry, PROCESS_FIELDS);
      if (entry.folder !== undefined) desired.folder_id = await folderId(ctx, entry.folder);
      const current = await findProcessByName(ctx.tx, ctx.tenantId, entry.name);
      if (!current) {
        const row = await write(ctx, { change: 'create', resource: 'process', name: entry.name },
          (tx) => createProcess(tx, ctx.tenantId, { name: entry.name, ...desired }));
        ctx.processes.set(entry.name, row.id);
        pending[i] = { patch: {}, successor: null };
        return record(ctx, { kind: 'process', name: entry.name, id: row.id, action: 'created' });
      }
      ctx.processes.set(entry.name, current.id);
      const patch = differences(desired, toProcessResponse(current));
      pending[i] = { patch, successor: current.on_success_trigger_process_id };
      return record(ctx, change('process', entry.name, current.id, shown(Object.keys(patch))));
    });
  }
  for (const [i, entry] of entries.entries()) {
    await atEntry('processes', i, async () => {
      const res = results[i]!;
      const { patch, successor } = pending[i]!;
      if (entry.on_success !== undefined) {
        const target = await processId(ctx, entry.on_success, 'on_success');
        if (target !== successor) {
          patch.on_success_trigger_process_id = target;
          if (res.action === 'unchanged') Object.assign(res, { action: 'updated', changed: ['on_success'] });
          else if (res.action === 'updated') res.changed!.push('on_success');
        }
      }
      if (Object.keys(patch).length === 0) return;
      // a process created above gets its successor as the rest of its create (audited as such)
      if (res.action === 'created') await updateProcess(ctx.tx, ctx.tenantId, res.id, patch);
      else await write(ctx, { change: 'update', resource: 'process', fields: Object.keys(patch) }, (tx) => updateProcess(tx, ctx.tenantId, res.id, patch));
    });
  }
}

async function applyMachines(ctx: Ctx, file: WorkspaceFile, dryRun: boolean): Promise<void> {
  for (const [i, entry] of (file.machines ?? []).entries()) {
    await atEntry('machines', i, async () => {
      const desired = given(entry, ['description', 'slots', 'kind', 'is_active']);
      const current = await findMachineByName(ctx.tx, ctx.tenantId, entry.name);
      if (!current) {
        const { row, machineKey } = await write(ctx, { change: 'create', resource: 'machine', name: entry.name }, async (tx) => {
          const made = await createMachine(tx, ctx.tenantId, { name: entry.name, ...desired });
          return { id: made.row.id, ...made };
        });
        return record(ctx, { kind: 'machine', name: entry.name, id: row.id, action: 'created', ...(dryRun ? {} : { machine_key: machineKey }) });
      }
      const patch = differences(desired, toMachineResponse(current));
      if (Object.keys(patch).length) {
        await write(ctx, { change: 'update', resource: 'machine', fields: Object.keys(patch) }, (tx) => updateMachine(tx, ctx.tenantId, current.id, patch));
      }
      return record(ctx, change('machine', entry.name, current.id, Object.keys(patch)));
    });
  }
}

async function applyQueues(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.queues ?? []).entries()) {
    await atEntry('queues', i, async () => {
      const desired = given(entry, ['description', 'max_retries', 'max_consumers', 'is_active', 'is_paused']);
      if (entry.consumer !== undefined) desired.consumer_process_id = await processId(ctx, entry.consumer, 'consumer');
      const current = await findQueueByName(ctx.tx, ctx.tenantId, entry.name);
      if (!current) {
        const row = await write(ctx, { change: 'create', resource: 'queue', name: entry.name },
          (tx) => createQueue(tx, ctx.tenantId, { name: entry.name, ...desired }));
        return record(ctx, { kind: 'queue', name: entry.name, id: row.id, action: 'created' });
      }
      const patch = differences(desired, toQueueResponse(current));
      if (Object.keys(patch).length) {
        await write(ctx, { change: 'update', resource: 'queue', fields: Object.keys(patch) }, (tx) => updateQueue(tx, ctx.tenantId, current.id, patch));
      }
      return record(ctx, change('queue', entry.name, current.id, shown(Object.keys(patch))));
    });
  }
}

async function machineId(ctx: Ctx, name: string | null): Promise<string | null> {
  if (name === null) return null;
  const id = (await findMachineByName(ctx.tx, ctx.tenantId, name))?.id;
  if (!id) throw entryError('machine', `La máquina "${name}" no existe en el fichero ni en el workspace`);
  return id;
}

/** Schedules name their process and machine; both may be defined earlier in the same file. */
async function applySchedules(ctx: Ctx, file: WorkspaceFile): Promise<void> {
  for (const [i, entry] of (file.schedules ?? []).entries()) {
    await atEntry('schedules', i, async () => {
      const desired = given(entry, ['description', 'cron', 'timezone', 'input_data', 'priority', 'is_active', 'missed_runs']);
      if (entry.process !== undefined) desired.process_id = await processId(ctx, entry.process, 'process');
      if (entry.machine !== undefined) desired.machine_id = await machineId(ctx, entry.machine);
      const current = await findScheduleByName(ctx.tx, ctx.tenantId, entry.name);
      if (!current) {
        if (entry.process === undefined) throw entryError('process', 'El proceso es obligatorio para crear una programación');
        if (entry.cron === undefined) throw entryError('cron', 'La expresión cron es obligatoria para crear una programación');
        const row = await write(ctx, { change: 'create', resource: 'schedule', name: entry.name },
          (tx) => createSchedule(tx, ctx.tenantId, { name: entry.name, ...desired }));
        return record(ctx, { kind: 'schedule', name: entry.name, id: row.id, action: 'created' });
      }
      const patch = differences(desired, toScheduleResponse(current));
      if (Object.keys(patch).length) {
        await write(ctx, { change: 'update', resource: 'schedule', fields: Object.keys(patch) }, (tx) => updateSchedule(tx, ctx.tenantId, current.id, patch));
      }
      return record(ctx, change('schedule', entry.name, current.id, shown(Object.keys(patch))));
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

async function applyAssets(ctx: Ctx, file: WorkspaceFile, opts: ApplyOptions): Promise<void> {
  const entries = file.assets ?? [];
  if (entries.length === 0) return;
  if (!opts.assetKey) throw new Error('applyWorkspace: the file has assets, so an asset encryption key is needed');
  const key = opts.assetKey();
  const env = opts.env ?? {};
  for (const [i, entry] of entries.entries()) {
    await atEntry('assets', i, async () => {
      const current = await findAssetByName(ctx.tx, key, ctx.tenantId, entry.name);
      const type = entry.type ?? current?.type;
      const values = assetValues(entry, type, env);
      const desired = given(entry, ['description', 'is_active']);
      if (!current) {
        if (!entry.type) throw entryError('type', 'El tipo es obligatorio para crear un asset (text, integer, boolean, credential)');
        const assetType = entry.type;
        const row = await write(ctx, { change: 'create', resource: 'asset', name: entry.name },
          (tx) => createAsset(tx, key, ctx.tenantId, { name: entry.name, type: assetType, ...desired, ...(values ? { values } : {}) }));
        return record(ctx, { kind: 'asset', name: entry.name, id: row.id, action: 'created' });
      }
      const patch: Record<string, unknown> = differences(desired, current as unknown as Record<string, unknown>);
      const typeChanged = entry.type !== undefined && entry.type !== current.type;
      if (typeChanged) patch.type = entry.type;
      const changedValues: Record<string, unknown> = {};
      const secrets = type === 'credential' && !typeChanged ? await readStoredCredentials(ctx.tx, key, current.id) : new Map();
      for (const [e, v] of Object.entries(values ?? {})) {
        const now = type === 'credential' && !typeChanged ? (secrets.get(e) ?? null) : current.values[e as (typeof ENVS)[number]];
        if (typeChanged || !sameJson(v, now)) changedValues[e] = v;
      }
      if (Object.keys(changedValues).length) patch.values = changedValues;
      // the audit row names the field `values`, like the API's; which environments changed is in the report only
      if (Object.keys(patch).length) {
        await write(ctx, { change: 'update', resource: 'asset', fields: Object.keys(patch) }, (tx) => updateAsset(tx, key, ctx.tenantId, current.id, patch));
      }
      const changed = [
        ...Object.keys(patch).filter((k) => k !== 'values'),
        ...Object.keys(changedValues).map((e) => `values.${e}`),
      ];
      return record(ctx, change('asset', entry.name, current.id, changed));
    });
  }
}

/** Validates the document, then applies it to the tenant in one transaction (rolled back on `dryRun`). */
export async function applyWorkspace(sql: Sql, tenantId: string, doc: unknown, opts: ApplyOptions = {}): Promise<ApplyReport> {
  const file = checkWorkspace(doc);
  const tenant = await getTenant(sql, tenantId);
  const run = async (tx: Queryable): Promise<ApplyReport> => {
    const ctx: Ctx = { tx, tenantId: tenant.id, out: [], folders: new Map(), processes: new Map() };
    await applyFolders(ctx, file);
    await applyProcesses(ctx, file);
    await applyMachines(ctx, file, !!opts.dryRun);
    await applyQueues(ctx, file);
    await applyAssets(ctx, file, opts);
    await applySchedules(ctx, file);
    const summary: Record<Action, number> = { created: 0, updated: 0, unchanged: 0 };
    for (const r of ctx.out) summary[r.action]++;
    return { tenant: { id: tenant.id, name: tenant.name }, dry_run: !!opts.dryRun, summary, resources: ctx.out };
  };
  try {
    return await sql.begin(async (tx) => {
      const report = await run(tx);
      if (opts.dryRun) throw new DryRun(report);
      return report;
    }) as ApplyReport;
  } catch (err) {
    if (err instanceof DryRun) return err.report;
    throw err;
  }
}
