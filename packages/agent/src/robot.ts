import os from 'node:os';
import { Connection, PlatformError, type Welcome } from './connection';

/** The job a robot was given (docs/agent-protocol.md, `job.start`). */
export interface JobInfo {
  id: string;
  /** the run's fencing token: every write of the run carries it */
  attempt: number;
  processId: string;
  processName: string;
  input: Record<string, unknown> | null;
  queueId: string | null;
  startedAt: string;
  timeoutAt: string | null;
}

export interface JobContext {
  job: JobInfo;
  /** aborted when the job is stopped (reason `stop`), times out, or the platform ended the run */
  signal: AbortSignal;
  /** progress of the run (0–100) and a line saying where it is */
  progress(percent?: number | null, message?: string | null): Promise<void>;
  /** appends to the job's log */
  log(text: string): Promise<void>;
}

/** Runs a job; what it returns becomes the job's `output_data`, what it throws its failure. */
export type JobHandler = (ctx: JobContext) => Promise<Record<string, unknown> | void>;

export interface ConnectOptions {
  /** the platform's base URL; several separated by commas are tried in turn */
  url: string;
  machineKey: string;
  onJob: JobHandler;
  agentVersion?: string;
  /** reconnection back-off (full jitter) */
  backoff?: { minMs?: number; maxMs?: number };
  logger?: { info(msg: string, meta?: object): void; warn(msg: string, meta?: object): void };
}

export interface Robot {
  /** resolves once connected and welcomed the first time (rejects when the key is refused) */
  readonly ready: Promise<Welcome['machine']>;
  /** runs in progress */
  readonly running: number;
  /**
   * Graceful stop: running jobs get `graceMs` to finish, then are aborted (and end `stopped`);
   * the machine is then marked offline.
   */
  close(graceMs?: number): Promise<void>;
}

interface Run {
  info: JobInfo;
  ctrl: AbortController;
  logSeq: number;
  done: Promise<void>;
}

/** Thrown into a handler's signal when the platform ended the run: its result is not reported. */
const LOST = 'lost';

/**
 * Connects a machine to the platform with its machine key alone and runs the jobs it is given
 * (docs/agent-protocol.md): heartbeats keep the machine online and the runs' leases alive; a stop
 * aborts the run's signal; a dropped connection is opened again (to the next URL) and the runs go
 * on — the first heartbeat of the new connection takes them over, nothing restarts.
 */
