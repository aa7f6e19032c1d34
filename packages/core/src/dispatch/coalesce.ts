/**
 * Coalesces bursts of nudges per key: the first call sends at once, calls during a send or
 * within `windowMs` of the last send collapse into one trailing send. A producer adding items
 * at thousands of requests per second thus costs the dispatcher a few nudges per second per
 * queue, and the last nudge of a burst is never dropped.
 */
export class Coalescer {
  private readonly state = new Map<string, { inflight: boolean; again: boolean; timer?: NodeJS.Timeout; last: number }>();
  private closed = false;

  constructor(
    private readonly windowMs: number,
    private readonly send: (key: string) => Promise<void>,
    private readonly onError: (key: string, err: unknown) => void,
  ) {}

  /** Resolves when this call's send (if it made one) is done; coalesced calls resolve at once. */
  trigger(key: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    let s = this.state.get(key);
    if (!s) {
      s = { inflight: false, again: false, last: 0 };
      this.state.set(key, s);
    }
    if (s.inflight || s.timer) {
      s.again = true;
      return Promise.resolve();
    }
    const wait = s.last + this.windowMs - Date.now();
    if (wait > 0) {
      const entry = s;
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        void this.fire(key, entry);
      }, wait);
      entry.timer.unref?.();
      return Promise.resolve();
    }
    return this.fire(key, s);
  }

  private async fire(key: string, s: { inflight: boolean; again: boolean; timer?: NodeJS.Timeout; last: number }): Promise<void> {
    s.inflight = true;
    s.again = false;
    s.last = Date.now();
    try {
      await this.send(key);
    } catch (err) {
      this.onError(key, err);
    } finally {
      s.inflight = false;
      if (s.again) {
        s.again = false;
        void this.trigger(key);
      } else if (this.state.size > 10_000) {
        this.state.delete(key);
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const s of this.state.values()) if (s.timer) clearTimeout(s.timer);
    this.state.clear();
  }
}
