import { ValidationError } from '../errors';
import { sha256 } from '../security/hash';
import { es } from '../messages/server-messages';

/** The request header a client sets to make a POST safe to repeat (docs/decisions/idempotency.md). */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
/** A completed key answers repeats for this long; after it the key is free again. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/**
 * A claim still in flight after this long is taken to be abandoned (its process died) and may be
 * claimed again. Work recorded with `IdempotencyClaim.record(tx, …)` is fenced, so a late
 * original cannot commit after a takeover.
 */
export const IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS = 60;

// printable ASCII, space included (HTTP already strips it at both ends)
const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * Checks the header value: absent (undefined) means "not idempotent"; anything present must be
 * 1..255 printable ASCII characters, else 422.
 */
export function parseIdempotencyKey(raw: string | string[] | undefined): string | null {
  if (raw === undefined) return null;
  const value = Array.isArray(raw) ? raw.join(', ') : raw;
  if (value.length === 0 || value.length > IDEMPOTENCY_KEY_MAX_LENGTH || !PRINTABLE.test(value)) {
    throw ValidationError.single(
      ['header', IDEMPOTENCY_HEADER],
      es.idempotency.keyFormat(IDEMPOTENCY_KEY_MAX_LENGTH),
      'idempotency_key_invalid',
    );
  }
  return value;
}

/** JSON with object keys sorted at every level, so `{a,b}` and `{b,a}` are the same request. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value);
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of Object.keys(obj).sort()) {
    if (obj[k] === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(obj[k])}`);
  }
  return `{${parts.join(',')}}`;
}

/** SHA-256 of the canonical form of what identifies a request (its target and body). */
export function idempotencyRequestHash(request: unknown): Buffer {
  try {
    return sha256(canonicalJson(request));
  } catch (err) {
    // absurdly deep JSON overflows the recursion: the client's data, so a 422, not a 500
    if (err instanceof RangeError) throw ValidationError.single(['body'], es.validation.jsonTooDeep, 'json_too_deep');
    throw err;
  }
}
