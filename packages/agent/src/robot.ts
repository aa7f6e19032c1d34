import os from 'node:os';
import { Connection, PlatformError, TIMING, type Refusal, type Welcome } from './connection';
import { consumeItems, type ItemHandler } from './consumer';
import { JobEnd, Run, exceptionOf, type AbortReason, type JobContext, type JobInfo } from './run';
import { urlRefusal, type TransportOptions } from './transport';

/**
 * Runs a job. What it returns becomes the job's `output_data` (or, with `endJob(…)`, the whole
 * end); what it throws, its failure — unless the signal aborted first: a stop ends it `stopped`, its
 * own timeout `timed_out`. A thrown `BusinessError` is a business failure (`exception: 'business'`:
 * the process's automatic retries skip the job), any other error an application failure.
 */
export type JobHandler = (ctx: JobContext) => Promise<Record<string, unknown> | JobEnd | void>;

/** How often the robot's clock looks at its connection and its runs' confirmations. */
const CLOCK_MS = 100;
/** Refusals after which a run's result is simply dropped: the run was lost, or the robot closed. */
const DROPPED = new Set(['CLOSED', 'LOST', 'UNAUTHORIZED', 'REPLACED']);

export interface ConnectOptions extends TransportOptions {
  /** the platform's base URL; several separated by commas are tried in turn */
  url: string;
  machineKey: string;
  /** runs the machine's jobs (a consumer job too, unless `onItem` is given) */
  onJob: JobHandler;
  /**
   * Processes one item of a consumer job's queue: what it returns becomes the item's result (or,
   * with `{ status: 'pending_review' }` / a thrown error, a review or a failure).
   */
  onItem?: ItemHandler;
  agentVersion?: string;
  /** heartbeat more often than the platform asks (never less often) */
  heartbeatMs?: number;
  /**
   * With it, a run's lease is renewed only while the run shows a sign of life (`ctx.alive()`, any
   * request of it) within this many ms (`'lease'`: the lease the platform gives); a robot stuck for
   * longer loses the job to a retry.
   */
  livenessMs?: number | 'lease';
  /**
   * Runs each job's whole execution (its handler and its end) inside this, e.g. in a tracing span
   * continuing `job.trace`.
   */
  around?(job: JobInfo, execute: () => Promise<void>): Promise<void>;
  /** the W3C trace context to send with each request of a run (called in the request's async context) */
  traceCarrier?(): Record<string, string> | undefined;
  /**
   * A run ended: the job's final status as the platform recorded it, or null when its end was
   * refused or never sent; `lost` when the run was aborted as lost (by the platform's word, or
   * because the platform could not confirm it in time), called as the handler stops.
   */
  onJobEnd?(job: JobInfo, status: string | null, lost?: boolean): void;
  /**
   * Reconnection: exponential back-off with full jitter between failed tries, and the first try
   * after a working connection dropped spread over `spreadMs` (a fleet must not come back at once)
   */
  backoff?: { minMs?: number; maxMs?: number; spreadMs?: number };
  logger?: { info(msg: string, meta?: object): void; warn(msg: string, meta?: object): void };
}

export interface Robot {
  /** resolves once connected and welcomed the first time (rejects when the key is refused) */
  readonly ready: Promise<Welcome['machine']>;
  /**
   * Resolves when the platform turned this robot away for good: its key was refused (`key`), or
   * the same machine connected from another process or host (`replaced`, a cloned VM). The robot
   * has stopped then; it never resolves otherwise.
   */
  readonly refused: Promise<{ why: Refusal; reason: string }>;
  /** runs in progress */
  readonly running: number;
  /**
   * Graceful stop: no new job; consumer jobs finish their current item and hand back the rest at
   * once; other runs get `graceMs` to finish, then their signal aborts (`shutdown`); the machine
   * is then marked offline.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * Connects a machine to the platform with its machine key alone and runs the jobs it is given
 * (docs/agent-protocol.md): heartbeats keep the machine online and the runs' leases alive; a stop
 * aborts the run's signal; a dropped connection is opened again (to the next URL) and the runs go
 * on — the first heartbeat of the new connection takes them over, nothing restarts.
 */
export function connect(options: ConnectOptions): Robot {
  const urls = options.url.split(',').map((u) => u.trim()).filter(Boolean);
  if (urls.length === 0) throw new TypeError('connect: url is empty');
  for (const u of urls) {
    const refusal = urlRefusal(u, options);
    if (refusal) throw new TypeError(`connect: ${refusal}`);
  }
  if (!options.machineKey) throw new TypeError('connect: machineKey is empty');
  const log = options.logger ?? { info: () => undefined, warn: () => undefined };
  const runs = new Map<string, Run>();
  /** the platform's heartbeat period (the robot may beat more often: `beatMs`) */
  let heartbeatMs = 5000;
  let beatMs = 5000;
  let leaseMs: number | undefined;
  let machine: Welcome['machine'] = { id: '', name: '', slots: 0 };
  const livenessMs = () => (options.livenessMs === 'lease' ? leaseMs : options.livenessMs);
  let beatTimer: NodeJS.Timeout | null = null;
  let clockTimer: NodeJS.Timeout | null = null;
  /** the platform welcomed this robot at least once (a robot that never got in has no goodbye to say) */
  let welcomed = false;
  let closing = false;
  let resolveRefused!: (r: { why: Refusal; reason: string }) => void;
  const refused = new Promise<{ why: Refusal; reason: string }>((resolve) => (resolveRefused = resolve));
  /** heartbeats end only once the runs have (their leases must last through the grace period) */
  let stopped = false;
  /** the first heartbeat of this process tells the platform it runs nothing from before */
  let fresh = true;
  let resolveReady!: (m: Welcome['machine']) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<Welcome['machine']>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);