export function connect(options: ConnectOptions): Robot {
  const urls = options.url.split(',').map((u) => u.trim()).filter(Boolean);
  if (urls.length === 0) throw new TypeError('connect: url is empty');
  if (!options.machineKey) throw new TypeError('connect: machineKey is empty');
  const log = options.logger ?? { info: () => undefined, warn: () => undefined };
  const runs = new Map<string, Run>();
  let heartbeatMs = 5000;
  let beatTimer: NodeJS.Timeout | null = null;
  let closing = false;
  let resolveReady!: (m: Welcome['machine']) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<Welcome['machine']>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);

  const heartbeatMessage = () => ({
    type: 'heartbeat',
    running: [...runs.values()].map((r) => ({ job_id: r.info.id, attempt: r.info.attempt, alive: true })),
    agent_version: options.agentVersion ?? 'svc-agent/0.1.0',
    host: { hostname: os.hostname(), pid: process.pid, platform: process.platform },
  });

  /** The answer to a heartbeat: runs the platform no longer gives this robot are aborted. */
  const onBeat = (result: unknown) => {
    const answer = result as { runs: Array<{ job_id: string; owned: boolean; stop_requested: boolean }> };
    for (const r of answer.runs ?? []) {
      const run = runs.get(r.job_id);
      if (!run) continue;
      if (!r.owned) run.ctrl.abort(LOST);
      else if (r.stop_requested) run.ctrl.abort('stop');
    }
  };

  const beat = () => {
    beatTimer = setTimeout(() => {
      conn.request(heartbeatMessage()).then(onBeat, (err) => log.warn('heartbeat failed', { err: (err as Error).message })).finally(() => {
        if (!closing) beat();
      });
    }, heartbeatMs);
    beatTimer.unref();
  };

  const conn = new Connection(urls, options.machineKey, {
    async welcome(w) {
      heartbeatMs = w.heartbeat_ms;
      // the runs this robot still has go first: the new connection takes them over
      onBeat(await conn.requestNow(heartbeatMessage()));
      log.info('connected', { machine: w.machine.name });
      resolveReady(w.machine);
      if (!beatTimer && !closing) beat();
    },
    push(msg) {
      if (msg.type === 'job.start' && !closing) start(msg.job as Record<string, unknown>);
      else if (msg.type === 'job.stop') runs.get(msg.job_id as string)?.ctrl.abort(msg.reason === 'stop' ? 'stop' : msg.reason === 'timeout' ? 'timeout' : LOST);
    },
    disconnected(code, reason, retryInMs) {
      log.warn('connection lost', { code, reason, retry_in_ms: retryInMs });
    },
    refused(reason) {
      log.warn('machine key refused', { reason });
      rejectReady(new PlatformError('UNAUTHORIZED', `the platform refused the machine key (${reason})`));
      for (const r of runs.values()) r.ctrl.abort(LOST);
    },
  }, { minMs: options.backoff?.minMs ?? 200, maxMs: options.backoff?.maxMs ?? 5000 });

  function start(job: Record<string, unknown>): void {
    const info: JobInfo = {
      id: job.id as string,
      attempt: job.attempt as number,
      processId: job.process_id as string,
      processName: job.process_name as string,
      input: (job.input_data as Record<string, unknown> | null) ?? null,
      queueId: (job.queue_id as string | null) ?? null,
      startedAt: job.started_at as string,
      timeoutAt: (job.timeout_at as string | null) ?? null,
    };
    if (runs.has(info.id)) return;
    const ctrl = new AbortController();
    const run: Run = { info, ctrl, logSeq: 0, done: Promise.resolve() };
    runs.set(info.id, run);
    run.done = execute(run).finally(() => runs.delete(info.id));
  }

  async function execute(run: Run): Promise<void> {
    const { info, ctrl } = run;
    const fenced = { job_id: info.id, attempt: info.attempt };
    const timeout = info.timeoutAt ? setTimeout(() => ctrl.abort('timeout'), Math.max(0, Date.parse(info.timeoutAt) - Date.now())) : null;
    const ctx: JobContext = {
      job: info,
      signal: ctrl.signal,
      progress: async (percent, message) => {
        const r = (await conn.request({ type: 'job.progress', ...fenced, progress_percent: percent ?? undefined, progress_message: message ?? undefined })) as { stop_requested: boolean };
        if (r.stop_requested) ctrl.abort('stop');
      },
      log: async (text) => {
        const r = (await conn.request({ type: 'job.progress', ...fenced, log: { text, seq: ++run.logSeq } })) as { stop_requested: boolean };
        if (r.stop_requested) ctrl.abort('stop');
      },
    };
    let end: Record<string, unknown>;
    try {
      const output = await options.onJob(ctx);
      end = { status: 'completed', output_data: output ?? null };
    } catch (err) {
      const reason = ctrl.signal.aborted ? ctrl.signal.reason : null;
      if (reason === LOST) return;
      end = reason === 'stop'
        ? { status: 'stopped' }
        : reason === 'timeout'
          ? { status: 'timed_out', error_message: 'El robot agotó el tiempo del job' }
          : { status: 'failed', error_message: (err as Error)?.message || String(err) };
    } finally {
      if (timeout) clearTimeout(timeout);
    }
    try {
      await conn.request({ type: 'job.finish', ...fenced, ...end });
    } catch (err) {
      // a run the platform already ended (timeout, lost): its result is dropped
      if (!(err instanceof PlatformError) || (err.code !== 'CONFLICT' && err.code !== 'NOT_FOUND' && err.code !== 'CLOSED')) throw err;
      log.info('result of a run that no longer owns its job dropped', { job_id: info.id, code: err.code });
    }
  }

  conn.open();

  return {
    ready,
    get running() {
      return runs.size;
    },
    async close(graceMs = 10_000) {
      closing = true;
      if (beatTimer) clearTimeout(beatTimer);
      const finished = Promise.all([...runs.values()].map((r) => r.done.catch(() => undefined)));
      const force = setTimeout(() => {
        for (const r of runs.values()) r.ctrl.abort('stop');
      }, graceMs);
      await finished;
      clearTimeout(force);
      // a robot that cannot reach the platform just goes: the machine is offline once its heartbeats stop
      await Promise.race([conn.request({ type: 'bye' }).catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
      conn.close();
    },
  };
}
