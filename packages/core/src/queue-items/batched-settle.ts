import type { Queryable, Sql } from '../db/sql';
import { Batcher, isPool } from '../db/call-batcher';
import { settleAndClaimItems, settleAndClaimItemsBatch, type SettleAndClaim, type SettleAndClaimResult, type TakeOptions } from './take';

/**
 * Consumers' round trips under load: the API process holding many robots' connections sends the
 * settle-and-take requests of one event-loop turn (and those that arrive while earlier ones run)
 * as one statement (settleAndClaimItemsBatch): one parse, one plan and one commit for all of them
 * instead of one each. On an idle process a request still goes out alone, at once; each request
 * gets its own result, and a statement Postgres refuses is run again request by request, so one
 * bad request fails only itself (db/call-batcher.ts).
 */
const bySql = new WeakMap<Sql, Map<boolean, Batcher<SettleAndClaim, SettleAndClaimResult>>>();

export function settleAndClaimItemsBatched(sql: Queryable, req: SettleAndClaim, opts: TakeOptions = {}): Promise<SettleAndClaimResult> {
  if (!isPool(sql)) return settleAndClaimItems(sql, req, opts);
  const floor = !!opts.floor;
  let batchers = bySql.get(sql);
  if (!batchers) bySql.set(sql, (batchers = new Map()));
  let batcher = batchers.get(floor);
  if (!batcher) {
    batcher = new Batcher({
      runBatch: (reqs) => (reqs.length === 1 ? settleAndClaimItems(sql, reqs[0]!, { floor }).then((r) => [r]) : settleAndClaimItemsBatch(sql, reqs, { floor })),
      runOne: (r) => settleAndClaimItems(sql, r, { floor }),
      maxBatch: 100,
      maxInFlight: 2,
    });
    batchers.set(floor, batcher);
  }
  return batcher.run(req);
}