  const heartbeatMessage = () => {
    const now = Date.now();
    // a run this robot gave up as lost is not renewed: the platform ends it once its lease lapses
    const running = [...runs.values()].filter((r) => !r.lost).map((r) => ({ job_id: r.info.id, attempt: r.info.attempt, alive: r.alive(now) }));
    const message = {
      type: 'heartbeat',
      ...(fresh && running.length === 0 ? { fresh: true } : {}),
      running,
      agent_version: options.agentVersion ?? 'svc-agent/0.1.0',
      host: { hostname: os.hostname(), pid: process.pid, platform: process.platform },
    };
    fresh = false;
    return message;
  };

  /**
   * The answer to a heartbeat sent at `sentAt` (performance.now()): runs the platform no longer
   * gives this robot are aborted; those it renewed (listed alive, and owned) are confirmed from
   * the moment the heartbeat left, never from its answer's arrival.
   */
  const onBeat = (result: unknown, sentAt: number, message: { running: Array<{ job_id: string; attempt: number; alive: boolean }> }) => {
    const answer = result as { runs: Array<{ job_id: string; owned: boolean; stop_requested: boolean }> };
    const renewed = new Set(message.running.filter((r) => r.alive).map((r) => `${r.job_id}/${r.attempt}`));
    for (const r of answer.runs ?? []) {
      const run = runs.get(r.job_id);
      if (!run) continue;
      if (!r.owned) run.abort('lost');
      else {
        if (renewed.has(`${run.info.id}/${run.info.attempt}`)) run.confirm(sentAt);
        if (r.stop_requested) run.abort('stop');
      }
    }
  };

  /** One heartbeat on the connection open now; none while there is none (the next welcome sends one). */
  const sendBeat = () => {
    if (stopped || !conn.isReady) return;
    const message = heartbeatMessage();
    const sentAt = performance.now();
    conn.requestOnce(message).then((r) => onBeat(r, sentAt, message), (err) => {
      if (!(err instanceof PlatformError && (err.code === 'CONNECTION_LOST' || err.code === 'NOT_CONNECTED' || err.code === 'CLOSED'))) {
        log.warn('heartbeat failed', { err: (err as Error).message });
      }
    });
  };

  /** Heartbeats on a fixed period: a late answer does not hold the next one back. */
  const beatEvery = (ms: number) => {
    if (beatTimer && ms === beatMs) return;
    if (beatTimer) clearInterval(beatTimer);
    beatMs = ms;
    beatTimer = setInterval(sendBeat, ms);
    beatTimer.unref();
  };

  /**
   * The robot's own clock: a silent connection is destroyed (and opened again), and a run whose
   * ownership was last confirmed longer ago than `lease − heartbeat` is aborted as lost, before
   * the platform may hand its job or items to another robot (docs/agent-protocol.md, "Ownership").
   */
  const tick = () => {
    const now = performance.now();
    conn.check(now);
    if (leaseMs === undefined) return;
    const abortAfterMs = leaseMs - heartbeatMs;
    for (const run of runs.values()) {
      if (run.lost || run.confirmedAt === null || now - run.confirmedAt <= abortAfterMs) continue;
      log.warn('run aborted: the platform has not confirmed it for too long', {
        job_id: run.info.id, attempt: run.info.attempt, unconfirmed_ms: Math.round(now - run.confirmedAt),
      });
      run.abort('lost');
    }
  };

