import type { Context } from 'koa';
import { IDEMPOTENCY_HEADER, parseIdempotencyKey, UnauthorizedError, type IdempotencyClaim, type IdempotentResult } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from './state';

export { IDEMPOTENCY_HEADER, type IdempotencyClaim, type IdempotentResult };

/** Header set on a response that repeats the stored first response. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** For a route spec's `headers` (OpenAPI). */
export const idempotencyHeaderDoc = {
  name: IDEMPOTENCY_HEADER,
  required: false,
  description:
    'Makes the request safe to repeat: for 24 hours a repeat with the same key and the same request answers the ' +
    'first response (header Idempotent-Replayed: true) and creates nothing; the same key with another body or path ' +
    'answers 422; while the first is still in flight, 409. 1 to 255 printable ASCII characters. ' +
    'See docs/decisions/idempotency.md.',
};

/**
 * Runs `produce` at most once per (tenant, scope, Idempotency-Key) and answers the request with
 * its result; a repeat within 24 hours answers the stored first response (same status and body,
 * plus `Idempotent-Replayed: true`). Without the header, `produce` just runs.
 *
 * Call it after the 404 checks and after validating the body (so the order 401 → 429 → 403 → 404
 * → 422 holds and an invalid body never claims a key), and pass the validated body: it is hashed
 * together with the request path, so the same key sent to another path or with another body is
 * refused (422). `produce` returns the whole response body (`{success: true, data}`); to make the
 * work and its recorded response commit together, call `claim.record(tx, result)` inside the
 * work's transaction (`claim.active` tells whether there is anything to record). Errors thrown by
 * `produce` (and results with status ≥ 400) free the key so the client may retry.
 *
 * `scope` names the operation, e.g. `queue-items.add`; keys of different scopes never meet.
 */
export async function withIdempotency(
  ctx: Context & { state: AppState },
  deps: Pick<ApiDeps, 'engine' | 'logger'>,
  scope: string,
  body: unknown,
  produce: (claim: IdempotencyClaim) => Promise<IdempotentResult>,
): Promise<void> {
  const key = parseIdempotencyKey(ctx.headers['idempotency-key']);
  const tenantId = ctx.state.apiKey?.tenantId ?? ctx.state.user?.tenantId;
  if (!tenantId) throw new UnauthorizedError();
  const result = await deps.engine.idempotency.run(
    { tenantId, scope, key },
    { path: decodedPath(ctx.path), body },
    produce,
    (err) => (ctx.state.log ?? deps.logger).warn('idempotency response not stored', { err: (err as Error).message, scope }),
  );
  if (result.replayed) ctx.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  ctx.status = result.status;
  ctx.body = result.body;
}

/** `/a%20b` and `/a b` name the same target; a malformed escape is hashed as sent. */
function decodedPath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
