import { PlatformError, type Connection } from './connection';

/** The job a robot was given (docs/agent-protocol.md, `job.start`). */
export interface JobInfo {
  id: string;
  /** the run's fencing token: every write of the run carries it */
  attempt: number;
  processId: string;
  processName: string;
  input: Record<string, unknown> | null;
  /** set for a queue's consumer job: its items are taken with `ctx.items` */
  queueId: string | null;
  timeoutSeconds: number | null;
  /** how many times the job ran before (a retry's first run is 1) */
  retryCount: number;
  /** the W3C trace context the platform started the run under (to continue its trace), or null */
  trace: Record<string, string> | null;
  startedAt: string;
  timeoutAt: string | null;
}

/** An item a consumer job took from its queue. */
export interface QueueItem {
  id: string;
  /** the item's fencing token: its outcome carries it */
  attempt: number;
  reference: string | null;
  data: Record<string, unknown>;
  retryCount: number;
}

export interface ItemOutcome {
  id: string;
  attempt: number;
  status: 'completed' | 'pending_review' | 'failed';
  result?: Record<string, unknown> | null;
  error_message?: string | null;
  /** the kind of failure (only with `failed`; the platform takes `application` when it is left out) */
  exception?: ExceptionKind;
}

/**
 * The kind of a failure (docs/agent-protocol.md, "Kinds of failure"): `business` (the data itself
 * is wrong: the platform never retries it) or `application` (anything else: retried as usual).
 */
export type ExceptionKind = 'business' | 'application';

/**
 * A failure of the data, not of the robot: the invoice is already paid, the customer does not
 * exist. Thrown from an item handler it fails the item for good (no retry, no dead letter);
 * thrown from a job handler it fails the job, which the process's automatic retries skip. Any
 * other error is an application failure and is retried as before.
 */
export class BusinessError extends Error {
  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    // fixed, not the subclass's: a robot that bundles its own copy of this class is recognised by it
    this.name = 'BusinessError';
  }
}

/**
 * Whether a thrown value is a business failure: a BusinessError of this package, or any error
 * named `BusinessError` (a robot bundler may hold a second copy of this package, whose class
 * `instanceof` does not recognise).
 */
export function isBusinessError(err: unknown): boolean {
  return err instanceof BusinessError || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'BusinessError');
}

/** The kind of failure a thrown value is. */
export function exceptionOf(err: unknown): ExceptionKind {
  return isBusinessError(err) ? 'business' : 'application';
}

export interface AssetValue {
  name: string;
  type: string;
  environment: string;
  value: unknown;
}

/**
 * Why a run's signal aborted: `stop` (a person asked: end `stopped`), `timeout` (the job's own
 * time ran out here: end `timed_out`), `shutdown` (the robot is closing), `lost` (the platform
 * already ended the run: nothing it reports counts any more).
 */
export type AbortReason = 'stop' | 'timeout' | 'shutdown' | 'lost';

export interface JobContext {
  job: JobInfo;
  /** the machine the job runs on (as the platform welcomed it) */
  machine: { id: string; name: string; slots: number };
  /** aborted with an AbortReason */
  signal: AbortSignal;
  /** progress of the run (0–100) and a line saying where it is */
  progress(percent?: number | null, message?: string | null): Promise<void>;
  /** appends to the job's log */
  log(text: string): Promise<void>;
  /** progress, resource metrics and log lines in one message */
  report(r: { percent?: number | null; message?: string | null; metrics?: Record<string, unknown> | null; log?: string }): Promise<void>;
  /**
   * Asks a person and waits for the answer (the job's timeout does not run meanwhile). Rejects
   * when the run is stopped or lost while it waits.
   */
  askForInput(prompt: string, options: { choices: unknown[] } | { schema: Record<string, unknown> }, hooks?: { onWaiting?(): void }): Promise<unknown>;
  /** An asset of the machine's workspace (`production` unless another environment is named). */
  asset(name: string, environment?: 'production' | 'staging' | 'dev'): Promise<AssetValue>;
  /** A sign of life: with `livenessMs`, a run's lease is renewed only while such signs come. */
  alive(): void;
  /** The consumer job's queue (only when `job.queueId` is set). */
  items: {
    /**
     * Settles the items finished and takes up to `take` more, in one round trip; `held` names the
     * items still held unsettled (taken, not yet done), which a repeat must not hand back.
     */
    take(req: { outcomes?: ItemOutcome[]; take: number; held?: string[] }): Promise<{ settled: Array<{ id: string; status: string }>; items: QueueItem[] }>;
    /** items taken and not started go back to the queue untouched */
    release(items: Array<{ id: string; attempt: number }>): Promise<number>;
    /** whether another job waits for this machine (a consumer then gives its slot up) */
    othersWaiting(): Promise<boolean>;
  };
}