  const conn = new Connection(urls, options.machineKey, {
    async welcome(w) {
      heartbeatMs = w.heartbeat_ms;
      leaseMs = w.lease_seconds * 1000;
      // before anything else: a job.start may come in the same chunk as the heartbeat's answer
      machine = w.machine;
      // the runs this robot still has go first: the new connection takes them over
      const first = heartbeatMessage();
      const sentAt = performance.now();
      onBeat(await conn.requestNow(first), sentAt, first);
      log.info('connected', { machine: w.machine.name });
      welcomed = true;
      resolveReady(w.machine);
      if (!stopped) beatEvery(Math.min(w.heartbeat_ms, options.heartbeatMs ?? Infinity));
    },
    push(msg) {
      // a robot that is leaving does not acknowledge it: the platform hands it back at the bye
      if (msg.type === 'job.start' && !closing) start(msg.job as Record<string, unknown>);
      else if (msg.type === 'job.stop') {
        // a timeout announced by the platform ended the run there: like any other loss
        runs.get(msg.job_id as string)?.abort(msg.reason === 'stop' ? 'stop' : 'lost');
      } else if (msg.type === 'job.input') runs.get(msg.job_id as string)?.onInput();
    },
    disconnected(code, reason, retryInMs) {
      log.warn('connection lost', { code, reason, retry_in_ms: retryInMs });
    },
    refused(reason, why) {
      if (why === 'key') log.warn('machine key refused', { reason });
      else log.warn('the same machine connected from another process or host with this key: this robot stops', { reason });
      rejectReady(why === 'key'
        ? new PlatformError('UNAUTHORIZED', `the platform refused the machine key (${reason})`)
        : new PlatformError('REPLACED', `the machine connected from elsewhere with the same key (${reason})`));
      stopTimers();
      for (const r of runs.values()) r.abort('lost');
      resolveRefused({ why, reason });
    },
  }, { minMs: options.backoff?.minMs ?? TIMING.reconnect.minMs, maxMs: options.backoff?.maxMs ?? TIMING.reconnect.maxMs, spreadMs: options.backoff?.spreadMs ?? TIMING.reconnect.spreadMs }, { ca: options.ca, proxy: options.proxy });

  function stopTimers(): void {
    stopped = true;
    if (beatTimer) clearInterval(beatTimer);
    if (clockTimer) clearInterval(clockTimer);
    beatTimer = null;
    clockTimer = null;
  }

  function start(job: Record<string, unknown>): void {
    const info: JobInfo = {
      id: job.id as string,
      attempt: job.attempt as number,
      processId: job.process_id as string,
      processName: job.process_name as string,
      input: (job.input_data as Record<string, unknown> | null) ?? null,
      queueId: (job.queue_id as string | null) ?? null,
      timeoutSeconds: (job.timeout_seconds as number | null) ?? null,
      retryCount: (job.retry_count as number | undefined) ?? 0,
      trace: (job.trace as Record<string, string> | undefined) ?? null,
      startedAt: job.started_at as string,
      timeoutAt: (job.timeout_at as string | null) ?? null,
    };
    if (runs.has(info.id)) return;
    const run = new Run(info, machine, conn, livenessMs, options.traceCarrier);
    runs.set(info.id, run);
    // the run starts once the platform has its acknowledgement: a run never acknowledged is handed
    // out again, so it must not have done anything. A refusal means the run is no longer this
    // robot's (lost); a dropped connection leaves the acknowledgement to the next heartbeat
    // an accepted acknowledgement renews the run's lease: its ownership is confirmed from the
    // moment it went out (its last sending, when it was asked again on another connection)
    let sentAt = performance.now();
    const acknowledged = run.request<{ stop_requested: boolean }>({ type: 'job.started' }, { onSent: (at) => (sentAt = at) }).then((r) => {
      run.confirm(sentAt);
      // an answer that took longer than the run may go unconfirmed: given up before it starts
      tick();
      if (r.stop_requested) run.abort('stop');
      return true;
      // any refusal (stale, not this connection's, or an error of the platform's) leaves the run
      // unconfirmed: it never starts, so no robot works on a run this one cannot confirm
    }, () => false);
    run.done = acknowledged.then((go) => {
      if (!go || run.lost) return options.onJobEnd?.(info, null, run.lost);
      return options.around ? options.around(info, () => execute(run)) : execute(run);
    }).catch((err) => {
      // a run's end must never become an unhandled rejection: that would end the robot's process
      log.warn('run ended with an error', { job_id: info.id, err: (err as Error)?.message ?? String(err) });
    }).finally(() => {
      run.end();
      runs.delete(info.id);
    });
  }

