import type { AuditActor, CatalogResource } from '../audit/catalog-changes';
import type { CatalogBatch, CatalogRecords, Paged, SaveOptions, SaveTarget, SavedRecord } from '../engine-contract';
import type { Queryable, Sql } from '../db/sql';
import { ENVIRONMENTS } from '../scopes';
import { createAsset, deactivateAsset, findAssetByName, getAsset, listAssets, readStoredCredentials, toAssetResponse, updateAsset, type AssetRecord } from './assets';
import { createFolder, deactivateFolder, findFolderByName, getFolder, listFolders, toFolderResponse, updateFolder } from './folders';
import { createMachine, deactivateMachine, findMachineByName, getMachine, listMachines, rotateMachineKey, toMachineResponse, updateMachine } from './machines';
import { createProcess, deactivateProcess, findProcessByName, getProcess, listProcesses, toProcessResponse, updateProcess } from './processes';
import { createQueue, deactivateQueue, findQueueByName, getQueue, listQueues, loadQueueItemCounts, setQueuePaused, toQueueResponse, updateQueue, type QueueRow } from './queues';
import type { Page } from './paging';
import { createSchedule, deactivateSchedule, findScheduleByName, getSchedule, listSchedules, toScheduleResponse, updateSchedule } from './schedules';
import { createTrigger, deactivateTrigger, getTrigger, listTriggers, toTriggerResponse, updateTrigger } from './triggers';
import { writeCatalogEntity } from './audited-write';

/**
 * The catalogue's records (folders, processes, machines, queues, triggers, schedules, assets) as
 * one family: the commands behind the settings API's CRUD routes and `svc apply`
 * (docs/architecture.md, "The engine"), dispatched by resource kind. Every change goes through
 * writeCatalogEntity (catalog/audited-write.ts): the write, its audit row and its effects in one
 * transaction. (A batch's `completeCreate` finishes a create of the same transaction and is
 * audited with it.)
 *
 * `saveCatalogRecord` is the one "create or update a catalogue record":
 * - `'new'`: create from the body (the API's POST);
 * - `{ id }`: update with the body as given, every field sent counts as changed (the API's PATCH);
 * - `{ name }`: create the record of that name when there is none, else update only the fields
 *   whose desired value differs from the record (`svc apply`; applying twice changes nothing).
 */

/** The asset encryption key, asked for only by asset commands. */
export type AssetKeySource = () => Buffer;

interface RecordKind<Row extends { id: string }> {
  create(tx: Queryable, key: AssetKeySource, tenantId: string, body: unknown): Promise<{ row: Row; machineKey?: string }>;
  update(tx: Queryable, key: AssetKeySource, tenantId: string, id: string, body: unknown): Promise<Row>;
  get(db: Queryable, key: AssetKeySource, tenantId: string, id: string): Promise<Row>;
  list(db: Queryable, key: AssetKeySource, tenantId: string, query: Record<string, unknown>): Promise<Page<Row>>;
  deactivate(tx: Queryable, key: AssetKeySource, tenantId: string, id: string): Promise<Row>;
  /** null: the resource has no name (triggers), so it cannot be saved by name */
  findByName: ((db: Queryable, key: AssetKeySource, tenantId: string, name: string) => Promise<Row | null>) | null;
  /** the fields to compare a desired state with and what differs (field names as reported) */
  diff(db: Queryable, key: AssetKeySource, current: Row, desired: Record<string, unknown>): Promise<{ patch: Record<string, unknown>; changed: string[] }>;
}

/** Deep equality of JSON values; object key order does not matter (jsonb reorders keys). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => sameJson(v, (b as unknown[])[i]));
  const ka = Object.keys(a), kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson((a as never)[k], (b as never)[k]));
}

function differences(desired: Record<string, unknown>, current: Record<string, unknown>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(desired)) if (!sameJson(v, current[k])) patch[k] = v;
  return patch;
}

/** Compared field by field with the record as the API shows it. */
function byView<Row>(view: (row: Row) => object) {
  return async (_db: Queryable, _key: AssetKeySource, current: Row, desired: Record<string, unknown>) => {
    const patch = differences(desired, view(current) as Record<string, unknown>);
    return { patch, changed: Object.keys(patch) };
  };
}

