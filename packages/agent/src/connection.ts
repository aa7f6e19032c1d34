import WebSocket from 'ws';
import { agentFor, type TransportOptions } from './transport';

/** An error the platform answered a request with (the API's codes and Spanish messages). */
export class PlatformError extends Error {
  constructor(readonly code: string, message: string, readonly details?: unknown) {
    super(message);
    this.name = 'PlatformError';
  }
}

export interface Welcome {
  machine: { id: string; name: string; slots: number };
  heartbeat_ms: number;
  lease_seconds: number;
  /** how often the server pings (a server silent for twice as long is gone); absent from older servers */
  ping_ms?: number;
}

/** Why the connection gave up for good. */
export type Refusal =
  /** the key was refused (401, or close 4001): rotated, or its machine deactivated */
  | 'key'
  /** the same machine connected from elsewhere (close 4002): two processes hold one key */
  | 'replaced';

/**
 * The robot's side of the protocol's timing rules (docs/agent-protocol.md, "Timing rules"), as
 * this package ships them; published in docs/agent-protocol.schema.json for robots in other
 * languages.
 */
export const TIMING = {
  /** the server's ping period when its welcome names none */
  defaultPingMs: 15_000,
  /** nothing heard for `2 × ping_ms + silentMarginMs`: the connection is dead, open another */
  silentMarginMs: 1000,
  /**
   * A request unanswered this long means the connection is broken although frames still come (a
   * server-side fault): it is opened again, and what was in flight asked again there as repeats.
   * A Postgres outage the platform waits out answers late, not never.
   */
  requestTimeoutMs: 120_000,
  /** the WebSocket upgrade */
  handshakeTimeoutMs: 10_000,
  /**
   * Reconnecting: after a working connection dropped, a random delay up to `spreadMs`; each
   * failed try then waits `minMs / 2` plus a random share of a bound that doubles from `minMs` up
   * to `maxMs`; an upgrade refused with Retry-After waits that, plus up to a second.
   */
  reconnect: { minMs: 200, maxMs: 5000, spreadMs: 3000 },
} as const;

export interface ConnectionEvents {
  /** a connection opened and was welcomed; resolve when the robot has told it what it holds */
  welcome(welcome: Welcome): Promise<void>;
  /** a message the server pushed (`job.start`, `job.stop`) */
  push(message: { type: string } & Record<string, unknown>): void;
  /** why a connection closed, and in how long the next one is tried */
  disconnected(code: number, reason: string, retryInMs: number): void;
  /** the connection gave up for good (see Refusal): no retry */
  refused(reason: string, why: Refusal): void;
}

interface Pending {
  message: Record<string, unknown>;
  resolve(result: unknown): void;
  reject(err: Error): void;
  /** when it went out on the socket (performance.now()) */
  sentAt?: number;
  /** not asked again on the next connection: its answer is only worth having from this one */
  once?: boolean;
  /** told each time the request goes out (performance.now()), a repeat included */
  onSent?(at: number): void;
  /** given up by its caller (its run was lost): never sent again, and no longer waited for */
  abandoned?: boolean;
}

/** What a caller may say of its request. */
export interface RequestOptions {
  onSent?(at: number): void;
  /** once aborted, the request is given up: rejected (LOST), taken out of the queue, never sent again */
  signal?: AbortSignal;
}

/**
 * One robot's link to the platform: a WebSocket to one of `urls`, opened again with exponential
 * back-off and full jitter whenever it drops (each try moves to the next URL). Requests wait for
 * an open, welcomed connection; a request whose answer was lost with its connection is sent again
 * on the next one (every request of the protocol may be repeated: docs/agent-protocol.md).
 *
 * A connection that has not closed is not taken for alive: `check()` (called on the robot's
 * clock) destroys one from which nothing came (no message, no ping) for twice the server's ping
 * period plus TIMING.silentMarginMs, or whose oldest request went unanswered for TIMING.requestTimeoutMs, and opens another.
 */
export class Connection {
  private socket: WebSocket | null = null;
  private ready = false;
  private nextId = 1;
  private readonly inFlight = new Map<number, Pending>();
  private queue: Pending[] = [];
  private attempt = 0;
  private urlIndex = 0;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  /** when a frame last came from the server (performance.now()) */
  private lastHeard = 0;
  private silentAfterMs = 2 * TIMING.defaultPingMs + TIMING.silentMarginMs;
  /** why this side destroyed the socket, for the close's log line */
  private cutReason = '';
  /** the current socket was welcomed (a drop now is of a working connection) */
  private welcomedHere = false;
  /** the server's Retry-After on a refused upgrade (429, 503), in ms */
  private retryAfterMs = 0;