  async function execute(run: Run): Promise<void> {
    const ctx = run.context();
    let end: Record<string, unknown>;
    /** the end's own log text: appended in order after whatever the run still sends */
    let endLog: string | undefined;
    try {
      const result = run.info.queueId && options.onItem ? await consumeItems(ctx, options.onItem) : await options.onJob(ctx);
      if (result instanceof JobEnd) {
        const f = result.fields;
        end = {
          status: f.status, output_data: f.output ?? null, error_message: f.error ?? null,
          // a kind of failure only goes with a failure: the platform refuses it on any other end
          ...(f.status === 'failed' ? { exception: f.exception ?? 'application' } : {}),
          ...(f.percent !== undefined ? { progress_percent: f.percent } : {}),
          ...(f.message !== undefined ? { progress_message: f.message } : {}),
          ...(f.metrics !== undefined ? { resource_metrics: f.metrics } : {}),
        };
        endLog = f.log;
      } else end = { status: 'completed', output_data: result ?? null };
    } catch (err) {
      const reason = run.ctrl.signal.aborted ? (run.ctrl.signal.reason as AbortReason) : null;
      end = reason === 'stop'
        ? { status: 'stopped' }
        : reason === 'timeout'
          ? { status: 'timed_out', error_message: `Tiempo de ejecución agotado: superó timeout_seconds (${run.info.timeoutSeconds} s)` }
          : { status: 'failed', error_message: (err as Error)?.message || String(err), exception: exceptionOf(err) };
    }
    let status: string | null = null;
    // lost (the platform ended the run, or could not confirm it in time): its end would be
    // refused, or would race whatever robot holds the job now; the platform ends it by its lease
    if (run.lost) {
      options.onJobEnd?.(run.info, null, true);
      return;
    }
    try {
      // after the reports the handler left unawaited: its last log lines come before its end
      status = await run.inLogOrder(async () => {
        const tail = await run.logAppend(endLog).catch(() => undefined);
        return (await run.request<{ status: string }>({ type: 'job.finish', ...end, ...(tail ? { log: tail } : {}) })).status;
      });
    } catch (err) {
      // a run the platform already ended (timeout, lost), or lost while its end waited: dropped
      if (!(err instanceof PlatformError) || !(err.code === 'CONFLICT' || err.code === 'NOT_FOUND' || DROPPED.has(err.code))) throw err;
      log.info('result of a run that no longer owns its job dropped', { job_id: run.info.id, code: err.code });
    }
    options.onJobEnd?.(run.info, status, run.lost || undefined);
  }

  /** The bye, asked again after an error answer until `deadline`; true once the platform answered it. */
  async function sayBye(deadline: number): Promise<boolean> {
    const timeUp = new Promise<false>((r) => setTimeout(() => r(false), Math.max(0, deadline - Date.now())).unref());
    const attempt = async (): Promise<boolean> => {
      for (;;) {
        try {
          await conn.request({ type: 'bye' });
          return true;
        } catch (err) {
          if (err instanceof PlatformError && err.code === 'CLOSED') return false;
          log.warn('bye refused: asking again', { err: (err as Error).message });
          if (Date.now() + 250 >= deadline) return false;
          await new Promise((r) => setTimeout(r, 250).unref());
        }
      }
    };
    return Promise.race([attempt(), timeUp]);
  }

  conn.open();
  // from the start: a connection that goes silent before its first welcome is found out too
  clockTimer = setInterval(tick, CLOCK_MS).unref();

  return {
    ready,
    refused,
    get running() {
      return runs.size;
    },
    async close(graceMs = 10_000) {
      closing = true;
      // consumers leave right away (their queue will get a new consumer elsewhere)
      for (const r of runs.values()) if (r.info.queueId) r.abort('shutdown');
      const finished = Promise.all([...runs.values()].map((r) => r.done.catch(() => undefined)));
      const force = setTimeout(() => {
        for (const r of runs.values()) r.abort('shutdown');
      }, graceMs);
      await finished;
      clearTimeout(force);
      stopTimers();
      // a robot that cannot reach the platform just goes: the machine is offline once its heartbeats
      // stop. The bound is for a platform that does not answer at all; one under load may take
      // seconds to write the goodbye, and a robot that left before it leaves its machine online
      // until the offline sweep. An error answer (a transient failure) is asked again within it
      const deadline = Date.now() + 10_000;
      const said = welcomed && (await sayBye(deadline));
      if (!said && welcomed) log.warn('the platform did not acknowledge the bye: the machine goes offline once its heartbeats are missed');
      conn.close();
    },
  };
}
