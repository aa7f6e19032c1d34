import { asStoredJsonb, compareJsonbKeys } from '@svc/core/internals';
import { databaseSuite } from '@svc/testing';

/**
 * `asStoredJsonb` stands in for a round trip through a jsonb column (the hot insert answers with
 * it instead of reading the payload back), so it is checked against Postgres itself.
 */
const db = databaseSuite();

async function throughPostgres(texts: string[]): Promise<string[]> {
  const rows = await db.sql<{ t: string }[]>`
    select (e.value #>> '{}')::jsonb::text as t
    from jsonb_array_elements(${JSON.stringify(texts)}::text::jsonb) with ordinality as e(value, n)
    order by e.n`;
  return rows.map((r) => JSON.stringify(JSON.parse(r.t)));
}

const ours = (text: string) => JSON.stringify(asStoredJsonb(JSON.parse(text)));

/** A small deterministic generator (mulberry32): the same cases on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ASCII, Latin, a character past the surrogates (U+FFFD), CJK, an emoji (a surrogate pair), digits
const ALPHABET = ['a', 'b', 'Z', '_', '0', '7', 'é', 'ñ', '\ufffd', '中', '😀', '\ud7ff', '\ue000'];

function randomValue(next: () => number, depth: number): unknown {
  const r = next();
  if (depth > 2 || r < 0.3) return [1, 'x', null, true, 1.5, -0, 12345678901234567890][Math.floor(next() * 7)];
  if (r < 0.45) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const out: Record<string, unknown> = {};
  const n = 1 + Math.floor(next() * 7);
  for (let i = 0; i < n; i++) {
    const len = Math.floor(next() * 4);
    const key = Array.from({ length: len }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]).join('');
    out[key] = randomValue(next, depth + 1);
  }
  return out;
}

describe('asStoredJsonb', () => {
  it('orders keys as jsonb does: by UTF-8 length, then by bytes', () => {
    const keys = ['bb', 'a', '😀', 'é', 'z', '\ue000', 'aa', '中'];
    expect([...keys].sort(compareJsonbKeys)).toEqual(['a', 'z', 'aa', 'bb', 'é', '中', '\ue000', '😀']);
  });

  it('gives what Postgres gives back for hand-picked payloads: nesting, integer-like keys, unicode, __proto__', async () => {
    const texts = [
      '{"zeta":1,"alpha":{"b":[{"yy":1,"x":2}],"a":null},"mid":"é"}',
      '{"10":"ten","2":"two","-1":"minus","01":"zero-one","b":1,"a":2}',
      '{"😀":1,"\ufffd":2,"中文":3,"é":4,"e":5}',
      '{"__proto__":{"polluted":true},"a":1}',
      '{"a":1,"a":2,"b":{"c":1,"c":[3]}}',
      '{"n":[1.50,1e2,-0,12345678901234567890,0.1]}',
      '[{"b":1,"a":2},[],{}]',
      '{}',
    ];
    expect(texts.map(ours)).toEqual(await throughPostgres(texts));
  });

  it('gives what Postgres gives back for 300 generated payloads', async () => {
    const next = random(20261121);
    const texts = Array.from({ length: 300 }, () => JSON.stringify(randomValue(next, 0)));
    expect(texts.map(ours)).toEqual(await throughPostgres(texts));
  });

  it('leaves the caller\'s object as it was', () => {
    const input = { b: { d: 1, c: 2 }, a: [{ z: 1, y: 2 }] };
    const before = JSON.stringify(input);
    asStoredJsonb(input);
    expect(JSON.stringify(input)).toBe(before);
  });
});