/** How a run ends when its handler wants more than "completed with this output". */
export interface JobEndFields {
  status: 'completed' | 'failed' | 'stopped' | 'timed_out';
  output?: Record<string, unknown> | null;
  error?: string | null;
  /** with `failed`: its kind (`application` when left out); ignored with any other status */
  exception?: ExceptionKind;
  percent?: number | null;
  message?: string | null;
  metrics?: Record<string, unknown> | null;
  log?: string;
}

export class JobEnd {
  constructor(readonly fields: JobEndFields) {}
}

/** A handler's explicit end: `return endJob({ status: 'failed', error: '…', output: {…} })`. */
export function endJob(fields: JobEndFields): JobEnd {
  return new JobEnd(fields);
}

/** Most bytes of log text in one message (the platform's bound of one append). */
export const LOG_CHUNK_BYTES = 64 * 1024;

/** Splits text at line ends into pieces of at most `max` bytes (a longer line is cut). */
export function logChunks(text: string, max = LOG_CHUNK_BYTES): string[] {
  if (text === '') return [];
  if (Buffer.byteLength(text, 'utf8') <= max) return [text];
  const out: string[] = [];
  let current = '';
  let size = 0;
  for (const raw of text.split(/(?<=\n)/)) {
    // at most 4 bytes per character: a cut line always fits
    const line = Buffer.byteLength(raw, 'utf8') > max ? `${raw.slice(0, Math.floor(max / 4) - 1)}\n` : raw;
    const n = Buffer.byteLength(line, 'utf8');
    if (size + n > max) {
      out.push(current);
      current = '';
      size = 0;
    }
    current += line;
    size += n;
  }
  if (current) out.push(current);
  return out;
}

/** How often a run waiting for input reads its job when no news comes (a lost push). */
const INPUT_POLL_MS = 1000;

/**
 * One run on this robot: its signal, its local timeout (paused while it waits for input), its
 * signs of life and the requests it sends, each carrying its fencing token.
 */
export class Run {
  readonly ctrl = new AbortController();
  private logSeq = 0;
  private lastSign = Date.now();
  private pending = 0;
  private timeoutTimer: NodeJS.Timeout | null = null;
  private inputNews: (() => void) | null = null;
  private inputNewsCame = false;
  done: Promise<void> = Promise.resolve();
  /**
   * When the platform last confirmed that this run owns its job (performance.now() at the sending
   * of the request it answered: a heartbeat that renewed it, its accepted acknowledgement); null
   * before the first confirmation, while the run has not started.
   */
  confirmedAt: number | null = null;

  constructor(
    readonly info: JobInfo,
    readonly machine: { id: string; name: string; slots: number },
    private readonly conn: Connection,
    private readonly livenessMs: () => number | undefined,
    private readonly traceCarrier?: () => Record<string, string> | undefined,
  ) {
    this.armTimeout(info.timeoutAt);
  }

  get fenced(): { job_id: string; attempt: number } {
    return { job_id: this.info.id, attempt: this.info.attempt };
  }

  /** set once the run is lost, whatever aborted it first (a stop, a shutdown, its timeout) */
  private readonly lostCtrl = new AbortController();

  abort(reason: AbortReason): void {
    if (reason === 'lost') this.lostCtrl.abort();
    if (!this.ctrl.signal.aborted) this.ctrl.abort(reason);
  }

  confirm(sentAt: number): void {
    if (this.confirmedAt === null || sentAt > this.confirmedAt) this.confirmedAt = sentAt;
  }

  /**
   * Lost (the platform said so, or it could not confirm the run in time), even when something
   * else aborted it first: nothing it reports counts any more.
   */
  get lost(): boolean {
    return this.lostCtrl.signal.aborted;
  }

  /** Whether the run shows signs of life (a request of its is in flight: the platform is the slow one). */
  alive(now = Date.now()): boolean {
    const ms = this.livenessMs();
    return ms === undefined || this.pending > 0 || now - this.lastSign < ms;
  }

  sign(): void {
    this.lastSign = Date.now();
  }

  armTimeout(at: string | null): void {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.timeoutTimer = at ? setTimeout(() => this.abort('timeout'), Math.max(0, Date.parse(at) - Date.now())) : null;
  }

  /** The answer to a question of this run was announced. */
  onInput(): void {
    if (this.inputNews) this.inputNews();
    else this.inputNewsCame = true;
  }

  end(): void {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
  }

