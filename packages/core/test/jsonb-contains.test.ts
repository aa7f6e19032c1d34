import { jsonbContains, parseIncludeArchived } from '@svc/core/internals';
import { databaseSuite } from '@svc/testing';

/**
 * The containment an export applies to archived rows (export/jsonb-contains.ts) must agree with
 * Postgres's `@>`, which filters the live rows: each case is checked by hand, then asked of
 * Postgres itself.
 */
const db = databaseSuite();

// [document, filter, contains?]
const CASES: Array<[unknown, unknown, boolean]> = [
  [{ customer: 'ACME', n: 5 }, { customer: 'ACME' }, true],
  [{ customer: 'ACME', n: 5 }, {}, true],
  [{ customer: 'ACME' }, { customer: 'acme' }, false],
  [{ customer: 'ACME' }, { client: 'ACME' }, false],
  [{ n: 1 }, { n: 1.0 }, true],
  [{ n: 1 }, { n: '1' }, false],
  [{ n: 0 }, { n: false }, false],
  [{ n: null }, { n: null }, true],
  [{}, { n: null }, false],
  [{ a: { b: { c: 1, d: 2 } } }, { a: { b: { c: 1 } } }, true],
  [{ a: { b: { c: 1 } } }, { a: { b: { c: 1, d: 2 } } }, false],
  [{ a: [1, 2, 3] }, { a: [3, 1] }, true],
  [{ a: [1, 2, 3] }, { a: [1, 1, 1] }, true],
  [{ a: [1, 2, 3] }, { a: [] }, true],
  [{ a: [1, 2] }, { a: [4] }, false],
  [{ a: [1, 2] }, { a: 1 }, false],
  [{ a: 1 }, { a: [1] }, false],
  [{ a: [[1, 2], [3]] }, { a: [[2]] }, true],
  [{ a: [[1, 2], [3]] }, { a: [2] }, false],
  [{ a: [{ x: 1, y: 2 }, { x: 3 }] }, { a: [{ x: 3 }, { y: 2 }] }, true],
  [{ a: [{ x: 1 }] }, { a: [{ x: 1, y: 2 }] }, false],
  [{ a: [{ x: 1 }] }, { a: [[]] }, false],
  [{ a: {} }, { a: [] }, false],
  [{ a: [] }, { a: {} }, false],
  [{ s: 'ñandú 🦤' }, { s: 'ñandú 🦤' }, true],
  [[1, 2], 1, true],
  [[1, 2], 3, false],
  [[1, [2]], [[2]], true],
  [{ a: [1, 2] }, { a: 'x' }, false],
  [null, { a: 1 }, false],
  [null, {}, false],
  ['x', 'x', true],
];

describe('jsonbContains', () => {
  it.each(CASES)('%j @> %j is %s', (doc, filter, expected) => {
    expect(jsonbContains(doc, filter)).toBe(expected);
  });

  it('agrees with Postgres\'s @> on every case', async () => {
    for (const [doc, filter] of CASES) {
      const [row] = await db.sql<Array<{ contains: boolean }>>`
        select (${JSON.stringify(doc)}::text::jsonb @> ${JSON.stringify(filter)}::text::jsonb) as contains`;
      expect({ doc, filter, contains: jsonbContains(doc, filter) }).toEqual({ doc, filter, contains: row!.contains });
    }
  });

  it('ignores keys an object has beyond the filter\'s, and never reads inherited properties', () => {
    expect(jsonbContains({ a: 1 }, JSON.parse('{"toString":{}}'))).toBe(false);
    expect(jsonbContains(JSON.parse('{"__proto__":{"x":1},"a":1}'), JSON.parse('{"__proto__":{"x":1}}'))).toBe(true);
  });
});

describe('parseIncludeArchived', () => {
  it('takes only the text true or false; absent is false', () => {
    expect(parseIncludeArchived(undefined)).toBe(false);
    expect(parseIncludeArchived('false')).toBe(false);
    expect(parseIncludeArchived('true')).toBe(true);
  });

  it('refuses anything else with a 422 on query → include_archived, in Spanish', () => {
    for (const text of ['', 'TRUE', 'True', '1', '0', 'yes', 'true ', ' true', 'true\u0000', 'null', 'x'.repeat(10_000)]) {
      expect(() => parseIncludeArchived(text)).toThrow(expect.objectContaining({
        status: 422, code: 'VALIDATION_ERROR', details: [{ field: 'query → include_archived', message: 'debe ser true o false' }],
      }));
    }
  });
});
