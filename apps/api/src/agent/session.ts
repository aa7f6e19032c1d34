import { randomUUID } from 'node:crypto';
import { Worker, type Job } from 'bullmq';
import type { WebSocket } from 'ws';
import {
  AGENT_CLOSE, AGENT_REQUESTS, AppError, ConflictError, NotFoundError, ValidationError, createRedis, machineQueueName, skipDelivery, validate,
  type AgentMachine, type AgentRequestOf, type AgentRequestType, type Engine, type JobAbortMessage, type Logger, type MachineJobPayload, type RedisTarget,
} from '@svc/core';

/** What a session needs of its process (the hub builds it). */
export interface SessionDeps {
  engine: Engine;
  redis: RedisTarget;
  bullPrefix: string;
  logger: Logger;
  heartbeatMs: number;
  leaseSeconds: number;
}

/**
 * One robot's connection (docs/agent-protocol.md): the jobs of its machine's queue are handed to
 * it as `job.start` (at most `slots` at once, counting the runs it brought from an earlier
 * connection), its requests are answered, and a stop of one of its jobs is pushed as `job.stop`.
 * A job's run outlives the connection: its lease is what the platform goes by, so a robot that
 * reconnects (to any replica) keeps its runs by listing them in a heartbeat.
 */
export class MachineSession {
  /** runs this connection holds: job id → attempt */
  private readonly owned = new Map<string, number>();
  /** runs handed out by this connection's worker: job id → ends the worker's hold on its slot */
  private readonly handOffs = new Map<string, () => void>();
  private worker: Worker<MachineJobPayload> | null = null;
  private closed = false;
  private slots: number;

  constructor(
    private readonly deps: SessionDeps,
    private readonly socket: WebSocket,
    readonly machine: AgentMachine,
    readonly keyHashHex: string,
  ) {
    this.slots = machine.slots;
  }

  private get log(): Logger {
    return this.deps.logger.child({ machine_id: this.machine.id });
  }

  async start(): Promise<void> {
    this.send({
      type: 'welcome',
      machine: { id: this.machine.id, name: this.machine.name, slots: this.machine.slots },
      heartbeat_ms: this.deps.heartbeatMs,
      lease_seconds: this.deps.leaseSeconds,
    });
    const worker = new Worker<MachineJobPayload>(machineQueueName(this.machine.id), (job, token) => this.handOff(job, token), {
      connection: createRedis(this.deps.redis, { blocking: true }),
      prefix: this.deps.bullPrefix,
      concurrency: this.machine.slots,
    });
    worker.on('error', (err) => this.log.warn('machine worker error', { err: err.message }));
    this.worker = worker;
    await worker.waitUntilReady();
    if (this.closed) await this.stopWorker();
  }

  /** A message from the robot: one request, answered in order of completion. */
  async onMessage(raw: string): Promise<void> {
    let msg: { id?: unknown; type?: unknown };
    try {
      msg = JSON.parse(raw) as { id?: unknown; type?: unknown };
    } catch {
      this.reply(null, new ValidationError([{ field: 'message', message: 'no es JSON válido', loc: ['message'], type: 'json_invalid' }]));
      return;
    }
    const id = typeof msg === 'object' && msg !== null && Number.isInteger(msg.id) ? (msg.id as number) : null;
    try {
      if (id === null) throw ValidationError.single(['message', 'id'], 'debe ser un número entero', 'integer_type');
      const type = msg.type;
      if (typeof type !== 'string' || !Object.hasOwn(AGENT_REQUESTS, type)) {
        throw ValidationError.single(['message', 'type'], `debe ser uno de: ${Object.keys(AGENT_REQUESTS).join(', ')}`, 'enum');
      }
      const result = await this.handle(type as AgentRequestType, validate(AGENT_REQUESTS[type as AgentRequestType], msg, 'body'));
      this.reply(id, null, result);
    } catch (err) {
      this.reply(id, err);
    }
  }

