import { randomUUID } from 'node:crypto';
import { isConnectionError, retryOnConnectionLoss } from '../db/outage';
import type { Queryable, Sql } from '../db/sql';
import { AppError, ConflictError, ValidationError } from '../errors';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS, idempotencyRequestHash } from './key';
import {
  claimIdempotencyKey, completeIdempotencyKey, findIdempotencyKey, releaseIdempotencyKey, releaseLostClaim, type IdempotencyKeyId,
} from './repo';
import { es } from '../messages/server-messages';

/** A response worth keeping: what a repeat of the request answers. */
export interface IdempotentResult {
  status: number;
  body: unknown;
}

/**
 * Handed to the code that does the work. `record(tx, result)` stores the response inside the
 * caller's own transaction, so the work and its recorded response commit together (a crash can
 * never leave work done without a response to replay). Calling it is optional: a result that was
 * not recorded is stored right after the work returns.
 */
export interface IdempotencyClaim {
  /** true when the request carried an Idempotency-Key (false: `record` does nothing). */
  readonly active: boolean;
  record(tx: Queryable, result: IdempotentResult): Promise<void>;
}

export const inactiveClaim: IdempotencyClaim = { active: false, record: async () => undefined };

export type IdempotencyOutcome =
  | { kind: 'claimed'; claim: LiveClaim }
  | { kind: 'replay'; result: IdempotentResult };

const reused = () =>
  ValidationError.single(
    ['header', IDEMPOTENCY_HEADER],
    es.idempotency.reusedField,
    'idempotency_key_reused',
    es.idempotency.reused,
  );

export const inFlight = () =>
  new AppError('CONFLICT', 409, es.idempotency.inProgress, {
    headers: { 'Retry-After': '1' },
  });

export class LiveClaim implements IdempotencyClaim {
  readonly active = true;
  private recorded = false;
  constructor(private readonly sql: Sql, readonly id: IdempotencyKeyId, private readonly token: string) {}

  async record(tx: Queryable, result: IdempotentResult): Promise<void> {
    if (result.status >= 400) return;
    // fenced by the claim token: if the claim was taken over, the caller's transaction rolls back
    if (!(await completeIdempotencyKey(tx, this.id, this.token, result.status, result.body))) {
      throw new ConflictError(es.idempotency.claimedByOther);
    }
    this.recorded = true;
  }

  /** After the work returned: store its result if the work did not, or free the key on failure. */
  async finish(result: IdempotentResult): Promise<void> {
    if (result.status >= 400) return this.release();
    if (this.recorded) return;
    await completeIdempotencyKey(this.sql, this.id, this.token, result.status, result.body);
    this.recorded = true;
  }

  /** The work failed: the key is free again so the client may retry. */
  async release(): Promise<void> {
    if (this.recorded) return;
    await releaseIdempotencyKey(this.sql, this.id, this.token);
  }
}

/**
 * Claims `key` for a request, or says what to answer instead:
 * - first use (or the previous use expired, or was abandoned in flight) → `claimed`;
 * - same request already answered within 24 h → `replay` of the first response;
 * - same key, different request → 422; same key still in flight → 409.
 */
export async function beginIdempotent(
  sql: Sql,
  id: IdempotencyKeyId,
  request: unknown,
  onFreeError: (err: unknown) => void = () => undefined,
): Promise<IdempotencyOutcome> {
  const hash = idempotencyRequestHash(request);
  // a row can vanish between the claim and the read (its request failed and released it): claim again
  for (let attempt = 0; attempt < 5; attempt++) {
    const nonce = randomUUID();
    const token = await claimIdempotencyKey(sql, id, hash, nonce).catch((err: unknown) => {
      // the claim may exist although its answer was lost: free it (by its nonce) once Postgres answers
      if (isConnectionError(err)) freeWhenReachable(() => releaseLostClaim(sql, id, nonce), onFreeError);
      throw err;
    });
    if (token) return { kind: 'claimed', claim: new LiveClaim(sql, id, token) };
    const row = await findIdempotencyKey(sql, id);
    if (!row) continue;
    if (!row.request_hash.equals(hash)) throw reused();
    if (row.status === null) throw inFlight();
    return { kind: 'replay', result: { status: row.status, body: row.response } };
  }
  throw inFlight();
}

/**
 * Runs `produce` at most once per (tenant, scope, key): the core of `withIdempotency` without
 * HTTP. With `key` null the request is not idempotent and `produce` simply runs.
 */
export async function runIdempotent(
  sql: Sql,
  id: Omit<IdempotencyKeyId, 'key'> & { key: string | null },
  request: unknown,
  produce: (claim: IdempotencyClaim) => Promise<IdempotentResult>,
  onStoreError: (err: unknown) => void = () => undefined,
): Promise<IdempotentResult & { replayed: boolean }> {
  if (id.key === null) return { ...(await produce(inactiveClaim)), replayed: false };
  const outcome = await beginIdempotent(sql, { ...id, key: id.key }, request, onStoreError);
  if (outcome.kind === 'replay') return { ...outcome.result, replayed: true };
  const claim = outcome.claim;
  let result: IdempotentResult;
  try {
    result = await produce(claim);
  } catch (err) {
    await claim.release().catch((releaseErr: unknown) => {
      // Postgres is away: free the key once it answers (fenced: if the work did commit with its
      // recorded response, the claim is no longer in flight and stays, so a retry replays it)
      if (isConnectionError(releaseErr)) freeWhenReachable(() => claim.release(), onStoreError);
    });
    throw err;
  }
  // the work is done: a failure to store its response must not turn it into an error for the
  // client (the claim then lapses after its lease, see IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS)
  await claim.finish(result).catch(onStoreError);
  return { ...result, replayed: false };
}

/**
 * Frees a claim in the background as soon as Postgres answers again, so a client retrying after
 * an outage gets its key back within seconds instead of a 409 until the in-flight lease (60 s)
 * runs out. Past the lease there is nothing left to free: the claim may be taken over anyway.
 */
function freeWhenReachable(free: () => Promise<void>, onError: (err: unknown) => void): void {
  void retryOnConnectionLoss(free, {
    context: 'freeing an Idempotency-Key',
    signal: AbortSignal.timeout(IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS * 1000),
  }).catch(onError);
}
