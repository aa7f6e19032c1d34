import { _, str, type CodeKeywordDefinition, type KeywordCxt } from 'ajv';
import { checkDeadline } from './budget';

/**
 * ajv compares every pair of items for `uniqueItems` unless the items are declared scalars, so
 * its cost grows with the square of the array. Here each item is reduced once to a canonical text
 * (object keys sorted, so `{a,b}` equals `{b,a}` as JSON Schema says) and looked up in a Map:
 * linear in the size of the array. Reports the same `{i, j}` as ajv, so messages do not change.
 */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const obj = value as Record<string, unknown>;
  return `{${Object.keys(obj).sort().map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`;
}

/** Indices `[i, j]` (i < j) of the last item that repeats a later one, or null when all differ. */
export function findDuplicate(items: unknown[]): [number, number] | null {
  const seen = new Map<string, number>();
  for (let i = items.length - 1; i >= 0; i--) {
    // one keyword over a whole array is a long step: it watches the validation budget itself
    if ((i & 1023) === 0) checkDeadline();
    const key = canonical(items[i]);
    const j = seen.get(key);
    if (j !== undefined) return [i, j];
    seen.set(key, i);
  }
  return null;
}

export const linearUniqueItems: CodeKeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  error: {
    message: ({ params: { i, j } }) => str`must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
    params: ({ params: { i, j } }) => _`{i: ${i}, j: ${j}}`,
  },
  code(cxt: KeywordCxt) {
    const { gen, data, schema } = cxt;
    if (!schema) return;
    const find = gen.scopeValue('func', { ref: findDuplicate });
    const dup = gen.const('dup', _`${find}(${data})`);
    cxt.setParams({ i: _`${dup}[0]`, j: _`${dup}[1]` });
    cxt.fail(_`${dup} !== null`);
  },
};
