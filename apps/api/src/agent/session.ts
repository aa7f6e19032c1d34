import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import { RateLimiterQueue, type RateLimiterMemory } from 'rate-limiter-flexible';
import type { WebSocket } from 'ws';
import type { Liveness } from './liveness';
import {
  es, AppError, ConflictError, NotFoundError, RateLimitError, ValidationError, jsonInputIssue, jsonTextMayHoldUnstorable, machineQueueName, retryOnConnectionLoss, deliverLater, skipDelivery, validate, type DbOutage, type Engine, type JobAbortMessage, type JobInputMessage, type Logger, type MachineJobPayload, type RedisClient,
} from '@svc/core';
import {
  AGENT_CLOSE, AGENT_REQUESTS, agentOversizedField, agentMisplacedException, type AgentMachine, type AgentRequestOf, type AgentRequestType, type AgentResultOf, type AgentServerMessage,
} from '@svc/core/machine-protocol';
import { countAgentCut, SpanKind, currentTraceCarrier, withSpan, withTraceCarrier } from '@svc/core/observability';

/** How long a closing worker waits for its own start to end before it is closed anyway. */
const WORKER_START_WAIT_MS = 5000;
/**
 * How long a connection the server closed may take to answer the close frame before its socket
 * is destroyed: a client that ignores the close must not keep the connection (nor anything it
 * sends meanwhile is acted upon: a closed session drops every message).
 */
const CLOSE_GRACE_MS = 1000;
/** When a request refused for too many in flight may be sent again. */
const IN_FLIGHT_RETRY_MS = 100;
/** How often a robot whose requests are not read is looked at again. */
const READ_PAUSE_CHECK_MS = 50;

/** What a session needs of its process (the hub builds it). */
export interface SessionDeps {
  engine: Engine;
  bullPrefix: string;
  logger: Logger;
  heartbeatMs: number;
  leaseSeconds: number;
  /** how often the hub pings the connection (told to the robot, which judges the server's silence by it) */
  pingMs: number;
  /** decrypts credential assets a run reads */
  encryptionKey: Buffer;
  /** the process's view of Postgres outages: one log line per outage for periodic writes */
  outage: DbOutage;
  /** requests of one connection being answered at once: more are refused RATE_LIMIT_EXCEEDED */
  maxInFlight: number;
  /** bytes of replies a robot may leave unread before its connection is destroyed */
  maxUnreadBytes: number;
  /** bytes of unread replies past which the robot's requests are not read until it catches up */
  pauseReadingAboveBytes: number;
  /** where heartbeats that say nothing new wait for the process's next flush */
  liveness: Liveness;
  /**
   * Runs a robot's statement within the process's budget for robots, so that robots' work cannot
   * take every connection of the pool from the HTTP API; statements that go through a batcher
   * (heartbeats, lease renewals, takes) are bounded by it instead.
   */
  dbBudget: <T>(fn: () => Promise<T>) => Promise<T>;
  /** statements each machine may start per second within that budget (keyed by machine id) */
  statementPace: RateLimiterMemory;
  /** the command connection every machine worker of the process shares (opened on first use) */
  workerConnection: () => RedisClient;
  /** how long a machine's queue is read after its last sign of work */
  workerIdleMs: number;
}

/** A run this connection holds: its fencing token and, for a consumer job, its queue. */
interface Held {
  attempt: number;
  queueId: string | null;
  /** a stop was pushed for this run: the same stop published again (at once, then by the relay) is not */
  stopSent?: boolean;
}

/**
 * One robot's connection (docs/agent-protocol.md): the jobs of its machine's queue are handed to
 * it as `job.start` (at most `slots` at once, counting the runs it brought from an earlier
 * connection), its requests are answered, and a stop of one of its jobs is pushed as `job.stop`.
 * A job's run outlives the connection: its lease is what the platform goes by, so a robot that
 * reconnects (to any replica) keeps its runs by listing them in a heartbeat.
 */
