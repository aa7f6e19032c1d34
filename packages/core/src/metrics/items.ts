import { itemAttempts, itemCompletionSeconds, itemsSettled } from './domain';

/**
 * One consumer round (queue-items/take.ts, settleAndClaimItems): the outcomes settled,
 * the created → completed time of the completed ones, and the items taken (attempts). A repeat
 * of a round after a lost answer counts again.
 */
export function observeSettleAndClaim(settled: ReadonlyArray<{ status: string }>, completedAges: readonly number[], taken: number): void {
  for (const s of settled) itemsSettled.inc({ status: s.status });
  for (const age of completedAges) itemCompletionSeconds.observe(Math.max(0, age));
  if (taken) itemAttempts.inc(taken);
}
