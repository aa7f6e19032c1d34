/**
 * Postgres's jsonb containment (`doc @> filter`) on parsed JSON, for rows that are no longer in a
 * table: the archived rows an export reads back (export/archived.ts) must match a `?data=` or
 * `?input_data=` filter exactly as the live rows' SQL does.
 *
 * The rules, as Postgres's JsonbDeepContains applies them:
 * - an object contains another when it has each of its keys with a value that contains the
 *   other's value; extra keys are ignored;
 * - an array contains another when each element of the other is contained in some element of
 *   it, in any order and counting duplicates once;
 * - a scalar contains only an equal scalar (numbers by value, strings exactly);
 * - values at one position must be of one kind: `{"a":[1]}` does not contain `{"a":1}`;
 * - the one exception is at the top: an array contains a bare scalar it holds (`[1,2] @> 1`).
 */
export function jsonbContains(doc: unknown, filter: unknown): boolean {
  if (Array.isArray(doc) && !isContainer(filter)) return doc.some((e) => !isContainer(e) && e === filter);
  return contains(doc, filter);
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isContainer(v: unknown): boolean {
  return v !== null && typeof v === 'object';
}

function contains(doc: unknown, filter: unknown): boolean {
  if (Array.isArray(filter)) {
    if (!Array.isArray(doc)) return false;
    return filter.every((f) => isContainer(f)
      ? doc.some((d) => sameKind(d, f) && contains(d, f))
      : doc.some((d) => !isContainer(d) && d === f));
  }
  if (isObject(filter)) {
    if (!isObject(doc)) return false;
    return Object.keys(filter).every((k) => Object.prototype.hasOwnProperty.call(doc, k) && sameKind(doc[k], filter[k]) && contains(doc[k], filter[k]));
  }
  return doc === filter;
}

/** Both arrays, both objects, or both scalars (JSON null, booleans, numbers and strings). */
function sameKind(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b);
  return isObject(a) === isObject(b);
}
