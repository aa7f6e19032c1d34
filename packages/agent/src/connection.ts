import WebSocket from 'ws';

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
}

export interface ConnectionEvents {
  /** a connection opened and was welcomed; resolve when the robot has told it what it holds */
  welcome(welcome: Welcome): Promise<void>;
  /** a message the server pushed (`job.start`, `job.stop`) */
  push(message: { type: string } & Record<string, unknown>): void;
  /** why a connection closed, and in how long the next one is tried */
  disconnected(code: number, reason: string, retryInMs: number): void;
  /** the server refused the credential (401, or close 4001): no retry */
  refused(reason: string): void;
}

interface Pending {
  message: Record<string, unknown>;
  resolve(result: unknown): void;
  reject(err: Error): void;
}

/**
 * One robot's link to the platform: a WebSocket to one of `urls`, opened again with exponential
 * back-off and full jitter whenever it drops (each try moves to the next URL). Requests wait for
 * an open, welcomed connection; a request whose answer was lost with its connection is sent again
 * on the next one (every request of the protocol may be repeated: docs/agent-protocol.md).
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

  constructor(
    private readonly urls: string[],
    private readonly machineKey: string,
    private readonly events: ConnectionEvents,
    private readonly backoff: { minMs: number; maxMs: number },
  ) {}

  open(): void {
    if (this.closed) return;
    const base = this.urls[this.urlIndex % this.urls.length]!.replace(/\/+$/, '');
    this.urlIndex++;
    const url = `${base.replace(/^http/, 'ws')}/api/v1/agent/connect`;
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${this.machineKey}` }, handshakeTimeout: 10_000 });
    this.socket = ws;
    let refusedStatus = 0;
    ws.on('unexpected-response', (_req, res) => {
      refusedStatus = res.statusCode ?? 0;
      res.resume();
      ws.terminate();
    });
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('error', () => undefined);
    ws.on('close', (code, reasonBuf) => {
      const reason = reasonBuf.toString() || (refusedStatus ? `HTTP ${refusedStatus}` : '');
      this.ready = false;
      this.socket = null;
      // answers lost with the connection: asked again on the next one, marked as repeats (the
      // server may have applied them: docs/agent-protocol.md, "Repeats")
      const lost = [...this.inFlight.values()].map((p) => ({ ...p, message: { ...p.message, repeat: true } }));
      this.queue = [...lost, ...this.queue];
      this.inFlight.clear();
      if (this.closed) return;
      if (refusedStatus === 401 || code === 4001) {
        this.closed = true;
        this.failAll(new PlatformError('UNAUTHORIZED', `the platform refused the machine key (${reason})`));
        this.events.refused(reason);
        return;
      }
      const retryInMs = this.retryDelay();
      this.events.disconnected(code, reason, retryInMs);
      this.retryTimer = setTimeout(() => this.open(), retryInMs);
    });
  }

  private retryDelay(): number {
    const cap = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** Math.min(this.attempt++, 20));
    return Math.round(this.backoff.minMs / 2 + Math.random() * cap);
  }

  private onMessage(raw: string): void {
    let msg: { type?: string; re?: number | null } & Record<string, unknown>;
    try {
      msg = JSON.parse(raw) as typeof msg;
    } catch {
      return;
    }
    if (msg.type === 'welcome') {
      this.attempt = 0;
      void this.events.welcome(msg as unknown as Welcome).then(
        () => {
          this.ready = true;
          this.flush();
        },
        () => this.socket?.terminate(),
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

  /** A request once a welcomed connection is open. */
  request(message: Record<string, unknown>): Promise<unknown> {
    if (this.closed) return Promise.reject(new PlatformError('CLOSED', 'the robot is closed'));
    return new Promise((resolve, reject) => {
      const pending = { message, resolve, reject };
      if (this.ready) this.send(pending);
      else this.queue.push(pending);
    });
  }

  private send(p: Pending): void {
    const ws = this.socket;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      this.queue.push(p);
      return;
    }
    const id = this.nextId++;
    this.inFlight.set(id, p);
    ws.send(JSON.stringify({ ...p.message, id }));
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
