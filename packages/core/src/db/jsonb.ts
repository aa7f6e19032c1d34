/**
 * A JSON value as Postgres gives it back after storing it as `jsonb`, without the round trip: the
 * same value with every object's keys in jsonb's order — shorter keys (in UTF-8 bytes) first,
 * then byte order. Lets an insert answer with what a later read will show, byte for byte, while
 * returning only the columns Postgres chose (BENCHMARKS.md, B1: parsing the stored payload back
 * was a large share of the postgres client's work).
 *
 * It assumes what `JSON.parse` produced: plain objects, arrays, strings, finite numbers, booleans
 * and null. Number and string spellings need no work — jsonb keeps the numeric value and the
 * characters, and both sides parse to the same JavaScript values; duplicate keys were already
 * resolved by the parse (the last one wins in both).
 */
export function asStoredJsonb<T>(value: T): T {
  return normalize(value) as T;
}

function normalize(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = normalize(value[i]);
    return out;
  }
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source);
  if (keys.length > 1) keys.sort(compareJsonbKeys);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    // JSON.parse makes "__proto__" an own property; a plain assignment would set the prototype
    if (key === '__proto__') Object.defineProperty(out, key, { value: normalize(source[key]), enumerable: true, writable: true, configurable: true });
    else out[key] = normalize(source[key]);
  }
  return out;
}

/** jsonb's key order (lengthCompareJsonbString): UTF-8 length, then the bytes. */
export function compareJsonbKeys(a: string, b: string): number {
  const la = utf8Length(a);
  const lb = utf8Length(b);
  if (la !== lb) return la - lb;
  return compareCodePoints(a, b);
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Byte order of UTF-8 is code-point order; UTF-16 units differ from it only past U+D7FF. */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    if (ca < 0xd800 && cb < 0xd800) return ca - cb;
    return (a.codePointAt(i) ?? 0) - (b.codePointAt(i) ?? 0);
  }
  return a.length - b.length;
}
