import { endJob, exceptionOf, type ItemOutcome, type JobContext, type JobEnd, type QueueItem } from './run';

/** An item's result that asks a person to review it (the item ends `pending_review`). */
export class ItemReview {
  constructor(readonly result: Record<string, unknown>) {}
}

/** `return review({ … })` from an item handler: the item waits for a person's decision. */
export function review(result: Record<string, unknown> = {}): ItemReview {
  return new ItemReview(result);
}

/**
 * Processes one item: what it returns is the item's result (completed), `review(…)` sends it to
 * review, a thrown error fails it: a `BusinessError` for good (`exception: 'business'`, never
 * retried), any other error as an application failure (its queue's retry policy applies).
 */
export type ItemHandler = (item: QueueItem, ctx: JobContext) => Promise<Record<string, unknown> | ItemReview | void>;

/** how often a consumer asks whether other jobs wait for its machine's slot */
const YIELD_CHECK_MS = 2000;

/**
 * A consumer job run with an item handler: one item at a time, each round trip settling the
 * item just done and taking the next, until the queue has none ready, another job waits for the
 * machine, or the run is asked to stop (the current item finishes first). A lost run or its own
 * timeout interrupts at once (the platform fails the item it held).
 */
export async function consumeItems(ctx: JobContext, onItem: ItemHandler): Promise<JobEnd> {
  const counts = { completed: 0, pending_review: 0, failed: 0 };
  let outcomes: ItemOutcome[] = [];
  const settle = async (take: number): Promise<QueueItem[]> => {
    const res = await ctx.items.take({ outcomes, take });
    for (const s of res.settled) if (s.status in counts) counts[s.status as keyof typeof counts]++;
    outcomes = [];
    return res.items;
  };
  let lastYieldCheck = Date.now();
  const hard = () => ctx.signal.aborted && (ctx.signal.reason === 'lost' || ctx.signal.reason === 'timeout');
  try {
    while (!ctx.signal.aborted) {
      const [item] = await settle(1);
      if (!item) break;
      try {
        const result = await onItem(item, ctx);
        outcomes.push(result instanceof ItemReview
          ? { id: item.id, attempt: item.attempt, status: 'pending_review', result: result.result }
          : { id: item.id, attempt: item.attempt, status: 'completed', result: result ?? {} });
      } catch (err) {
        if (hard()) throw err;
        // the kind is always sent, even the default: what the robot meant is on record
        outcomes.push({ id: item.id, attempt: item.attempt, status: 'failed', error_message: (err as Error)?.message || String(err), exception: exceptionOf(err) });
      }
      if (Date.now() - lastYieldCheck >= YIELD_CHECK_MS) {
        lastYieldCheck = Date.now();
        if (await ctx.items.othersWaiting()) break;
      }
    }
  } finally {
    if (outcomes.length && !hard()) await settle(0);
  }
  if (hard()) throw new Error(`aborted: ${String(ctx.signal.reason)}`);
  const output = { items_completed: counts.completed, items_pending_review: counts.pending_review, items_failed: counts.failed };
  return endJob({ status: ctx.signal.reason === 'stop' ? 'stopped' : 'completed', output });
}
