import { retryOnConnectionLoss, type DbOutage } from '@svc/core';

/**
 * A run's signs of life, which decide whether the agent renews its lease (renewJobLeases): a run
 * is alive while it shows a sign within `stallMs` (a finished item or step, a database round
 * trip, the robot's own "still working"), or while it waits for Postgres to come back. A run
 * stuck in one database call for `stallMs` (a connection that hangs) or whose robot went silent
 * is not, and the dispatcher ends its job once the lease lapses, although the machine still
 * heartbeats (docs/decisions/postgres-outages.md).
 */
export class RunLife {
  private lastSign = Date.now();
  private callSince: number | null = null;
  private waitingForDb = false;

  constructor(private readonly stallMs: number, private readonly outage: DbOutage, private readonly giveUp: AbortSignal) {}

  sign(): void {
    this.lastSign = Date.now();
  }

  alive(now = Date.now()): boolean {
    if (this.callSince !== null) return now - this.callSince < this.stallMs;
    return this.waitingForDb || now - this.lastSign < this.stallMs;
  }

  /**
   * Runs a database call for this run, again and again while Postgres is unreachable (with
   * back-off, logged once per outage), until it answers or the agent gives up (shutdown).
   * `onRetry` learns that the previous attempt's outcome is unknown.
   */
  db<T>(context: string, fn: () => Promise<T>, onRetry?: () => void): Promise<T> {
    return retryOnConnectionLoss(
      async () => {
        this.callSince = Date.now();
        this.waitingForDb = false;
        try {
          return await fn();
        } finally {
          this.callSince = null;
          this.lastSign = Date.now();
        }
      },
      {
        outage: this.outage,
        context,
        signal: this.giveUp,
        onRetry: () => {
          this.waitingForDb = true;
          onRetry?.();
        },
      },
    );
  }
}
