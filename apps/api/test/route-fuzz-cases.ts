import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { RouteSpec } from '../src/http/route';

/**
 * Hostile requests derived from a route declaration alone (method, path, params / query / body
 * schemas), so a route added later is fuzzed without editing anything here. No I/O: the test
 * supplies the ids and names of real resources (`Pool`) and sends the cases.
 */

type Json = Record<string, any>;
type Path = Array<string | number>;

/** Ids and names of real resources: the caller's workspace (`own`) and another one (`other`). */
export interface Pool {
  own: Array<{ kind: string; id: string; name?: string }>;
  other: Array<{ kind: string; id: string; name?: string }>;
}

export interface FuzzCase {
  label: string;
  /** percent-encoded path and query, under /api/v1 */
  path: string;
  /** raw body, sent as is */
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** 'none': no credential; 'wrong': a credential of the other kind or a malformed one */
  credential?: 'none' | 'wrong';
}

/** A piece of JSON text spliced into a body as is (values JSON.stringify cannot or would not write). */
class RawJson {
  constructor(readonly text: string) {}
}

const MiB = 1024 * 1024;
let gzipBomb: Buffer | undefined; // 6 MiB of JSON in a few KiB, made once
const deepObjects = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

/** Strings Postgres or the code behind a field may choke on. */
export const HOSTILE_STRINGS: Array<[string, string]> = [
  ['U+0000', 'a\u0000b'],
  ['only U+0000', '\u0000'],
  ['lone high surrogate', 'x\ud800'],
  ['lone low surrogate', '\udfffx'],
  ['reversed pair', '\ude00\ud83d'],
  ['100k characters', 'x'.repeat(100_000)],
  ['empty', ''],
  ['controls, bidi and an emoji', ' \u0001\u001f\u202e\ufeff\ud83d\udca5 '],
];

/** Values of every JSON type, and a few that stress the code behind them. */
function hostileValues(pool: Pool): Array<[string, unknown]> {
  return [
    ['null', null],
    ['true', true],
    ['-1', -1],
    ['1.5', 1.5],
    ['2^53+1', new RawJson('9007199254740993')],
    ['1e308', 1e308],
    ['an array', [null]],
    ['an object', {}],
    ['an object with a U+0000 key', { 'k\u0000': 1 }],
    ['an object with a lone surrogate key', { '\udc00': 1 }],
    ['an object with a __proto__ key', new RawJson('{"__proto__":{"polluted":true}}')],
    ['10,000 nested objects', new RawJson(deepObjects(10_000))],
    ['10,000 nested arrays', new RawJson(deepArrays(10_000))],
    ["another workspace's id", pool.other[0]!.id],
    ...HOSTILE_STRINGS.map(([label, s]): [string, unknown] => [`string: ${label}`, s]),
  ];
}

/** Path segments, percent-encoded: refused text, broken escapes, other workspaces' resources. */
function hostileSegments(pool: Pool): Array<[string, string]> {
  return [
    ['%00', '%00'],
    ['a%00b', 'a%00b'],
    ['encoded surrogate (invalid UTF-8)', '%ED%A0%80'],
    ['lone %', '%'],
    ['truncated escape', '%E0%A4%A'],
    ['%FF', '%FF'],
    ['encoded slash', 'a%2Fb'],
    ['dot-dot', '%2E%2E'],
    ['2,000 characters', 'x'.repeat(2000)],
    ['-1', '-1'],
    ['emoji', encodeURIComponent('\ud83d\udca5')],
    ['a random uuid', randomUUID()],
    ['an uppercase uuid', randomUUID().toUpperCase()],
    ...pool.other.map((r): [string, string] => [`another workspace's ${r.kind}`, encodeURIComponent(r.name ?? r.id)]),
  ];
}

/** Query values, percent-encoded. */
const HOSTILE_QUERY_VALUES: Array<[string, string]> = [
  ['%00', '%00'],
  ['a%00', 'a%00'],
  ['encoded surrogate (invalid UTF-8)', '%ED%A0%80'],
  ['lone %', '%'],
  ['a word', 'abc'],
  ['-1', '-1'],
  ['0', '0'],
  ['1e309', '1e309'],
  ['400 digits', '9'.repeat(400)],
  ['empty', ''],
  ['null', 'null'],
];

/** Resolves `:name` segments of a Koa path with percent-encoded values. */
export function fillPath(spec: RouteSpec, values: Record<string, string>, query = ''): string {
  const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => values[name] ?? 'missing');
  return `/api/v1${path}${query ? `?${query}` : ''}`;
}