export class MachineSession {
  /** runs this connection holds */
  private readonly owned = new Map<string, Held>();
  /** aborted when the connection ends: requests waiting out a Postgres outage give up then */
  private readonly ended = new AbortController();
  /** runs handed out by this connection's worker: job id → ends the worker's hold on its slot */
  private readonly handOffs = new Map<string, () => void>();
  private worker: Worker<MachineJobPayload> | null = null;
  private closed = false;
  /** whether the robot sent anything (a message, a pong) since the last ping */
  private heard = true;
  /** requests being answered now */
  private inFlight = 0;
  private slots: number;

  constructor(
    private readonly deps: SessionDeps,
    private readonly socket: WebSocket,
    readonly machine: AgentMachine,
    readonly keyHashHex: string,
    /** which tick of the hub's ping period pings this connection */
    readonly pingSlice = 0,
  ) {
    this.slots = machine.slots;
  }

  private get log(): Logger {
    return this.deps.logger.child({ machine_id: this.machine.id });
  }

  /** Welcomes the robot; its jobs are handed out once its first heartbeat said what it still runs. */
  async start(): Promise<void> {
    this.send({
      type: 'welcome',
      machine: { id: this.machine.id, name: this.machine.name, slots: this.machine.slots },
      heartbeat_ms: this.deps.heartbeatMs,
      lease_seconds: this.deps.leaseSeconds,
      ping_ms: this.deps.pingMs,
    });
  }

  /** The connection is closed or closing: nothing the robot still sends is acted upon. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The robot sent something (a message, a pong): the connection is alive. */
  heardFrom(): void {
    this.heard = true;
  }

  /**
   * This connection's ping: one that answered nothing since its previous ping is dead
   * (a network that went silent without closing anything) and is destroyed, which closes the
   * session and frees what it holds; its runs are left to their leases, as on any drop.
   */
  ping(): void {
    if (this.closed) return;
    if (!this.heard) {
      this.log.warn('machine connection silent: cut');
      countAgentCut('silent');
      this.socket.terminate();
      return;
    }
    this.heard = false;
    try {
      this.socket.ping();
    } catch {
      // a socket that is going away: its close event ends the session
    }
  }


  /** the robot's first heartbeat said what it still runs: jobs may be handed out */
  private greeted = false;
  /** work was announced before the first heartbeat: the queue is read right after it */
  private toldEarly = false;
  /** when the machine's queue last showed signs of work (a message, a hand-off) */
  private lastWork = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  /** a start asked for at a later time (a job's retry delay) */
  private wake: { at: number; timer: NodeJS.Timeout } | null = null;
  /** the worker's stop under way: a start waits for it */
  private stopping: Promise<void> | null = null;
  private startAfterStop = false;

  /**
   * There may be jobs on the machine's queue (it was told so, or the robot just came): its
   * worker runs, or starts. An idle robot holds no worker (docs/decisions/agent-protocol.md): the
   * queue is read from the first sign of work until `workerIdleMs` pass without one and without
   * a run handed out. Nothing is handed out before the robot's first heartbeat: a fresh robot
   * would give up a job handed to it before, and the runs it brings along count against its slots.
   */
  wantWork(at = 0): void {
    if (this.closed || this.leaving) return;
    const wait = at - Date.now();
    if (wait > 0) {
      if (this.wake && this.wake.at <= at) return;
      if (this.wake) clearTimeout(this.wake.timer);
      this.wake = { at, timer: setTimeout(() => {
        this.wake = null;
        this.wantWork();
      }, wait) };
      this.wake.timer.unref();
      return;
    }
    this.lastWork = Date.now();
    if (!this.greeted) {
      this.toldEarly = true;
      return;
    }
    if (this.worker) return;
    if (this.stopping) {
      this.startAfterStop = true;
      return;
    }
    const worker = new Worker<MachineJobPayload>(machineQueueName(this.machine.id), (job, token) => this.handOff(job, token), {
      // the process's one command connection; the worker's blocking read is its own
      connection: this.deps.workerConnection(),
      prefix: this.deps.bullPrefix,
      concurrency: this.slots,
    });
    worker.on('error', (err) => this.log.warn('machine worker error', { err: err.message }));
    this.worker = worker;
    this.fitCapacity();
    this.armIdle(this.deps.workerIdleMs);
  }