  constructor(
    private readonly urls: string[],
    private readonly machineKey: string,
    private readonly events: ConnectionEvents,
    private readonly backoff: { minMs: number; maxMs: number; spreadMs: number },
    private readonly transport: TransportOptions = {},
  ) {}

  open(): void {
    if (this.closed) return;
    const base = this.urls[this.urlIndex % this.urls.length]!.replace(/\/+$/, '');
    this.urlIndex++;
    const url = `${base.replace(/^http/, 'ws')}/api/v1/agent/connect`;
    const ws = new WebSocket(url, {
      headers: { Authorization: `Bearer ${this.machineKey}` },
      handshakeTimeout: TIMING.handshakeTimeoutMs,
      agent: agentFor(base, this.transport),
      ...(this.transport.ca ? { ca: this.transport.ca } : {}),
    });
    this.socket = ws;
    this.cutReason = '';
    this.retryAfterMs = 0;
    this.welcomedHere = false;
    let refusedStatus = 0;
    ws.on('unexpected-response', (_req, res) => {
      refusedStatus = res.statusCode ?? 0;
      this.retryAfterMs = retryAfterMs(res.headers['retry-after']);
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => this.heard());
    ws.on('ping', () => this.heard());
    ws.on('pong', () => this.heard());
    ws.on('message', (data) => {
      this.heard();
      this.onMessage(data.toString(), ws);
    });
    // what went wrong, for the close's log line (a refused certificate, a proxy that said no)
    let failure = '';
    ws.on('error', (err) => void (failure = err.message));
    ws.on('close', (code, reasonBuf) => {
      const reason = reasonBuf.toString() || this.cutReason || (refusedStatus ? `HTTP ${refusedStatus}` : '') || failure;
      this.ready = false;
      this.socket = null;
      // answers lost with the connection: asked again on the next one, marked as repeats (the
      // server may have applied them: docs/agent-protocol.md, "Repeats")
      const inFlight = [...this.inFlight.values()];
      for (const p of inFlight) if (p.once) p.reject(new PlatformError('CONNECTION_LOST', 'the connection dropped before the answer'));
      const lost = inFlight.filter((p) => !p.once && !p.abandoned).map((p) => ({ ...p, message: { ...p.message, repeat: true } }));
      this.queue = [...lost, ...this.queue];
      this.inFlight.clear();
      if (this.closed) return;
      if (refusedStatus === 401 || code === 4001 || code === 4002) {
        this.closed = true;
        const why: Refusal = code === 4002 ? 'replaced' : 'key';
        this.failAll(why === 'key'
          ? new PlatformError('UNAUTHORIZED', `the platform refused the machine key (${reason})`)
          : new PlatformError('REPLACED', `the machine connected from elsewhere with the same key (${reason})`));
        this.events.refused(reason, why);
        return;
      }
      // a connection that was up and dropped: every robot of a replica that died comes back at
      // once, so the first try is spread over `spreadMs` rather than a fraction of a second
      const retryInMs = this.welcomedHere && code !== 1000 ? this.spreadDelay() : this.retryDelay();
      this.events.disconnected(code, reason, retryInMs);
      this.retryTimer = setTimeout(() => this.open(), retryInMs);
    });
  }

  private retryDelay(): number {
    const cap = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** Math.min(this.attempt++, 20));
    const delay = Math.round(this.backoff.minMs / 2 + Math.random() * cap);
    // a server that said when to come back: not before, and spread over a second after it
    return this.retryAfterMs > 0 ? Math.max(delay, this.retryAfterMs + Math.round(Math.random() * 1000)) : delay;
  }

  private spreadDelay(): number {
    const delay = Math.round(Math.random() * this.backoff.spreadMs);
    return this.retryAfterMs > 0 ? Math.max(delay, this.retryAfterMs + Math.round(Math.random() * 1000)) : delay;
  }

  private heard(): void {
    this.lastHeard = performance.now();
  }

  /** Whether a welcomed connection is open (a request now goes out at once). */
  get isReady(): boolean {
    return this.ready;
  }

  /**
   * Destroys a connection that went silent (see the class comment); its close opens the next one.
   * `now` is performance.now().
   */
  check(now: number): void {
    const ws = this.socket;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (now - this.lastHeard > this.silentAfterMs) this.cut(`nothing heard from the platform for ${Math.round(now - this.lastHeard)} ms`);
    else {
      for (const p of this.inFlight.values()) {
        if (p.sentAt !== undefined && now - p.sentAt > TIMING.requestTimeoutMs) {
          this.cut(`a ${String(p.message.type)} request unanswered for ${Math.round(now - p.sentAt)} ms`);
          return;
        }
      }
    }
  }

  private cut(reason: string): void {
    this.cutReason = reason;
    this.socket?.terminate();
  }