  private async handle(type: AgentRequestType, msg: unknown): Promise<unknown> {
    switch (type) {
      case 'heartbeat':
        return this.heartbeat(msg as AgentRequestOf<'heartbeat'>);
      case 'job.progress': {
        const m = msg as AgentRequestOf<'job.progress'>;
        this.holds(m.job_id, m.attempt);
        const res = await this.deps.engine.machines.reportProgress(m.job_id, m.attempt, {
          progress_percent: m.progress_percent, progress_message: m.progress_message, resource_metrics: m.resource_metrics, logs_append: m.log,
        });
        if (!res) throw this.lost(m.job_id);
        return { stop_requested: res.stop_requested };
      }
      case 'job.finish': {
        const m = msg as AgentRequestOf<'job.finish'>;
        this.holds(m.job_id, m.attempt);
        const done = await this.deps.engine.machines.finishJob(m.job_id, m.attempt, {
          to: m.status, output_data: m.output_data, error_message: m.error_message, progress_percent: m.progress_percent,
          progress_message: m.progress_message, resource_metrics: m.resource_metrics, logs_append: m.log,
        });
        // a repeat after a lost answer finds the run already ended as it asked
        const job = done?.job ?? (await this.deps.engine.machines.findRunEndedAs(m.job_id, m.attempt, m.status));
        this.release(m.job_id);
        if (!job) throw new ConflictError('Este intento del job ya no es el vigente');
        return { status: job.status };
      }
      case 'bye':
        // no job is handed out any more, and the machine is offline before the robot hears back
        await this.stopWorker();
        await this.deps.engine.machines.goodbye(this.machine.id);
        setImmediate(() => void this.close(AGENT_CLOSE.normal, 'bye'));
        return {};
    }
  }

  /** Renews the leases of the runs the robot lists, takes over those it brought, reports the machine online. */
  private async heartbeat(m: AgentRequestOf<'heartbeat'>): Promise<unknown> {
    const runs = m.running.map((r) => ({ id: r.job_id, attempt: r.attempt, alive: r.alive }));
    const owned = new Map((await this.deps.engine.machines.renewLeases(this.machine.id, runs, this.deps.leaseSeconds)).map((o) => [o.id, o.stop_requested]));
    for (const r of m.running) {
      if (owned.has(r.job_id)) this.owned.set(r.job_id, r.attempt);
      else this.release(r.job_id);
    }
    const hb = await this.deps.engine.machines.heartbeat(this.machine.id, {
      running: owned.size,
      agentVersion: m.agent_version ?? null,
      hostInfo: m.host ?? null,
    });
    if (hb) this.applyMachine(hb.slots, hb.is_active);
    this.fitCapacity();
    return {
      slots: this.slots,
      is_active: hb?.is_active ?? false,
      runs: m.running.map((r) => ({ job_id: r.job_id, owned: owned.has(r.job_id), stop_requested: owned.get(r.job_id) ?? false })),
    };
  }

  /** A job of this machine from its queue: started here, handed to the robot; its slot is held until the run ends here. */
  private async handOff(job: Job<MachineJobPayload>, token: string | undefined): Promise<unknown> {
    if (this.closed) throw new Error('connection closed');
    const res = await this.deps.engine.machines.startJob(job.data.job_id, this.machine.id, { holder: randomUUID(), leaseSeconds: this.deps.leaseSeconds });
    if ('skipped' in res) return skipDelivery(job, token, res);
    const run = res.started;
    this.owned.set(run.id, run.attempt);
    const ended = new Promise<void>((resolve) => this.handOffs.set(run.id, resolve));
    this.send({
      type: 'job.start',
      job: {
        id: run.id, attempt: run.attempt, process_id: run.process_id, process_name: run.process_name, input_data: run.input_data,
        queue_id: run.queue_id, started_at: run.started_at.toISOString(), timeout_at: run.timeout_at?.toISOString() ?? null,
      },
    });
    await ended;
    return { handed_off: true };
  }

  /** A stop (or a timeout, or a lost run) published for a job: the robot running it is told. */
  onAbort(msg: JobAbortMessage): void {
    if (!this.owned.has(msg.job_id)) return;
    this.send({ type: 'job.stop', job_id: msg.job_id, reason: msg.reason });
    // the engine already ended it: the run's writes will be refused; its slot is free
    if (msg.reason !== 'stop') this.release(msg.job_id);
  }

  /** The run is no longer this connection's: its slot is free again. */
  private release(jobId: string): void {
    this.owned.delete(jobId);
    const end = this.handOffs.get(jobId);
    this.handOffs.delete(jobId);
    end?.();
    this.fitCapacity();
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

  private holds(jobId: string, attempt: number): void {
    const held = this.owned.get(jobId);
    if (held === undefined) throw new NotFoundError('Job no encontrado');
    if (held !== attempt) throw new ConflictError('Este intento del job ya no es el vigente');
  }

  private lost(jobId: string): AppError {
    this.release(jobId);
    return new ConflictError('Este intento del job ya no es el vigente');
  }

  /** Ends the connection: runs are left to their leases (the robot may come back anywhere). */
  async close(code: number, reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) this.socket.close(code, reason);
    await this.stopWorker();
  }

  private async stopWorker(): Promise<void> {
    for (const end of this.handOffs.values()) end();
    this.handOffs.clear();
    const w = this.worker;
    this.worker = null;
    if (w) {
      await w.close();
      await w.disconnect();
    }
  }

  private send(message: unknown): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(message));
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
    this.send({ type: 'reply', re, error: { code: 'INTERNAL_ERROR', message: 'Error interno del servidor' } });
  }
}
