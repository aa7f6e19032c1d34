import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import localizeEs from 'ajv-i18n/localize/es';
import type { Static, TSchema } from '@sinclair/typebox';
import { ValidationError, type FieldIssue } from '../errors';
import { es } from '../messages/server-messages';

/**
 * One ajv setup for every schema in the system. Bodies are validated as sent (no coercion);
 * query strings and path parameters arrive as text, so they are coerced to the schema's types.
 */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: coerce, strict: false, messages: true });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);
const cache = new WeakMap<object, { body?: ValidateFunction; text?: ValidateFunction }>();

export type Location = 'body' | 'query' | 'path';

function compiled(schema: TSchema, where: Location): ValidateFunction {
  const kind = where === 'body' ? 'body' : 'text';
  let entry = cache.get(schema);
  if (!entry) cache.set(schema, (entry = {}));
  return (entry[kind] ??= (kind === 'body' ? bodyAjv : textAjv).compile(schema));
}

function pointerToPath(pointer: string): Array<string | number> {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

export function ajvErrorsToIssues(errors: ErrorObject[], where: Location): FieldIssue[] {
  localizeEs(errors);
  const seen = new Set<string>();
  const issues: FieldIssue[] = [];
  for (const e of errors) {
    const loc: Array<string | number> = [where, ...pointerToPath(e.instancePath)];
    if (e.keyword === 'required') loc.push((e.params as { missingProperty: string }).missingProperty);
    if (e.keyword === 'additionalProperties') loc.push((e.params as { additionalProperty: string }).additionalProperty);
    const field = loc.join(' → ');
    const message = e.message ?? es.validation.invalidValue;
    const key = `${field}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ field, message, loc, type: e.keyword });
  }
  return issues;
}

/** Validates (and fills defaults into) `data`, or throws a 422 ValidationError. */
export function validate<T extends TSchema>(schema: T, data: unknown, where: Location = 'body'): Static<T> {
  const fn = compiled(schema, where);
  if (!fn(data)) throw new ValidationError(ajvErrorsToIssues(fn.errors ?? [], where));
  return data as Static<T>;
}
