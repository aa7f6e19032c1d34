import { Type } from '@sinclair/typebox';
import { ValidationError } from '../errors';
import { es } from '../messages/server-messages';
import { jsonInputIssue, jsonTextMayHoldUnstorable } from './json-input';

/** The longest JSON text a containment filter may be: a filter names a few fields, not a document. */
export const CONTAINMENT_FILTER_MAX_LENGTH = 2048;

/** A list's query parameter holding a containment filter on a JSON column (`?data=`, `?input_data=`). */
export function ContainmentFilterQuery(column: string) {
  return Type.Optional(Type.String({
    minLength: 2,
    maxLength: CONTAINMENT_FILTER_MAX_LENGTH,
    description: `Only rows whose ${column} contains this JSON object (JSON containment, like Postgres \`@>\`), URL-encoded: ` +
      `\`?${column}={"customer":"ACME"}\` matches ${column} \`{"customer":"ACME","amount":5}\`; nested objects and arrays match by containment too. ` +
      `Up to ${CONTAINMENT_FILTER_MAX_LENGTH} characters; text that is not a JSON object → 422.`,
  }));
}

/**
 * The object a list's `?{field}=` filter holds: the rows' JSON must contain it (Postgres `@>`,
 * served by a `jsonb_path_ops` GIN index). Undefined when the parameter is absent; a 422 on
 * `['query', field]` for text that is not a JSON object or that carries what no request may
 * (jsonInputIssue: U+0000, lone surrogates, nesting past the bound, `__proto__`).
 */
export function parseContainmentFilter(text: string | undefined, field: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ValidationError.single(['query', field], es.validation.containmentFilter, 'json_invalid');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw ValidationError.single(['query', field], es.validation.containmentFilter, 'object_type');
  }
  const issue = jsonInputIssue(value, ['query', field], { strings: jsonTextMayHoldUnstorable(text) });
  if (issue) throw new ValidationError([issue]);
  return value as Record<string, unknown>;
}