export function paramNames(spec: RouteSpec): string[] {
  return [...spec.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
}

/** Real resources that could fill a path parameter: ids for uuid parameters, names otherwise. */
export function paramCandidates(spec: RouteSpec, name: string, pool: Pool): string[] {
  const schema = (spec.params as Json | undefined)?.properties?.[name] as Json | undefined;
  if (schema?.format === 'uuid') return pool.own.map((r) => r.id);
  return pool.own.filter((r) => r.name !== undefined).map((r) => encodeURIComponent(r.name!));
}

/** The first alternative of a union that is not null, else the schema itself. */
function concrete(schema: Json): Json {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).find((s) => s.type !== 'null') ?? schema;
  return schema;
}

let serial = 0;

/** A value the schema accepts, as far as can be told without knowing the route: the base every mutation starts from. */
export function sampleOf(schema: Json, pool: Pool, field = ''): unknown {
  const s = concrete(schema);
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined && s.type !== 'object') return s.default;
  switch (s.type) {
    case 'object': {
      const out: Json = {};
      const props = (s.properties ?? {}) as Record<string, Json>;
      const names = Object.keys(props);
      const required = new Set<string>((s.required as string[] | undefined) ?? []);
      for (const name of names) {
        if (required.has(name) || Object.keys(out).length < (s.minProperties ?? 0)) out[name] = sampleOf(props[name]!, pool, name);
      }
      if (names.length === 0 && s.additionalProperties !== false) out.note = 'fuzz';
      return out;
    }
    case 'array': {
      const n = Math.max(1, s.minItems ?? 0);
      return Array.from({ length: n }, () => sampleOf((s.items ?? {}) as Json, pool, field));
    }
    case 'string': {
      if (s.format === 'uuid') {
        const kind = pool.own.find((r) => field.includes(r.kind));
        return kind ? kind.id : randomUUID();
      }
      if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (s.format === 'email') return `fuzz${++serial}@example.test`;
      let text = `fuzz${++serial}`;
      if (s.minLength && text.length < s.minLength) text = text.padEnd(s.minLength, 'x');
      if (s.maxLength && text.length > s.maxLength) text = text.slice(0, s.maxLength);
      return text;
    }
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

/** Every field a body schema names (two levels deep, array items as index 0), with its schema. */
export function fieldPaths(schema: Json, prefix: Path = [], depth = 0): Array<{ path: Path; schema: Json }> {
  const s = concrete(schema);
  const out: Array<{ path: Path; schema: Json }> = [];
  if (depth >= 3) return out;
  if (s.type === 'object') {
    const props = Object.entries((s.properties ?? {}) as Record<string, Json>);
    // a free-form object (queue item data, input_data): one made-up field inside it
    if (props.length === 0 && s.additionalProperties !== false && prefix.length > 0) out.push({ path: [...prefix, 'x'], schema: {} });
    for (const [name, child] of props) {
      out.push({ path: [...prefix, name], schema: child });
      out.push(...fieldPaths(child, [...prefix, name], depth + 1));
    }
  } else if (s.type === 'array' && prefix.length > 0) {
    out.push({ path: [...prefix, 0], schema: (s.items ?? {}) as Json });
    out.push(...fieldPaths((s.items ?? {}) as Json, [...prefix, 0], depth + 1));
  }
  return out;
}

/** JSON text of `value`, with RawJson pieces spliced in. */
export function toJsonText(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (v instanceof RawJson) {
      raws.push(v.text);
      return `\u0001raw${raws.length - 1}\u0001`;
    }
    return v;
  });
  return text.replace(/"\\u0001raw(\d+)\\u0001"/g, (_m, i: string) => raws[Number(i)]!);
}

function setAt(base: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(base) as Json;
  let node: Json = copy;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    if (node[key] === null || typeof node[key] !== 'object') node[key] = typeof path[i + 1] === 'number' ? [] : {};
    node = node[key] as Json;
  }
  node[path[path.length - 1]!] = value;
  return copy;
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };

/**
 * Every hostile request for one route, given a path that names real resources of the caller
 * (`home`: percent-encoded values of its parameters). Each case changes one thing.
 */