  /**
   * A request of this run. Refused as stale (CONFLICT) or unknown (NOT_FOUND), the run no longer
   * owns its job: its signal aborts (`lost`, or `stop` when a stop was what refused it).
   */
  async request<T>(message: Record<string, unknown>, options: { onSent?(at: number): void } = {}): Promise<T> {
    if (this.lost) throw new PlatformError('LOST', 'the run was lost: nothing it reports counts');
    this.pending++;
    try {
      const trace = this.traceCarrier?.();
      // given up the moment the run is lost: a handler waiting on a silent connection stops with
      // its run, and nothing of a lost run goes out afterwards
      return (await this.conn.request({ ...message, ...this.fenced, ...(trace ? { trace } : {}) }, { ...options, signal: this.lostCtrl.signal })) as T;
    } catch (err) {
      // an asset's 404 is about the asset, not the run
      if (err instanceof PlatformError && (err.code === 'CONFLICT' || (err.code === 'NOT_FOUND' && message.type !== 'asset.get'))) {
        this.abort((err.details as { stop_requested?: boolean } | undefined)?.stop_requested ? 'stop' : 'lost');
      }
      throw err;
    } finally {
      this.pending--;
      this.sign();
    }
  }




  private reports: Promise<unknown> = Promise.resolve();

  /** Runs `fn` once every report asked before it has been answered (or has failed). */
  inLogOrder<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.reports.then(fn, fn);
    this.reports = next.catch(() => undefined);
    return next;
  }

  /** Log text as numbered chunks: all but the last sent on their own, the last returned to ride along. */
  async logAppend(text: string | undefined): Promise<{ text: string; seq: number } | undefined> {
    const chunks = logChunks(text ?? '').map((t) => ({ text: t, seq: ++this.logSeq }));
    const last = chunks.pop();
    for (const c of chunks) await this.progressMessage({ log: c });
    return last;
  }

  async progressMessage(fields: Record<string, unknown>): Promise<void> {
    const r = await this.request<{ stop_requested: boolean }>({ type: 'job.progress', ...fields });
    if (r.stop_requested) this.abort('stop');
  }

  context(): JobContext {
    // one report after the other, even when the handler does not wait for them: log appends are
    // numbered, and one arriving after a later one would be taken for a repeat and dropped
    const report: JobContext['report'] = (r) => this.inLogOrder(async () => {
      const log = await this.logAppend(r.log);
      const fields: Record<string, unknown> = {};
      if (r.percent !== undefined) fields.progress_percent = r.percent;
      if (r.message !== undefined) fields.progress_message = r.message;
      if (r.metrics !== undefined) fields.resource_metrics = r.metrics;
      if (log) fields.log = log;
      await this.progressMessage(fields);
    });
    return {
      job: this.info,
      machine: this.machine,
      signal: this.ctrl.signal,
      report,
      progress: (percent, message) => report({ percent, message }),
      log: (text) => report({ log: text.endsWith('\n') ? text : `${text}\n` }),
      askForInput: (prompt, options, hooks) => this.askForInput(prompt, options, hooks?.onWaiting),
      asset: (name, environment) => this.request<AssetValue>({ type: 'asset.get', name, ...(environment ? { environment } : {}) }),
      alive: () => this.sign(),
      items: {
        take: async (req) => {
          const r = await this.request<{ settled: Array<{ id: string; status: string }>; items: Array<Record<string, unknown>> }>({
            type: 'items.take', outcomes: req.outcomes ?? [], take: req.take, ...(req.held?.length ? { held: req.held } : {}),
          });
          return {
            settled: r.settled,
            items: r.items.map((i) => ({
              id: i.id as string, attempt: i.attempt as number, reference: (i.reference as string | null) ?? null,
              data: (i.data as Record<string, unknown>) ?? {}, retryCount: (i.retry_count as number) ?? 0,
            })),
          };
        },
        release: async (items) => items.length ? (await this.request<{ released: number }>({ type: 'items.release', items })).released : 0,
        othersWaiting: async () => (await this.request<{ waiting: boolean }>({ type: 'jobs.waiting' })).waiting,
      },
    };
  }

  private async askForInput(prompt: string, options: unknown, onWaiting?: () => void): Promise<unknown> {
    this.inputNewsCame = false;
    await this.request({ type: 'job.input.ask', prompt, options });
    // the job's timeout does not run while it waits
    this.armTimeout(null);
    onWaiting?.();
    for (;;) {
      await this.waitForInputNews();
      const state = await this.request<{ status: string; stop_requested: boolean; answer: { value: unknown } | null; timeout_at: string | null }>({ type: 'job.input.read' });
      if (state.status === 'running' && state.answer) {
        this.armTimeout(state.timeout_at);
        return state.answer.value;
      }
      if (state.status === 'waiting_input') continue;
      this.abort(state.status === 'stopped' || state.stop_requested ? 'stop' : 'lost');
      throw new Error(`aborted: ${String(this.ctrl.signal.reason)}`);
    }
  }

  private waitForInputNews(): Promise<void> {
    const signal = this.ctrl.signal;
    if (signal.aborted) return Promise.reject(new Error(`aborted: ${String(signal.reason)}`));
    if (this.inputNewsCame) {
      this.inputNewsCame = false;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.inputNews = null;
      };
      const onAbort = () => {
        done();
        reject(new Error(`aborted: ${String(signal.reason)}`));
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, INPUT_POLL_MS);
      this.inputNews = () => {
        done();
        this.sign();
        resolve();
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