  /** Whether the machine's queue is being read now (tests, the hub's gauge). */
  get reading(): boolean {
    return this.worker !== null;
  }

  private armIdle(ms: number): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (!this.worker) return;
      const quiet = Date.now() - this.lastWork;
      if (this.handOffs.size > 0 || quiet < this.deps.workerIdleMs) {
        this.armIdle(Math.max(50, this.deps.workerIdleMs - quiet));
        return;
      }
      void this.stopWorker();
    }, ms);
    this.idleTimer.unref();
  }

  /** A message from the robot: one request, answered in order of completion. */
  async onMessage(raw: string): Promise<void> {
    let msg: { id?: unknown; type?: unknown };
    try {
      msg = JSON.parse(raw) as { id?: unknown; type?: unknown };
    } catch {
      this.reply(null, new ValidationError([{ field: 'message', message: es.agent.notJson, loc: ['message'], type: 'json_invalid' }]));
      return;
    }
    const id = typeof msg === 'object' && msg !== null && Number.isInteger(msg.id) ? (msg.id as number) : null;
    if (this.inFlight >= this.deps.maxInFlight) {
      // the robot asks faster than its answers come: it waits, the platform's work stays bounded
      this.reply(id, new RateLimitError(1, {}, es.agent.tooManyRequestsInFlight(this.deps.maxInFlight), { retry_after_ms: IN_FLIGHT_RETRY_MS }));
      return;
    }
    this.inFlight++;
    try {
      if (id === null) throw ValidationError.single(['message', 'id'], es.agent.notAnInteger, 'integer_type');
      // what Postgres cannot store (U+0000, lone surrogates), nesting past the bound, __proto__ keys
      const issue = jsonInputIssue(msg, ['message'], { strings: jsonTextMayHoldUnstorable(raw) });
      if (issue) throw new ValidationError([issue]);
      const type = msg.type;
      if (typeof type !== 'string' || !Object.hasOwn(AGENT_REQUESTS, type)) {
        throw ValidationError.single(['message', 'type'], es.agent.oneOf(Object.keys(AGENT_REQUESTS).join(', ')), 'enum');
      }
      const request = validate(AGENT_REQUESTS[type as AgentRequestType], msg, 'body') as { trace?: Record<string, string> };
      const oversized = agentOversizedField(request as Record<string, unknown>);
      if (oversized) throw ValidationError.single(oversized.loc, es.agent.tooLarge(oversized.max), 'too_large');
      const misplaced = agentMisplacedException(request as Record<string, unknown>);
      if (misplaced) throw ValidationError.single(misplaced, es.agent.exceptionOnlyOnFailure, 'exception_without_failure');
      // under the robot's span when it sent one: its trace goes on through the platform's statements
      const result = await withTraceCarrier(request.trace, () => withSpan(`machine ${type}`, { 'svc.machine.id': this.machine.id },
        () => this.handle(type as AgentRequestType, request), SpanKind.SERVER));
      this.reply(id, null, result);
    } catch (err) {
      this.reply(id, err);
    } finally {
      this.inFlight--;
    }
  }

  /**
   * A database call of a request: a Postgres outage is waited out while the connection lasts
   * (the robot's request just takes longer), so robots need no retry logic of their own for it.
   * It waits its turn in the process's budget for robots unless it goes through a batcher.
   */
  private db<T>(context: string, fn: () => Promise<T>, options: { batched?: boolean } = {}): Promise<T> {
    return retryOnConnectionLoss(options.batched ? fn : () => this.inBudget(fn), { context, signal: this.ended.signal });
  }

  /**
   * `fn` in its turn within the process's budget for robots; not at all once the connection has
   * ended while it waited (nobody would read the answer; a robot asks again, as a repeat, on its
   * next connection).
   */
  private inBudget<T>(fn: () => Promise<T>): Promise<T> {
    const closed = () => Promise.reject(new AppError('HTTP_ERROR', 503, es.agent.connectionClosed));
    if (this.ended.signal.aborted) return closed();
    // the connection's turns, in order: its requests in flight, its runs' starts and its first
    // look-up, each bounded on its own, wait here
    this.statementTurns ??= new RateLimiterQueue(this.deps.statementPace);
    return this.statementTurns.removeTokens(1, this.machine.id).then(() => {
      if (this.ended.signal.aborted) {
        // nobody reads the answer: the turn goes back to the machine (its next connection)
        void this.deps.statementPace.reward(this.machine.id).catch(() => undefined);
        return closed();
      }
      return this.deps.dbBudget(() => (this.ended.signal.aborted ? closed() : fn()));
    }, (err: unknown) => {
      if (err instanceof AppError) throw err;
      throw new RateLimitError(1, {}, es.agent.tooManyRequestsInFlight(this.deps.maxInFlight), { retry_after_ms: IN_FLIGHT_RETRY_MS });
    });
  }

  private statementTurns: RateLimiterQueue | null = null;

  /**
   * A database call the robot may have sent before (`repeat`): core resolves a repeat by its own
   * rule. A try whose answer Postgres lost is a repeat too, since that try may have committed.
   */
  private dbRepeatable<T>(context: string, robotSaysRepeat: boolean | undefined, fn: (repeat: boolean) => Promise<T>, options: { batched?: boolean } = {}): Promise<T> {
    let repeat = robotSaysRepeat === true;
    const once = () => (options.batched ? fn(repeat) : this.inBudget(() => fn(repeat)));
    return retryOnConnectionLoss(once, { context, signal: this.ended.signal, onRetry: () => (repeat = true) });
  }

  /** A request over the connection's message rate: answered at once, not run. */
  refuseRateLimited(raw: string, retryAfterMs: number): void {
    let re: number | null = null;
    try {
      const m = JSON.parse(raw) as { id?: unknown };
      if (Number.isInteger(m?.id)) re = m.id as number;
    } catch {
      // answered with re: null like any message that is not JSON
    }
    this.reply(re, new RateLimitError(Math.ceil(retryAfterMs / 1000), {}, es.agent.tooManyMessagesPerSecond, { retry_after_ms: retryAfterMs }));
  }

  private async handle(type: AgentRequestType, msg: unknown): Promise<unknown> {
    const machines = this.deps.engine.machines;
    switch (type) {
      case 'heartbeat':
        return this.heartbeat(msg as AgentRequestOf<'heartbeat'>);
      case 'job.started': {
        const m = msg as AgentRequestOf<'job.started'>;
        this.holds(m.job_id, m.attempt);
        const res = await this.db('acknowledging a run', () => machines.acknowledgeRun(m.job_id, m.attempt, this.machine.id, this.deps.leaseSeconds));
        if (!res) throw this.lost(m.job_id);
        return { stop_requested: res.stop_requested } satisfies AgentResultOf<'job.started'>;
      }
      case 'job.progress': {
        const m = msg as AgentRequestOf<'job.progress'>;
        this.holds(m.job_id, m.attempt);
        const res = await this.db('reporting job progress', () => machines.reportProgress(m.job_id, m.attempt, {
          progress_percent: m.progress_percent, progress_message: m.progress_message, resource_metrics: m.resource_metrics, logs_append: m.log,
        }));
        if (!res) throw this.lost(m.job_id);
        return { stop_requested: res.stop_requested } satisfies AgentResultOf<'job.progress'>;
      }
      case 'job.finish': {
        const m = msg as AgentRequestOf<'job.finish'>;
        this.holds(m.job_id, m.attempt);
        const job = await this.dbRepeatable('finishing a job', m.repeat, (repeat) => machines.finishRun(m.job_id, m.attempt, {
          to: m.status, output_data: m.output_data, error_message: m.error_message, exception: m.exception, progress_percent: m.progress_percent,
          progress_message: m.progress_message, resource_metrics: m.resource_metrics, logs_append: m.log,
        }, { repeat }));
        this.release(m.job_id);
        if (!job) throw new ConflictError(es.jobs.staleAttempt);
        return { status: job.status } satisfies AgentResultOf<'job.finish'>;
      }
      case 'items.take':
        return this.takeItems(msg as AgentRequestOf<'items.take'>);
      case 'items.release': {
        const m = msg as AgentRequestOf<'items.release'>;
        this.holds(m.job_id, m.attempt);
        return { released: await this.db('handing back queue items', () => machines.releaseItems(m.job_id, m.items)) } satisfies AgentResultOf<'items.release'>;
      }
      case 'jobs.waiting': {
        const m = msg as AgentRequestOf<'jobs.waiting'>;
        this.holds(m.job_id, m.attempt);
        return { waiting: await this.db('looking for waiting jobs', () => machines.hasWaitingJobs(this.machine.id, m.job_id)) } satisfies AgentResultOf<'jobs.waiting'>;
      }
      case 'job.input.ask': {
        const m = msg as AgentRequestOf<'job.input.ask'>;
        this.holds(m.job_id, m.attempt);
        const res = await this.dbRepeatable('asking for input', m.repeat, (repeat) =>
          machines.askInput(m.job_id, m.attempt, { prompt: m.prompt, options: m.options }, { repeat }));
        if ('refused' in res) {
          if (res.refused === 'stop_requested') throw new ConflictError(es.jobs.stopRequested, { stop_requested: true });
          throw this.lost(m.job_id);
        }
        return { waiting: true } satisfies AgentResultOf<'job.input.ask'>;
      }
      case 'job.input.read': {
        const m = msg as AgentRequestOf<'job.input.read'>;
        this.holds(m.job_id, m.attempt);
        const state = await this.db('reading the answer', () => machines.readInput(m.job_id, m.attempt));
        if (!state) throw this.lost(m.job_id);
        return { status: state.status, stop_requested: state.stop_requested, answer: state.answer, timeout_at: state.timeout_at?.toISOString() ?? null } satisfies AgentResultOf<'job.input.read'>;
      }
      case 'asset.get': {
        const m = msg as AgentRequestOf<'asset.get'>;
        this.holds(m.job_id, m.attempt);
        const read = await this.db('reading an asset', () => machines.readAsset(
          this.deps.encryptionKey, { tenantId: this.machine.tenant_id, machineId: this.machine.id, jobId: m.job_id, attempt: m.attempt }, m.name, m.environment,
        ));
        return { name: read.asset.name, type: read.asset.type, environment: read.environment, value: read.value } satisfies AgentResultOf<'asset.get'>;
      }
      case 'bye':
        // no job is handed out any more, and the machine is offline before the robot hears back
        // (the last write: a load report still in flight would set it online again after it);
        // what was handed out meanwhile and never acknowledged goes back (dispatch/hand-back.ts).
        // A robot may leave before the answer: the goodbye is written even once its socket ended
        this.leaving = true;
        void this.stopWorker();  // awaited by close()
        while (this.loadReport) await this.loadReport;
        this.deps.liveness.forget(this.machine.id);
        await Promise.allSettled([...this.heartbeatWrites, this.deps.liveness.settled()]);
        await retryOnConnectionLoss(() => machines.goodbye(this.machine.id), { context: 'marking the machine offline' });
        setImmediate(() => void this.close(AGENT_CLOSE.normal, 'bye'));
        return {} satisfies AgentResultOf<'bye'>;
    }
  }

  /** Settles and takes on the consumer job's own queue (a repeat is resolved by core's fencing rule). */
  private async takeItems(m: AgentRequestOf<'items.take'>): Promise<AgentResultOf<'items.take'>> {
    const held = this.holds(m.job_id, m.attempt);
    if (!held.queueId) throw new NotFoundError(es.jobs.consumesNoQueue);
    const queueId = held.queueId;
    const res = await this.dbRepeatable('settling and taking queue items', m.repeat, (repeat) => this.deps.engine.machines.takeItems({
      queueId, jobId: m.job_id, jobAttempt: m.attempt, machineId: this.machine.id, outcomes: m.outcomes, take: m.take, held: m.held, repeat,
    }), { batched: true });
    return {
      settled: res.settled,
      items: res.claimed.map((i) => ({ id: i.id, attempt: i.attempt, reference: i.reference, data: i.data, retry_count: i.retry_count })),
      released_unknown: res.releasedUnknown,
    };
  }

  /** Renews the leases of the runs the robot lists, takes over those it brought, reports the machine online. */
  private async heartbeat(m: AgentRequestOf<'heartbeat'>): Promise<AgentResultOf<'heartbeat'>> {
    const machines = this.deps.engine.machines;
    if (m.fresh && m.running.length === 0) {
      // a robot process that starts runs nothing: what the platform thinks runs here was lost with the last one
      const lost = await this.db('giving up the previous process\'s jobs', () => machines.giveUpJobs(this.machine.id));
      if (lost.ended.length) this.log.warn('jobs of the previous robot process given up', { jobs: lost.ended.map((j) => j.id) });
    }
    const runs = m.running.map((r) => ({ id: r.job_id, attempt: r.attempt, alive: r.alive }));
    const renewed = runs.length ? await this.db('renewing leases', () => machines.renewLeases(this.machine.id, runs, this.deps.leaseSeconds), { batched: true }) : [];
    const owned = new Map(renewed.map((o) => [o.id, o]));
    for (const r of m.running) {
      const o = owned.get(r.job_id);
      if (o) this.owned.set(r.job_id, { attempt: r.attempt, queueId: o.queue_id });
      else this.release(r.job_id);
    }
    const report = { running: owned.size, agentVersion: m.agent_version ?? null, hostInfo: m.host ?? null };
    const said = JSON.stringify(report);
    // after a bye the machine stays offline: a heartbeat that crossed it records nothing, and
    // one already writing is waited for by the bye before its goodbye. A heartbeat that says
    // nothing new is written with the process's others by the next flush (liveness.ts)
    if (!this.leaving && !this.closed && said === this.lastSaid) {
      this.deps.liveness.later(this.machine.id, (hb) => {
        if (!hb) return;
        this.applyMachine(hb.slots, hb.is_active);
        // marked offline meanwhile (its load was reset): the next heartbeat is written in full
        if (hb.previous === 'offline') this.lastSaid = null;
      });
    } else {
      const write = this.leaving || this.closed ? Promise.resolve(null) : this.db('recording a heartbeat', () => machines.heartbeat(this.machine.id, report), { batched: true });
      this.heartbeatWrites.add(write);
      const hb = await write.finally(() => this.heartbeatWrites.delete(write));
      if (hb) {
        this.applyMachine(hb.slots, hb.is_active);
        this.lastSaid = said;
      } else this.active = false;
    }
    if (!this.greeted) {
      this.greeted = true;
      if (this.toldEarly) this.wantWork();
      // jobs that waited for the robot while it was away: its queue is read only if there are
      // some (a fleet that connects at once must not open a Redis reader per robot)
      void this.db('looking for jobs that waited', () => machines.earliestPendingStart(this.machine.id)).then((at) => {
        if (at) this.wantWork(at.getTime());
      }, (err) => {
        if (!this.closed) this.log.warn('jobs that waited for the machine could not be looked up', { err: (err as Error).message });
      });
    }
    this.fitCapacity();
    return {
      slots: this.slots,
      is_active: this.active,
      runs: m.running.map((r) => ({ job_id: r.job_id, owned: owned.has(r.job_id), stop_requested: owned.get(r.job_id)?.stop_requested ?? false })),
    };
  }

  /**
   * A job of this machine from its queue: started here (under the trace of the job's publication),
   * handed to the robot; its slot is held until the run ends here.
   */
  private handOff(job: Job<MachineJobPayload>, token: string | undefined): Promise<unknown> {
    return withTraceCarrier(job.data.trace, () =>
      withSpan('machine job start', { 'svc.job.id': job.data.job_id, 'svc.machine.id': this.machine.id }, () => this.startAndHand(job, token), SpanKind.CONSUMER));
  }

  private async startAndHand(job: Job<MachineJobPayload>, token: string | undefined): Promise<unknown> {
    // the robot is leaving or gone: the job waits in its queue for the machine's next connection
    if (this.closed || this.leaving) return deliverLater(job, token, new Date());
    this.lastWork = Date.now();
    // this delivery's name: asked again after a lost answer, the start returns our own run
    const holder = randomUUID();
    const res = await this.db('starting a job', () => this.deps.engine.machines.startJob(job.data.job_id, this.machine.id, { holder, leaseSeconds: this.deps.leaseSeconds }));
    if ('skipped' in res) return skipDelivery(job, token, res);
    const run = res.started;
    // started as the robot left: never sent, never acknowledged, so handed back (dispatch/hand-back.ts)
    if (this.closed || this.leaving) return { handed_off: false };
    this.owned.set(run.id, { attempt: run.attempt, queueId: run.queue_id });
    const ended = new Promise<void>((resolve) => this.handOffs.set(run.id, resolve));
    const trace = currentTraceCarrier();
    this.reportLoad();
    this.send({
      type: 'job.start',
      job: {
        id: run.id, attempt: run.attempt, process_id: run.process_id, process_name: run.process_name, input_data: run.input_data,
        queue_id: run.queue_id, timeout_seconds: run.timeout_seconds, retry_count: run.retry_count,
        started_at: run.started_at.toISOString(), timeout_at: run.timeout_at?.toISOString() ?? null,
        ...(trace ? { trace } : {}),
      },
    });
    await ended;
    return { handed_off: true };
  }

  /** A stop (or a timeout, or a lost run) published for a job: the robot running it is told. */
  onAbort(msg: JobAbortMessage): void {
    const held = this.owned.get(msg.job_id);
    if (!held) return;
    if (msg.reason === 'stop') {
      if (held.stopSent) return;
      held.stopSent = true;
    }
    this.send({ type: 'job.stop', job_id: msg.job_id, reason: msg.reason });
    // the engine already ended it: the run's writes will be refused; its slot is free
    if (msg.reason !== 'stop') this.release(msg.job_id);
  }

  /** A question of one of its runs was answered: the robot reads the answer now. */
  onInput(msg: JobInputMessage): void {
    if (this.owned.has(msg.job_id)) this.send({ type: 'job.input', job_id: msg.job_id });
  }

  /** The run is no longer this connection's: its slot is free again. */
  private release(jobId: string): void {
    this.owned.delete(jobId);
    const end = this.handOffs.get(jobId);
    this.handOffs.delete(jobId);
    if (end) this.lastWork = Date.now();
    end?.();
    if (end) this.reportLoad();
    this.fitCapacity();
  }

  private loadReport: Promise<void> | null = null;
  private loadAgain = false;
  /** the robot said bye: its machine's load is not reported any more */
  private leaving = false;
  /** what the last heartbeat written said (its load, version and host): the same again is only liveness */
  private lastSaid: string | null = null;
  /** heartbeats being written: a bye's goodbye comes after them */
  private readonly heartbeatWrites = new Set<Promise<unknown>>();

  /**
   * Records the machine's busy slots now (a run started or ended here), so its status reads
   * `busy` while every slot runs a job; coalesced: at most one write in flight per connection.
   * It says nothing of the robot being alive (only its heartbeats do).
   */
  private reportLoad(): void {
    if (this.leaving) return;
    if (this.loadReport) {
      this.loadAgain = true;
      return;
    }
    this.loadReport = (async () => {
      do {
        this.loadAgain = false;
        try {
          await this.deps.engine.machines.reportLoad(this.machine.id, this.owned.size);
        } catch (err) {
          // the next heartbeat reports the load anyway
          if (!this.deps.outage.failed(err, 'machine load report')) this.log.warn('load report failed', { err: (err as Error).message });
        }
      } while (this.loadAgain && !this.closed);
      this.loadReport = null;
    })();
  }

  /** The worker takes new jobs only for the slots the runs held here leave free. */
  private fitCapacity(): void {
    const w = this.worker;
    if (!w || this.closed) return;
    const broughtAlong = [...this.owned.keys()].filter((id) => !this.handOffs.has(id)).length;
    const free = this.slots - broughtAlong;
    if (free <= 0 || !this.active) {
      if (!w.isPaused()) void w.pause(true);
      return;
    }
    w.concurrency = free;
    if (w.isPaused()) w.resume();
  }

  private active = true;

  private applyMachine(slots: number, active: boolean): void {
    this.slots = slots;
    this.active = active;
  }

  private holds(jobId: string, attempt: number): Held {
    const held = this.owned.get(jobId);
    if (held === undefined) throw new NotFoundError(es.jobs.notFound);
    if (held.attempt !== attempt) throw new ConflictError(es.jobs.staleAttempt);
    return held;
  }

  private lost(jobId: string): AppError {
    this.release(jobId);
    return new ConflictError(es.jobs.staleAttempt);
  }

  /** Ends the connection: runs are left to their leases (the robot may come back anywhere). */
  async close(code: number, reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ended.abort();
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) {
      this.socket.close(code, reason);
      setTimeout(() => this.socket.terminate(), CLOSE_GRACE_MS).unref();
    }
    if (this.wake) clearTimeout(this.wake.timer);
    this.wake = null;
    await this.stopWorker();
  }

  /**
   * Stops reading the machine's queue; runs handed out from it are let go (their leases go on).
   * Resolves once the worker is closed (whoever asked first).
   */
  private stopWorker(): Promise<void> {
    for (const end of this.handOffs.values()) end();
    this.handOffs.clear();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const w = this.worker;
    this.worker = null;
    if (!w) return this.stopping ?? Promise.resolve();
    const stopping = (async () => {
      // BullMQ emits a connection's failed start as an 'error' event with no listener left once
      // the worker is closed, which ends the process: a worker that stops right after it started
      // lets its start finish (bounded, for a Redis that does not answer) first
      await Promise.race([w.waitUntilReady().catch(() => undefined), new Promise((r) => setTimeout(r, WORKER_START_WAIT_MS).unref())]);
      await w.close();
    })()
      .catch((err: Error) => {
        this.log.warn('machine worker did not close cleanly', { err: err.message });
      })
      .finally(() => {
        this.stopping = null;
        if (this.startAfterStop) {
          this.startAfterStop = false;
          this.wantWork();
        }
      });
    this.stopping = stopping;
    return stopping;
  }

  private send(message: AgentServerMessage): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > this.deps.maxUnreadBytes) {
      // a robot that does not read its socket: its replies would pile up in this process
      this.log.warn('machine connection not reading its replies: cut', { unread_bytes: this.socket.bufferedAmount });
      countAgentCut('unread');
      this.socket.terminate();
      return;
    }
    this.socket.send(JSON.stringify(message));
    if (!this.readPause && this.socket.bufferedAmount > this.deps.pauseReadingAboveBytes) this.pauseReading();
  }

  /**
   * The robot leaves its replies unread: its requests are not read either until it catches up,
   * so that a robot asking without reading costs this process nothing more than the bytes waiting
   * for it. Its pongs wait too: one that does not catch up is cut as a silent one.
   */
  private pauseReading(): void {
    this.socket.pause();
    this.readPause = setInterval(() => {
      if (this.socket.readyState !== this.socket.OPEN || this.socket.bufferedAmount <= this.deps.pauseReadingAboveBytes / 2) {
        clearInterval(this.readPause!);
        this.readPause = null;
        this.socket.resume();
      }
    }, READ_PAUSE_CHECK_MS);
    this.readPause.unref();
  }

  private readPause: NodeJS.Timeout | null = null;

  /** Whether the robot's requests are not read now, its replies unread (tests, the hub's gauge). */
  get paused(): boolean {
    return this.readPause !== null;
  }

  private reply(re: number | null, err: unknown, result?: unknown): void {
    if (!err) {
      this.send({ type: 'reply', re, result });
      return;
    }
    if (err instanceof AppError) {
      this.send({ type: 'reply', re, error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) } });
      return;
    }
    this.log.error('machine request failed', { err: (err as Error).message });
    this.send({ type: 'reply', re, error: { code: 'INTERNAL_ERROR', message: es.errors.INTERNAL_ERROR } });
  }
}