export function casesFor(spec: RouteSpec, home: Record<string, string>, pool: Pool): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const homePath = fillPath(spec, home);
  const sample = spec.body ? sampleOf(spec.body as Json, pool) : undefined;
  const withBody = (c: Omit<FuzzCase, 'path'> & { path?: string }): FuzzCase => ({
    path: homePath,
    ...(spec.body ? { body: toJsonText(sample), headers: JSON_HEADERS } : {}),
    ...c,
  });

  cases.push(withBody({ label: 'as declared' }));
  cases.push(withBody({ label: 'without a credential', credential: 'none' }));
  cases.push(withBody({ label: 'with a wrong credential', credential: 'wrong' }));

  for (const name of paramNames(spec)) {
    for (const [label, segment] of hostileSegments(pool)) {
      cases.push(withBody({ label: `path ${name}: ${label}`, path: fillPath(spec, { ...home, [name]: segment }) }));
    }
  }

  const queryNames = [...Object.keys(((spec.query as Json | undefined)?.properties ?? {}) as Json), 'zz'];
  for (const name of queryNames) {
    for (const [label, value] of HOSTILE_QUERY_VALUES) {
      cases.push(withBody({ label: `query ${name}: ${label}`, path: fillPath(spec, home, `${name}=${value}`) }));
    }
    cases.push(withBody({ label: `query ${name}: repeated`, path: fillPath(spec, home, `${name}=1&${name}=2`) }));
  }
  for (const [label, query] of [['a %00 name', '%00=1'], ['a __proto__ name', '__proto__=1'], ['a broken pair', 'a=%&=%%']]) {
    cases.push(withBody({ label: `query: ${label}`, path: fillPath(spec, home, query!) }));
  }

  if (!spec.body) {
    // a body where none is taken, small (discarded) and large (not read)
    cases.push({ label: 'an unexpected small body', path: homePath, body: '{"unexpected":true}', headers: JSON_HEADERS });
    cases.push({ label: 'an unexpected 3 MiB body', path: homePath, body: `"${'x'.repeat(3 * MiB)}"`, headers: JSON_HEADERS });
    return cases;
  }

  const json = (label: string, value: unknown) => cases.push(withBody({ label, body: toJsonText(value) }));
  const fields = fieldPaths(spec.body as Json);
  for (const { path, schema } of fields) {
    const where = path.join(' → ');
    for (const [label, value] of hostileValues(pool)) json(`body ${where}: ${label}`, setAt(sample, path, value));
    if (concrete(schema).type === 'object') json(`body ${where}: an extra field`, setAt(sample, [...path, 'zz_extra'], 1));
  }
  // just under the limit, once per route (it is parsed and walked like any body)
  if (fields.length > 0) json(`body ${fields[0]!.path.join(' → ')}: a near-2 MiB string`, setAt(sample, fields[0]!.path, 'y'.repeat(2 * MiB - 4096)));

  const text = (label: string, body: string | Buffer, headers: Record<string, string> = JSON_HEADERS) => cases.push(withBody({ label, body, headers }));
  text('body: unterminated', '{');
  text('body: empty', '');
  text('body: null', 'null');
  text('body: a string', '"text"');
  text('body: a number', '42');
  text('body: an empty array', '[]');
  text('body: an empty object', '{}');
  text('body: the declared body inside an array', `[${toJsonText(sample)}]`);
  text('body: two documents', `${toJsonText(sample)}{}`);
  text('body: a trailing comma', '{"a":1,}');
  text('body: a byte-order mark', `\ufeff${toJsonText(sample)}`);
  text('body: 10,000 nested objects', deepObjects(10_000));
  text('body: 10,000 nested arrays', deepArrays(10_000));
  text('body: a U+0000 field name', toJsonText({ ...(sample as Json), '\u0000': 1 }));
  text('body: a __proto__ field', `{"__proto__":{"admin":true},${toJsonText(sample).slice(1)}`);
  text('body: raw control characters', '{"a":"\u0000\u0001"}');
  text('body: invalid UTF-8 bytes', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from('"}')]));
  text('body: UTF-16 declared', toJsonText(sample), { 'Content-Type': 'application/json; charset=utf-16' });
  text('body: over 2 MiB', `{"a":"${'x'.repeat(2 * MiB)}"}`);
  text('body: text/plain', 'hello', { 'Content-Type': 'text/plain' });
  text('body: a form', 'a=1&b=2', { 'Content-Type': 'application/x-www-form-urlencoded' });
  text('body: no content type', toJsonText(sample), {});
  text('body: a JSON subtype', toJsonText(sample), { 'Content-Type': 'application/vnd.api+json' });
  text('body: gzip', gzipSync(toJsonText(sample)), { ...JSON_HEADERS, 'Content-Encoding': 'gzip' });
  text('body: corrupt gzip', Buffer.from('not gzip'), { ...JSON_HEADERS, 'Content-Encoding': 'gzip' });
  gzipBomb ??= gzipSync(`{"a":"${' '.repeat(6 * MiB)}"}`);
  text('body: a gzip bomb', gzipBomb, { ...JSON_HEADERS, 'Content-Encoding': 'gzip' });
  text('body: an unknown encoding', toJsonText(sample), { ...JSON_HEADERS, 'Content-Encoding': 'zstd-x' });
  return cases;
}
