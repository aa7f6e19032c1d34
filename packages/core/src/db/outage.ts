import type { Logger } from '../logger';

/**
 * Postgres outages (a restart, a failover, the network): how the long-running processes tell a
 * lost connection from any other error, wait for the database with back-off, and say so once per
 * outage instead of once per attempt. See docs/decisions/postgres-outages.md.
 */

/** Error codes of postgres.js and of Node's sockets that mean "the connection is gone or refused". */
const CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN',
  'ENOTFOUND', 'EAI_AGAIN',
]);

/**
 * SQLSTATEs the server sends when it ends or refuses a session: class 08 (connection exception),
 * 57P01 admin_shutdown (a fast shutdown or restart), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up, shutting down, in recovery), 53300 too_many_connections.
 */
function isSessionEndingState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/**
 * Whether `err` says Postgres could not be reached or the connection was lost. A statement that
 * failed this way may or may not have been applied (the answer was lost with the connection):
 * callers settle that by the fencing rules, never by assuming either.
 */
export function isConnectionError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  if ((err as { name?: unknown }).name === 'PostgresError' && typeof code === 'string') {
    return isSessionEndingState(code) || severity === 'FATAL' || severity === 'PANIC';
  }
  return false;
}

/**
 * A failure this soon after Postgres came back belongs to the same outage: postgres.js hands a
 * stale "terminating connection" to the first query of each connection that was busy when the
 * server went down (the query was never sent). Such a failure is logged only if the database
 * stays unreachable this long.
 */
const SETTLE_MS = 5000;

/**
 * One per process: the first failure of an outage is logged (warn), the rest of it is silent,
 * and the first success after it is logged once more (info, with how long it lasted). Everything
 * that talks to Postgres in the process reports here, so a restart is two lines in the log, not
 * one per loop and attempt.
 */
export class DbOutage {
  private since: number | null = null;
  private lastRecovery: number | null = null;
  /** the current outage has not been logged (it began just after a recovery) */
  private quiet = false;

  constructor(private readonly logger: Logger, private readonly now: () => number = Date.now) {}

  /** Reports a failed attempt; returns true when it was a connection error (worth retrying). */
  failed(err: unknown, context: string): boolean {
    if (!isConnectionError(err)) return false;
    const now = this.now();
    if (this.since === null) {
      this.since = now;
      this.quiet = this.lastRecovery !== null && now - this.lastRecovery < SETTLE_MS;
      if (!this.quiet) this.logUnreachable(err, context);
    } else if (this.quiet && now - this.since >= SETTLE_MS) {
      this.quiet = false;
      this.logUnreachable(err, context);
    }
    return true;
  }

  /** Reports a successful round trip (cheap: a comparison when there is no outage). */
  ok(): void {
    if (this.since === null) return;
    const now = this.now();
    if (!this.quiet) this.logger.info('Postgres reachable again', { down_ms: now - this.since });
    this.since = null;
    this.quiet = false;
    this.lastRecovery = now;
  }

  private logUnreachable(err: unknown, context: string): void {
    this.logger.warn('Postgres unreachable: retrying with back-off until it answers', { during: context, err: (err as Error).message });
  }

  /** Whether an outage is under way (a failure was seen and no success since). */
  get down(): boolean {
    return this.since !== null;
  }

  /**
   * Milliseconds since this process last saw Postgres come back (Infinity when it never lost it,
   * 0 while it is down): the dispatcher waits before it judges machines by their heartbeats, which
   * could not be written meanwhile.
   */
  msSinceRecovery(): number {
    if (this.since !== null) return 0;
    return this.lastRecovery === null ? Number.POSITIVE_INFINITY : this.now() - this.lastRecovery;
  }
}

export interface RetryOptions {
  /** the process's outage log (without one, attempts are not reported anywhere) */
  outage?: DbOutage;
  /** names the operation in the outage's log line */
  context: string;
  /** gives up (rethrowing the last error) once aborted: the process is shutting down */
  signal?: AbortSignal;
  /** first pause (ms), doubled on every failure up to maxDelayMs; each pause is jittered ±25 % */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** called before each retry (an unknown outcome may need to be looked at first) */
  onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `fn` until it succeeds, retrying on connection errors with exponential back-off (100 ms
 * doubling to 2 s by default: after an outage work resumes within about two seconds). Any other
 * error is thrown at once. `fn` must be safe to run again after a connection error, whose outcome
 * is unknown: a fenced statement, a read, or a function that first finds out what happened.
 */
export async function retryOnConnectionLoss<T>(fn: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const min = opts.minDelayMs ?? 100;
  const max = opts.maxDelayMs ?? 2000;
  for (let attempt = 1; ; attempt++) {
    try {
      const value = await fn();
      opts.outage?.ok();
      return value;
    } catch (err) {
      const lost = opts.outage ? opts.outage.failed(err, opts.context) : isConnectionError(err);
      if (!lost || opts.signal?.aborted) throw err;
      opts.onRetry?.(err, attempt);
      const base = Math.min(max, min * 2 ** (attempt - 1));
      await pause(base * (0.75 + Math.random() / 2), opts.signal);
    }
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