/** A record kind whose functions take no asset key. */
function plain<Row extends { id: string }>(fns: {
  create(tx: Queryable, tenantId: string, body: unknown): Promise<Row>;
  update(tx: Queryable, tenantId: string, id: string, body: unknown): Promise<Row>;
  get(db: Queryable, tenantId: string, id: string): Promise<Row>;
  list(db: Queryable, tenantId: string, query: Record<string, unknown>): Promise<Page<Row>>;
  deactivate(tx: Queryable, tenantId: string, id: string): Promise<Row>;
  findByName: ((db: Queryable, tenantId: string, name: string) => Promise<Row | null>) | null;
  view: (row: Row) => object;
}): RecordKind<Row> {
  return {
    create: async (tx, _key, tenantId, body) => ({ row: await fns.create(tx, tenantId, body) }),
    update: (tx, _key, tenantId, id, body) => fns.update(tx, tenantId, id, body),
    get: (db, _key, tenantId, id) => fns.get(db, tenantId, id),
    list: (db, _key, tenantId, query) => fns.list(db, tenantId, query),
    deactivate: (tx, _key, tenantId, id) => fns.deactivate(tx, tenantId, id),
    findByName: fns.findByName ? (db, _key, tenantId, name) => fns.findByName!(db, tenantId, name) : null,
    diff: byView(fns.view),
  };
}

/**
 * An asset's desired state against the record: description and activation as usual, a new type,
 * and per environment the values that differ (stored credentials are decrypted to compare). When
 * the type changes every value given is written. The changes name values as `values.<env>`; the
 * patch (and so the audit row) names the field `values`, like the API's.
 */
