import type { Queryable } from '../db/sql';
import { IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS, IDEMPOTENCY_TTL_SECONDS } from './key';

/**
 * SQL over `idempotency_keys` (tenant_id, scope, key) → request_hash, status, response, created_at.
 * A row with status null is a claim in flight; `created_at` (clock_timestamp at claim time, kept
 * as text to keep its microseconds) is the claim's fencing token: completing or releasing a claim
 * only touches the row if it is still that same claim.
 */
export interface IdempotencyKeyId {
  tenantId: string;
  scope: string;
  key: string;
}

export interface StoredIdempotencyKey {
  request_hash: Buffer;
  status: number | null;
  response: unknown;
}

/**
 * Claims the key for this request: inserts it, or takes over a row that has expired (older than
 * 24 h) or whose claim was abandoned in flight. Returns the claim token, or null when another
 * live row holds the key. `nonce` names this attempt to claim, for `releaseLostClaim`.
 */
export async function claimIdempotencyKey(sql: Queryable, id: IdempotencyKeyId, requestHash: Buffer, nonce: string | null = null): Promise<string | null> {
  const [row] = await sql<{ token: string }[]>`
    insert into idempotency_keys as k (tenant_id, scope, key, request_hash, status, response, created_at, claim_nonce)
    values (${id.tenantId}, ${id.scope}, ${id.key}, ${requestHash}, null, null, clock_timestamp(), ${nonce}::uuid)
    on conflict (tenant_id, scope, key) do update
      set request_hash = excluded.request_hash, status = null, response = null, created_at = excluded.created_at,
          claim_nonce = excluded.claim_nonce
      where k.created_at < now() - make_interval(secs => ${IDEMPOTENCY_TTL_SECONDS})
         or (k.status is null and k.created_at < now() - make_interval(secs => ${IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS}))
    returning k.created_at::text as token`;
  return row?.token ?? null;
}

/** The live (unexpired) row for the key, if any. */
export async function findIdempotencyKey(sql: Queryable, id: IdempotencyKeyId): Promise<StoredIdempotencyKey | null> {
  const [row] = await sql<StoredIdempotencyKey[]>`
    select request_hash, status, response
    from idempotency_keys
    where tenant_id = ${id.tenantId} and scope = ${id.scope} and key = ${id.key}
      and created_at >= now() - make_interval(secs => ${IDEMPOTENCY_TTL_SECONDS})`;
  return row ?? null;
}

/** Stores the first response of a claim; false when the claim is no longer ours. */
export async function completeIdempotencyKey(
  sql: Queryable,
  id: IdempotencyKeyId,
  token: string,
  status: number,
  response: unknown,
): Promise<boolean> {
  const res = await sql`
    update idempotency_keys
    set status = ${status}, response = ${JSON.stringify(response)}::text::json
    where tenant_id = ${id.tenantId} and scope = ${id.scope} and key = ${id.key}
      and created_at = ${token}::text::timestamptz and status is null`;
  return res.count === 1;
}

/** Frees a claim whose request failed, so the client may retry with the same key. */
export async function releaseIdempotencyKey(sql: Queryable, id: IdempotencyKeyId, token: string): Promise<void> {
  await sql`
    delete from idempotency_keys
    where tenant_id = ${id.tenantId} and scope = ${id.scope} and key = ${id.key}
      and created_at = ${token}::text::timestamptz and status is null`;
}

/**
 * Frees a claim this process sent but never heard back about (the connection dropped, so it may
 * or may not exist): only the claim it named `nonce`, only while still in flight.
 */
export async function releaseLostClaim(sql: Queryable, id: IdempotencyKeyId, nonce: string): Promise<void> {
  await sql`
    delete from idempotency_keys
    where tenant_id = ${id.tenantId} and scope = ${id.scope} and key = ${id.key}
      and claim_nonce = ${nonce}::uuid and status is null`;
}

/**
 * Housekeeping: drops up to `limit` rows past their 24 hours, oldest first. Returns how many.
 * The `order by created_at` is what makes every plan walk `idempotency_keys_created_idx` from
 * its oldest end; without it the generic plan takes "any N expired rows" from a sequential scan.
 */
export async function purgeExpiredIdempotencyKeys(sql: Queryable, limit = 10_000): Promise<number> {
  const res = await sql`
    delete from idempotency_keys
    where ctid = any(array(
      select ctid from idempotency_keys
      where created_at < now() - make_interval(secs => ${IDEMPOTENCY_TTL_SECONDS})
      order by created_at
      limit ${limit}))`;
  return res.count;
}

/**
 * The periodic sweep (the dispatcher schedules it): purges every expired key in batches of
 * `batch`, each its own short statement, so a large backlog never holds locks for long.
 */
export async function sweepExpiredIdempotencyKeys(sql: Queryable, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await purgeExpiredIdempotencyKeys(sql, batch);
    total += n;
    if (n < batch) return total;
  }
}