  private onMessage(raw: string, ws: WebSocket): void {
    let msg: { type?: string; re?: number | null } & Record<string, unknown>;
    try {
      msg = JSON.parse(raw) as typeof msg;
    } catch {
      return;
    }
    if (msg.type === 'welcome') {
      this.attempt = 0;
      this.welcomedHere = true;
      const pingMs = Number((msg as { ping_ms?: unknown }).ping_ms);
      this.silentAfterMs = 2 * (Number.isFinite(pingMs) && pingMs > 0 ? pingMs : TIMING.defaultPingMs) + TIMING.silentMarginMs;
      void this.events.welcome(msg as unknown as Welcome).then(
        () => {
          this.ready = true;
          this.flush();
        },
        () => {
          // a welcome that failed ends its own connection, never a newer one
          if (this.socket === ws) ws.terminate();
        },
      );
      return;
    }
    if (msg.type === 'reply') {
      const pending = typeof msg.re === 'number' ? this.inFlight.get(msg.re) : undefined;
      if (!pending) return;
      this.inFlight.delete(msg.re!);
      const error = msg.error as { code: string; message: string; details?: unknown } | undefined;
      if (error?.code === 'RATE_LIMIT_EXCEEDED') {
        // over the connection's message rate: the request was not run; sent again once the second turns
        const wait = Number((error.details as { retry_after_ms?: unknown } | undefined)?.retry_after_ms) || 1000;
        setTimeout(() => {
          if (this.closed) pending.reject(new PlatformError('CLOSED', 'the robot is closed'));
          else if (pending.once) pending.reject(new PlatformError('RATE_LIMIT_EXCEEDED', 'over the connection\'s message rate'));
          else if (this.ready) this.send(pending);
          else this.queue.push(pending);
        }, Math.min(wait, 1000) + Math.random() * 50);
      } else if (error) pending.reject(new PlatformError(error.code, error.message, error.details));
      else pending.resolve(msg.result);
      return;
    }
    if (typeof msg.type === 'string') this.events.push(msg as { type: string } & Record<string, unknown>);
  }

  /** A request now, on the connection being welcomed (the robot's first heartbeat). */
  requestNow(message: Record<string, unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => this.send({ message, resolve, reject }));
  }

  /**
   * A request on the welcomed connection open now, never queued nor asked again on another one
   * (a heartbeat: the next one is due anyway); rejects at once when no connection is ready.
   */
  requestOnce(message: Record<string, unknown>): Promise<unknown> {
    if (!this.ready) return Promise.reject(new PlatformError('NOT_CONNECTED', 'no connection to the platform'));
    return new Promise((resolve, reject) => this.send({ message, resolve, reject, once: true }));
  }

  /** A request once a welcomed connection is open. */
  request(message: Record<string, unknown>, options: RequestOptions = {}): Promise<unknown> {
    if (this.closed) return Promise.reject(new PlatformError('CLOSED', 'the robot is closed'));
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new PlatformError('LOST', 'the run was lost: nothing it reports counts'));
    return new Promise((resolve, reject) => {
      const pending: Pending = { message, resolve, reject, onSent: options.onSent };
      if (signal) {
        const giveUp = () => {
          pending.abandoned = true;
          this.queue = this.queue.filter((p) => p !== pending);
          reject(new PlatformError('LOST', 'the run was lost: nothing it reports counts'));
        };
        signal.addEventListener('abort', giveUp, { once: true });
        const settle = { resolve: pending.resolve, reject: pending.reject };
        pending.resolve = (v) => {
          signal.removeEventListener('abort', giveUp);
          settle.resolve(v);
        };
        pending.reject = (e) => {
          signal.removeEventListener('abort', giveUp);
          settle.reject(e);
        };
      }
      if (this.ready) this.send(pending);
      else this.queue.push(pending);
    });
  }

  private send(p: Pending): void {
    if (p.abandoned) return;
    const ws = this.socket;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      if (p.once) p.reject(new PlatformError('NOT_CONNECTED', 'no connection to the platform'));
      else this.queue.push(p);
      return;
    }
    const id = this.nextId++;
    p.sentAt = performance.now();
    this.inFlight.set(id, p);
    ws.send(JSON.stringify({ ...p.message, id }));
    p.onSent?.(p.sentAt);
  }

  private flush(): void {
    const queued = this.queue;
    this.queue = [];
    for (const p of queued) this.send(p);
  }

  private failAll(err: Error): void {
    for (const p of [...this.inFlight.values(), ...this.queue]) p.reject(err);
    this.inFlight.clear();
    this.queue = [];
  }

  /** Closes for good: what is still waiting is refused. */
  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.failAll(new PlatformError('CLOSED', 'the robot is closed'));
    this.socket?.close(1000, 'bye');
  }
}

/** A Retry-After header (seconds, or an HTTP date) in ms; 0 when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return 0;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 10 * 60_000) : 0;
}
