import type { ItemOf } from '@svc/client';
import { parseJsonObject, type JsonObjectParse } from './admin';

/**
 * Pure helpers of the catalogue pages (processes, machines, queues, assets, folders): no DOM, no
 * texts, so jest tests them as they are.
 */

export type SchemaParse = JsonObjectParse;

/**
 * A process's input_schema as typed: empty is null (no schema); otherwise a JSON object, read as
 * any JSON object field of the admin pages is. Whether it is a valid JSON Schema within the limits
 * is the API's answer (its 422), not the console's: the API's validator is the one webhooks meet,
 * and a copy in the bundle could disagree with it.
 */
export const parseSchemaText: (text: string) => SchemaParse = parseJsonObject;

/**
 * A sample input for a schema, to show the admin the shape callers will send: a property's
 * `default`, `const`, first `examples` or first `enum` value when it has one, else an empty value
 * of its type. Local `$ref`s (`#/…`) are followed up to a small depth, so a recursive schema ends.
 */
export function sampleFromSchema(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (depth > 8 || typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const s = schema as Record<string, unknown>;
  if ('default' in s) return s.default;
  if ('const' in s) return s.const;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (typeof s.$ref === 'string' && s.$ref.startsWith('#')) {
    return sampleFromSchema(resolvePointer(root, s.$ref.slice(1)), root, depth + 1);
  }
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const list = s[key];
    if (Array.isArray(list) && list.length > 0) {
      if (key !== 'allOf') return sampleFromSchema(list[0], root, depth + 1);
      const parts = list.map((x) => sampleFromSchema(x, root, depth + 1));
      return parts.every((p) => typeof p === 'object' && p !== null && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
    }
  }
  const type = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') ?? s.type[0] : s.type;
  if (type === 'object' || (type === undefined && typeof s.properties === 'object')) {
    const out: Record<string, unknown> = {};
    for (const [name, sub] of Object.entries((s.properties as Record<string, unknown> | undefined) ?? {})) {
      out[name] = sampleFromSchema(sub, root, depth + 1);
    }
    return out;
  }
  if (type === 'array') {
    const min = typeof s.minItems === 'number' ? Math.min(s.minItems, 3) : 1;
    return Array.from({ length: min }, () => sampleFromSchema(s.items, root, depth + 1));
  }
  if (type === 'string') return '';
  if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 0;
  if (type === 'boolean') return false;
  return null;
}

function resolvePointer(root: unknown, pointer: string): unknown {
  let at: unknown = root;
  for (const raw of pointer.split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** Tags or required assets typed separated by commas or new lines: trimmed, without repeats. */
export function parseList(text: string): string[] {
  return [...new Set(text.split(/[,\n]+/).map((s) => s.trim()).filter((s) => s.length > 0))];
}

/** A whole number as typed, else the text as it is: the API's message says what it needs. */
export function numberOrText(v: string): number | string {
  return /^-?\d+$/.test(v.trim()) ? Number(v) : v;
}

/** A number with decimals (a decimal comma too, as Spanish writes it); anything else goes as typed for the API to refuse. */
export function decimalOrText(v: string): number | string {
  const s = v.trim().replace(',', '.');
  return /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : v;
}

export type AssetType = ItemOf<'listWorkspaceAssets'>['type'];
/** One environment's value in the asset form. */
export interface EnvInput { text: string; username: string; password: string; remove: boolean }

/**
 * One environment's value of an asset form as the API takes it, or `undefined` when nothing is to
 * be sent (left empty: on create, no value; on update, the stored one stays). `remove` sends null,
 * which deletes it. A credential goes whole or not at all: its password is write-only, so an edit
 * that changes the user name types the password again.
 */
export function assetEnvValue(type: AssetType, v: EnvInput): unknown {
  if (v.remove) return null;
  if (type === 'credential') {
    if (!v.username && !v.password) return undefined;
    return { username: v.username, password: v.password };
  }
  if (!v.text.trim()) return undefined;
  if (type === 'integer') return numberOrText(v.text);
  if (type === 'boolean') return v.text === 'true' ? true : v.text === 'false' ? false : v.text;
  return v.text;
}

/** A record's name in a list read, else the start of its id (the list is not read yet, or not the reader's). */
export function nameIn(list: ReadonlyArray<{ id: string; name: string }> | undefined, id: string): string {
  return list?.find((x) => x.id === id)?.name ?? `${id.slice(0, 8)}…`;
}

/* What depends on a record: read from the lists the console already has, active records only. */

interface Ref { id: string; name?: string; is_active: boolean }
export interface DependantLists {
  processes?: Array<Ref & { name: string; folder_id: string | null; on_success_trigger_process_id: string | null; required_assets: string[] }>;
  queues?: Array<Ref & { name: string; consumer_process_id: string | null }>;
  triggers?: Array<Ref & { queue_id: string; process_id: string; machine_id: string | null }>;
  schedules?: Array<Ref & { name: string; process_id: string; machine_id: string | null }>;
}

export type DependantKind = 'processes' | 'queues' | 'triggers' | 'schedules';
export interface DependantGroup { kind: DependantKind; names: string[] }

/**
 * The active records that name `record` (a process, machine, queue, folder or asset), by kind,
 * only the kinds that have some. A trigger has no name: it is named by its queue (by its process
 * on a queue's own list).
 */
export function dependantsOf(
  resource: 'process' | 'machine' | 'queue' | 'folder' | 'asset',
  record: { id: string; name: string },
  lists: DependantLists,
): DependantGroup[] {
  const queueName = (id: string) => nameIn(lists.queues, id);
  const active = <T extends Ref>(list: T[] | undefined, match: (x: T) => boolean) => (list ?? []).filter((x) => x.is_active && x.id !== record.id && match(x));
  const groups: DependantGroup[] = [];
  const add = (kind: DependantKind, names: string[]) => { if (names.length > 0) groups.push({ kind, names }); };
  const id = record.id;
  switch (resource) {
    case 'process':
      add('queues', active(lists.queues, (q) => q.consumer_process_id === id).map((q) => q.name));
      add('triggers', active(lists.triggers, (tr) => tr.process_id === id).map((tr) => queueName(tr.queue_id)));
      add('schedules', active(lists.schedules, (s) => s.process_id === id).map((s) => s.name));
      add('processes', active(lists.processes, (p) => p.on_success_trigger_process_id === id).map((p) => p.name));
      break;
    case 'machine':
      add('triggers', active(lists.triggers, (tr) => tr.machine_id === id).map((tr) => queueName(tr.queue_id)));
      add('schedules', active(lists.schedules, (s) => s.machine_id === id).map((s) => s.name));
      break;
    case 'queue':
      // the queue's triggers are told apart by the process they start
      add('triggers', active(lists.triggers, (tr) => tr.queue_id === id).map((tr) => nameIn(lists.processes, tr.process_id)));
      break;
    case 'folder':
      add('processes', active(lists.processes, (p) => p.folder_id === id).map((p) => p.name));
      break;
    case 'asset':
      add('processes', active(lists.processes, (p) => p.required_assets.includes(record.name)).map((p) => p.name));
      break;
  }
  return groups;
}
