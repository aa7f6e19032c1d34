import { GUARD_KEYWORD } from './budget';
import { patternProblem } from './regexp';
import { es } from '../../messages/server-messages';

/**
 * What an admin-supplied JSON Schema may contain, checked before it is stored (and again before a
 * schema stored earlier is first used). The numbers leave real schemas plenty of room and keep the
 * worst case compile within tens of milliseconds; docs/decisions/admin-schemas.md has the
 * measurements.
 */
export const MAX_SCHEMA_BYTES = 65_536;
export const MAX_SCHEMA_DEPTH = 32;
export const MAX_SUBSCHEMAS = 500;
export const MAX_PATTERNS = 100;

export type SchemaPath = Array<string | number>;

export interface SchemaProblem {
  /** Where, inside the schema ([] = the schema as a whole). */
  path: SchemaPath;
  /** Spanish, names the limit or the reason. */
  message: string;
  type: 'schema_limit' | 'schema_pattern' | 'schema_ref' | 'json_schema';
}

/**
 * Where draft-07 (as ajv runs it, with `$defs`) keeps subschemas. Only these places are ever
 * compiled, so only these are counted, guarded, and may be the target of a `$ref`.
 */
const ONE_SCHEMA = new Set(['additionalItems', 'additionalProperties', 'contains', 'propertyNames', 'not', 'if', 'then', 'else']);
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf']);
const SCHEMA_MAP = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependencies']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSchema = (v: unknown): boolean => typeof v === 'boolean' || isObject(v);

/** Nesting depth of any JSON value, without recursion (a stored schema may be absurdly deep). */
function exceedsDepth(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Calls `visit` for every subschema (root first) with its path; children only of object schemas. */
function forEachSubschema(schema: unknown, visit: (node: unknown, path: SchemaPath) => void, path: SchemaPath = []): void {
  visit(schema, path);
  if (!isObject(schema)) return;
  for (const [key, value] of Object.entries(schema)) {
    if (ONE_SCHEMA.has(key) && isSchema(value)) forEachSubschema(value, visit, [...path, key]);
    else if (key === 'items') {
      if (Array.isArray(value)) value.forEach((v, i) => isSchema(v) && forEachSubschema(v, visit, [...path, key, i]));
      else if (isSchema(value)) forEachSubschema(value, visit, [...path, key]);
    } else if (SCHEMA_LIST.has(key) && Array.isArray(value)) {
      value.forEach((v, i) => isSchema(v) && forEachSubschema(v, visit, [...path, key, i]));
    } else if (SCHEMA_MAP.has(key) && isObject(value)) {
      for (const [name, v] of Object.entries(value)) if (isSchema(v)) forEachSubschema(v, visit, [...path, key, name]);
    }
  }
}

const pointerOf = (path: SchemaPath) => path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** The subschema path a local `$ref` names, or null when it is not of the form `#` / `#/…`. */
function refTarget(ref: string): string | null {
  if (ref === '#') return '';
  if (!ref.startsWith('#/')) return null;
  try {
    return decodeURIComponent(ref.slice(2));
  } catch {
    return null;
  }
}

function resolves(schema: unknown, pointer: string): boolean {
  let node: unknown = schema;
  for (const raw of pointer === '' ? [] : pointer.split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, seg)) return false;
    node = (node as Record<string, unknown>)[seg];
  }
  return true;
}

const tooBig = (path: SchemaPath, what: string, actual: number, max: number): SchemaProblem => ({
  path, type: 'schema_limit', message: es.validation.schemaOverLimit(what, actual, max),
});

/**
 * The first reason `schema` may not be used, or null. Cheap: linear in the schema's size and
 * without recursion until the depth is known to be small.
 */
export function schemaProblem(schema: object): SchemaProblem | null {
  if (exceedsDepth(schema, MAX_SCHEMA_DEPTH)) {
    return { path: [], type: 'schema_limit', message: es.validation.schemaTooDeep(MAX_SCHEMA_DEPTH) };
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_SCHEMA_BYTES) return tooBig([], es.validation.limitBytes, bytes, MAX_SCHEMA_BYTES);

  let problem: SchemaProblem | null = null;
  let subschemas = 0;
  let patterns = 0;
  const positions = new Set<string>();
  const refs: Array<{ ref: string; path: SchemaPath }> = [];
  const checkPattern = (pattern: string, path: SchemaPath) => {
    patterns++;
    const reason = patternProblem(pattern);
    if (reason) problem ??= { path, type: 'schema_pattern', message: es.validation.patternNotSupported(reason) };
  };
  forEachSubschema(schema, (node, path) => {
    subschemas++;
    positions.add(pointerOf(path));
    if (problem || !isObject(node)) return;
    if (path.length > 0 && '$id' in node) {
      problem = { path: [...path, '$id'], type: 'schema_ref', message: es.validation.idOnlyAtRoot };
    }
    if (typeof node.pattern === 'string') checkPattern(node.pattern, [...path, 'pattern']);
    if (isObject(node.patternProperties)) {
      for (const key of Object.keys(node.patternProperties)) checkPattern(key, [...path, 'patternProperties', key]);
    }
    if (typeof node.$ref === 'string') refs.push({ ref: node.$ref, path: [...path, '$ref'] });
  });
  if (problem) return problem;
  if (subschemas > MAX_SUBSCHEMAS) return tooBig([], es.validation.limitSubschemas, subschemas, MAX_SUBSCHEMAS);
  if (patterns > MAX_PATTERNS) return tooBig([], es.validation.limitPatterns, patterns, MAX_PATTERNS);
  for (const { ref, path } of refs) {
    const target = refTarget(ref);
    // a reference that resolves nowhere is left to ajv, which names it
    if (target !== null && (positions.has(target) || !resolves(schema, target))) continue;
    return {
      path, type: 'schema_ref',
      message: es.validation.refNotSupported,
    };
  }
  return null;
}

/**
 * A copy of `schema` (already free of problems) with GUARD_KEYWORD on every subschema, which is
 * what gets compiled; the stored schema is never changed.
 */
export function guardedCopy(schema: object): object {
  const copy = structuredClone(schema) as object;
  forEachSubschema(copy, (node) => {
    if (isObject(node)) node[GUARD_KEYWORD] = true;
  });
  return copy;
}
