import Ajv, { type ValidateFunction } from 'ajv';
import { guardKeyword } from './budget';
import { addCappedFormats } from './formats';
import { guardedCopy, schemaProblem, type SchemaProblem } from './limits';
import { re2Engine } from './regexp';
import { linearUniqueItems } from './unique-items';
import { es } from '../../messages/server-messages';

/**
 * The one ajv that admin-supplied schemas (a process's input_schema) are compiled with: patterns
 * on RE2, formats cut off at their length, linear `uniqueItems`, and the budget guard. It registers
 * nothing under `$id`, so the same schema on many processes never clashes. Its code is not
 * optimized: that pass made compiling a schema of many branches much slower
 * (docs/decisions/admin-schemas.md).
 */
const userAjv = new Ajv({ allErrors: true, strict: false, addUsedSchema: false, messages: true, code: { regExp: re2Engine, optimize: false } });
addCappedFormats(userAjv);
userAjv.removeKeyword('uniqueItems');
userAjv.addKeyword(linearUniqueItems);
userAjv.addKeyword(guardKeyword);

export type UserSchemaVerdict = { ok: true; validate: ValidateFunction; compiled: object } | { ok: false; problem: SchemaProblem };

/** Checks the limits, then compiles a guarded copy; never throws. */
export function compileUserSchema(schema: unknown): UserSchemaVerdict {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { ok: false, problem: { path: [], type: 'json_schema', message: es.validation.schemaNotAnObject } };
  }
  const problem = schemaProblem(schema);
  if (problem) return { ok: false, problem };
  const compiled = guardedCopy(schema);
  try {
    return { ok: true, validate: userAjv.compile(compiled), compiled };
  } catch (err) {
    userAjv.removeSchema(compiled);
    return { ok: false, problem: { path: [], type: 'json_schema', message: es.validation.schemaInvalid((err as Error).message) } };
  }
}

/** Forgets a compiled schema (ajv keeps every compiled schema until told otherwise). */
export function releaseUserSchema(verdict: UserSchemaVerdict): void {
  if (verdict.ok) userAjv.removeSchema(verdict.compiled);
}

/** Why `schema` cannot be saved as an input_schema, or null. Compiles it exactly as triggers will. */
export function userSchemaProblem(schema: unknown): SchemaProblem | null {
  const verdict = compileUserSchema(schema);
  releaseUserSchema(verdict);
  return verdict.ok ? null : verdict.problem;
}

/**
 * Compiled verdicts by the schema's hash (Postgres computes it, so a request never serializes the
 * schema), least recently used first. Bounded by the count and by the schemas' total size, so a
 * workspace full of large schemas cannot grow the heap without limit.
 */
const CACHE_MAX_ENTRIES = 1_000;
const CACHE_MAX_BYTES = 32 * 1024 * 1024;
const cache = new Map<string, { verdict: UserSchemaVerdict; bytes: number }>();
let cachedBytes = 0;

export function cachedUserSchema(hash: string, schema: unknown, sizeBytes: number): UserSchemaVerdict {
  const hit = cache.get(hash);
  if (hit) {
    cache.delete(hash);
    cache.set(hash, hit);
    return hit.verdict;
  }
  const verdict = compileUserSchema(schema);
  // a refused schema keeps only its verdict
  const bytes = verdict.ok ? sizeBytes : 0;
  cache.set(hash, { verdict, bytes });
  cachedBytes += bytes;
  for (const [key, entry] of cache) {
    if (cache.size <= CACHE_MAX_ENTRIES && cachedBytes <= CACHE_MAX_BYTES) break;
    cache.delete(key);
    cachedBytes -= entry.bytes;
    releaseUserSchema(entry.verdict);
  }
  return verdict;
}
