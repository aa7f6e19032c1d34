/**
 * The consumer's hand-off buffer with `prefetch: 'auto'` (the default).
 *
 * Every round trip (an `items.take` to the platform) settles the items just processed and takes
 * the next ones; with one item per round trip a queue of instant items is bound by round trips
 * (BENCHMARKS.md, B3).
 * So a consumer whose recent items were fast takes a few at once, and one whose items take
 * time takes exactly one: holding items another consumer could be running costs parallelism,
 * and an urgent item added meanwhile waits behind what is held. The rule keeps what a consumer
 * holds at once under about `WORK_BUDGET_MS` of expected work and never above
 * `AUTO_MAX`: an urgent item waits behind at most `AUTO_MAX` handed-out items of one consumer,
 * and only when those take under `WORK_BUDGET_MS` together.
 */
export const AUTO_MAX = 4;
export const WORK_BUDGET_MS = 10;
/** weight of the newest item in the running average of item durations */
const ALPHA = 0.3;

export class AutoPrefetch {
  private avgMs: number | null = null;

  /** Records how long one item took (ms, fractions allowed). */
  observe(ms: number): void {
    this.avgMs = this.avgMs === null ? ms : this.avgMs + ALPHA * (ms - this.avgMs);
  }

  /** How many items to take now: 1 until an item has been timed. */
  take(): number {
    if (this.avgMs === null) return 1;
    if (this.avgMs <= 0) return AUTO_MAX;
    return Math.max(1, Math.min(AUTO_MAX, Math.floor(WORK_BUDGET_MS / this.avgMs)));
  }
}

/** The size of the next take for a consumer's `prefetch` setting. */
export function takeSize(prefetch: number | 'auto', auto: AutoPrefetch): number {
  return prefetch === 'auto' ? auto.take() : prefetch;
}