async function assetDiff(db: Queryable, key: AssetKeySource, current: AssetRecord, desired: Record<string, unknown>) {
  const { type: newType, values, ...rest } = desired as { type?: string; values?: Record<string, unknown> };
  const patch = differences(rest, current as unknown as Record<string, unknown>);
  const typeChanged = newType !== undefined && newType !== current.type;
  if (typeChanged) patch.type = newType;
  const type = newType ?? current.type;
  const compareSecrets = type === 'credential' && !typeChanged;
  const secrets = compareSecrets ? await readStoredCredentials(db, key(), current.id) : new Map();
  const changedValues: Record<string, unknown> = {};
  for (const [e, v] of Object.entries(values ?? {})) {
    const now = compareSecrets ? (secrets.get(e) ?? null) : current.values[e as (typeof ENVIRONMENTS)[number]];
    if (typeChanged || !sameJson(v, now)) changedValues[e] = v;
  }
  if (Object.keys(changedValues).length) patch.values = changedValues;
  const changed = [...Object.keys(patch).filter((k) => k !== 'values'), ...Object.keys(changedValues).map((e) => `values.${e}`)];
  return { patch, changed };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const RECORDS: Record<CatalogResource, RecordKind<any>> = {
  folder: plain({ create: createFolder, update: updateFolder, get: getFolder, list: listFolders, deactivate: deactivateFolder, findByName: findFolderByName, view: toFolderResponse }),
  process: plain({ create: createProcess, update: updateProcess, get: getProcess, list: listProcesses, deactivate: deactivateProcess, findByName: findProcessByName, view: toProcessResponse }),
  queue: plain({ create: createQueue, update: updateQueue, get: getQueue, list: listQueues, deactivate: deactivateQueue, findByName: findQueueByName, view: toQueueResponse }),
  trigger: plain({ create: createTrigger, update: updateTrigger, get: getTrigger, list: listTriggers, deactivate: deactivateTrigger, findByName: null, view: (r) => r }),
  schedule: plain({ create: createSchedule, update: updateSchedule, get: getSchedule, list: listSchedules, deactivate: deactivateSchedule, findByName: findScheduleByName, view: toScheduleResponse }),
  machine: {
    ...plain({ create: async () => { throw new Error('unreachable'); }, update: updateMachine, get: getMachine, list: listMachines, deactivate: deactivateMachine, findByName: findMachineByName, view: toMachineResponse }),
    create: async (tx, _key, tenantId, body) => createMachine(tx, tenantId, body),
  },
  asset: {
    create: async (tx, key, tenantId, body) => ({ row: await createAsset(tx, key(), tenantId, body) }),
    update: (tx, key, tenantId, id, body) => updateAsset(tx, key(), tenantId, id, body),
    get: (db, key, tenantId, id) => getAsset(db, key(), tenantId, id),
    list: (db, key, tenantId, query) => listAssets(db, key(), tenantId, query),
    deactivate: (tx, key, tenantId, id) => deactivateAsset(tx, key(), tenantId, id),
    findByName: (db, key, tenantId, name) => findAssetByName(db, key(), tenantId, name),
    diff: assetDiff,
  },
};

/**
 * Rows as the public API answers them: the one place a catalogue row becomes a record (a queue
 * with its item counts, read for all the rows in one query).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Presenter<R extends CatalogResource> = (db: Queryable, rows: any[]) => Promise<Array<CatalogRecords[R]>>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const each = <R extends CatalogResource>(view: (row: any) => CatalogRecords[R]): Presenter<R> => async (_db, rows) => rows.map(view);
const PRESENTERS: { [R in CatalogResource]: Presenter<R> } = {
  folder: each(toFolderResponse),
  process: each(toProcessResponse),
  machine: each(toMachineResponse),
  trigger: each(toTriggerResponse),
  schedule: each(toScheduleResponse),
  asset: each(toAssetResponse),
  queue: async (db, rows: QueueRow[]) => {
    const counts = await loadQueueItemCounts(db, rows.map((r) => r.id));
    return rows.map((r) => toQueueResponse(r, counts.get(r.id)));
  },
};

function present<R extends CatalogResource>(db: Queryable, resource: R, rows: Array<{ id: string }>): Promise<Array<CatalogRecords[R]>> {
  const presenter: Presenter<R> = PRESENTERS[resource];
  return presenter(db, rows);
}

async function presentOne<R extends CatalogResource>(db: Queryable, resource: R, row: { id: string }): Promise<CatalogRecords[R]> {
  return (await present(db, resource, [row]))[0]!;
}

/** A save's row and what it did, before the row is presented. */
interface SavedRow<Row> {
  row: Row;
  action: SavedRecord<CatalogResource>['action'];
  changed: string[];
  machineKey?: string;
}

/** Creates or updates one catalogue record of `tenantId` (see the top of this file for the targets). */
export async function saveCatalogRecord<R extends CatalogResource>(
  db: Queryable, key: AssetKeySource, actor: AuditActor, tenantId: string, resource: R, target: SaveTarget, body: Record<string, unknown>, options: SaveOptions = {},
): Promise<SavedRecord<R>> {
  const { row, ...saved } = await saveRow(db, key, actor, tenantId, resource, target, body, options);
  return { record: await presentOne(db, resource, row), ...saved };
}

async function saveRow<Row extends { id: string }>(
  db: Queryable,
  key: AssetKeySource,
  actor: AuditActor,
  tenantId: string,
  resource: CatalogResource,
  target: SaveTarget,
  body: Record<string, unknown>,
  options: SaveOptions = {},
): Promise<SavedRow<Row>> {
  const kind = RECORDS[resource] as RecordKind<Row>;
  const create = async (input: Record<string, unknown>): Promise<SavedRow<Row>> => {
    const name = options.auditName ?? (input as { name: string }).name;
    let machineKey: string | undefined;
    // the row itself goes through the write: its effects are worked out from it
    const { row } = await writeCatalogEntity(db, actor, tenantId, { change: 'create', resource, name }, async (tx) => {
      const made = await kind.create(tx, key, tenantId, input);
      machineKey = made.machineKey;
      return made.row;
    });
    return { row, action: 'created', changed: [], ...(machineKey !== undefined ? { machineKey } : {}) };
  };
  const update = async (id: string, patch: Record<string, unknown>, changed: string[]): Promise<SavedRow<Row>> => {
    const { row } = await writeCatalogEntity(db, actor, tenantId, { change: 'update', resource, fields: Object.keys(patch) },
      (tx) => kind.update(tx, key, tenantId, id, patch));
    return { row, action: 'updated', changed };
  };

  if (target === 'new') return create(body);
  if ('id' in target) return update(target.id, body, Object.keys(body));
  if (!kind.findByName) throw new Error(`saveCatalogRecord: a ${resource} has no name to be found by`);
  const current = await kind.findByName(db, key, tenantId, target.name);
  if (!current) return create({ name: target.name, ...body });
  const { patch, changed } = await kind.diff(db, key, current, body);
  if (Object.keys(patch).length === 0) return { row: current, action: 'unchanged', changed: [] };
  return update(current.id, patch, changed);
}

export async function getCatalogRecord<R extends CatalogResource>(db: Queryable, key: AssetKeySource, tenantId: string, resource: R, id: string): Promise<CatalogRecords[R]> {
  return presentOne(db, resource, await RECORDS[resource].get(db, key, tenantId, id));
}

export async function findCatalogRecordByName<R extends CatalogResource>(db: Queryable, key: AssetKeySource, tenantId: string, resource: R, name: string): Promise<CatalogRecords[R] | null> {
  const find = RECORDS[resource].findByName;
  if (!find) throw new Error(`findCatalogRecordByName: a ${resource} has no name`);
  const row = await find(db, key, tenantId, name);
  return row ? presentOne(db, resource, row) : null;
}

export async function listCatalogRecords<R extends CatalogResource>(
  db: Queryable, key: AssetKeySource, tenantId: string, resource: R, query: Record<string, unknown>,
): Promise<Paged<CatalogRecords[R]>> {
  const { rows, meta } = await RECORDS[resource].list(db, key, tenantId, query);
  return { data: await present(db, resource, rows), meta };
}

/** A page of rows one resource's own list read (the public process and machine lists), presented. */
export async function presentPage<R extends CatalogResource>(db: Queryable, resource: R, page: Page<{ id: string }>): Promise<Paged<CatalogRecords[R]>> {
  return { data: await present(db, resource, page.rows), meta: page.meta };
}

export async function deactivateCatalogRecord<R extends CatalogResource>(
  db: Queryable, key: AssetKeySource, actor: AuditActor, tenantId: string, resource: R, id: string,
): Promise<CatalogRecords[R]> {
  const kind = RECORDS[resource];
  const { row } = await writeCatalogEntity(db, actor, tenantId, { change: 'deactivate', resource }, (tx) => kind.deactivate(tx, key, tenantId, id));
  return presentOne(db, resource, row);
}

/** A machine's new key (audited as `rotate_machine_key`); the key is shown this once. */
export async function rotateMachineKeyAudited(db: Queryable, actor: AuditActor, tenantId: string, id: string): Promise<{ record: CatalogRecords['machine']; machineKey: string }> {
  let machineKey = '';
  const { row } = await writeCatalogEntity(db, actor, tenantId, { change: 'rotate-key', resource: 'machine' }, async (tx) => {
    const made = await rotateMachineKey(tx, tenantId, id);
    machineKey = made.machineKey;
    return made.row;
  });
  return { record: await presentOne(db, 'machine', row), machineKey };
}

/** Pauses or resumes a queue (audited as `pause_queue` / `resume_queue`; a resume may start consumers). */
export async function pauseQueue(db: Queryable, actor: AuditActor, tenantId: string, id: string, paused: boolean): Promise<CatalogRecords['queue']> {
  const { row } = await writeCatalogEntity(db, actor, tenantId, { change: paused ? 'pause' : 'resume', resource: 'queue' },
    (tx) => setQueuePaused(tx, tenantId, id, paused));
  return presentOne(db, 'queue', row);
}

class RolledBack<T> extends Error {
  constructor(readonly result: T) {
    super('rolled back');
  }
}

/**
 * Runs `work` in one transaction: each save under a savepoint of it (a completed create writes
 * with its create), so a refused entry leaves
 * the rest to go on or fail as the caller decides; `dryRun` rolls everything back and still
 * answers `work`'s result. The effects recorded are published by the relay once it commits.
 */
export async function inCatalogBatch<T>(
  sql: Sql, key: AssetKeySource, actor: AuditActor, tenantId: string, work: (batch: CatalogBatch) => Promise<T>, options: { dryRun?: boolean } = {},
): Promise<T> {
  try {
    return (await sql.begin(async (tx) => {
      const batch: CatalogBatch = {
        save: (resource, target, body, opts) => saveCatalogRecord(tx, key, actor, tenantId, resource, target, body, opts),
        findByName: (resource, name) => findCatalogRecordByName(tx, key, tenantId, resource, name),
        completeCreate: async (resource, id, body) => {
          await RECORDS[resource].update(tx, key, tenantId, id, body);
        },
      };
      const result = await work(batch);
      if (options.dryRun) throw new RolledBack(result);
      return result;
    })) as T;
  } catch (err) {
    if (err instanceof RolledBack) return err.result as T;
    throw err;
  }
}
