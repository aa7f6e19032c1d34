import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Worker, type Job } from 'bullmq';
import {
  createEngine, createRedis, machineQueueName, retryOnConnectionLoss, skipDelivery,
  type AgentMachine, type Engine, type BullDispatch, type DbOutage, type FinishResult, type JobAbortMessage, type JobEnd, type Logger,
  type JobInputMessage, type MachineJobPayload, type RedisTarget, type Sql, type StartedJob, SpanKind, withSpan, withTraceCarrier,
} from '@svc/core';
import { createRandom } from './behaviour';
import { behaviourFor, type AgentOptions } from './options';
import { consumeQueue } from './consume-queue';
import { runSimulatedJob, type RunContext } from './run-job';
import type { Journal } from './journal';
import { RunLife } from './run-life';
import { AbortedError, reasonOf } from './abort';

export const AGENT_VERSION = 'agent-sim/0.1.0';

export interface AgentDeps {
  sql: Sql;
  redis: RedisTarget;
  bull: BullDispatch;
  logger: Logger;
  options: AgentOptions;
  journal: Journal;
  heartbeatMs: number;
  itemsProcessed: { n: number };
  /** this process's view of Postgres outages (one log line per outage) */
  outage: DbOutage;
  /**
   * A run's lease (seconds), renewed on every heartbeat while the run shows signs of life; also
   * how long a run may show none before the agent stops renewing it.
   */
  leaseSeconds: number;
}

interface ActiveRun {
  bullId: string;
  attempt: number;
  consumer: boolean;
  life: RunLife;
}

/**
 * One simulated robot machine: identified by its machine key, it heartbeats (reporting how many
 * of its slots run a job), runs the jobs of its BullMQ queue with concurrency = its slots, and
 * aborts a running job when told to (pub/sub, or the `stop_requested` it polls).
 */
export class MachineAgent {
  private worker: Worker | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private readonly running = new Map<string, ActiveRun>();
  /** runs waiting for input: wakes the wait when their answer is announced */
  private readonly inputWaiters = new Map<string, () => void>();
  /** news that came while its run was not yet (or not any more) listening */
  private readonly inputNews = new Set<string>();
  private readonly random: () => number;
  private loadReport: Promise<void> | null = null;
  private beating: Promise<void> | null = null;
  private loadAgain = false;
  private closing = false;
  /** aborted when the agent stops for good: database calls stop waiting for Postgres then */
  private readonly giveUp = new AbortController();
  /** the engine's commands for a machine's agent */
  private readonly engine: Engine['machines'];

  constructor(private readonly deps: AgentDeps, public machine: AgentMachine) {
    this.random = createRandom(deps.options.seed);
    this.engine = createEngine({ sql: deps.sql, logger: deps.logger }).machines;
  }

  get log(): Logger {
    return this.deps.logger.child({ machine_id: this.machine.id, machine: this.machine.name });
  }

  /** A database call of the agent itself, waiting out a Postgres outage (see RunLife.db for runs). */
  private db<T>(context: string, fn: () => Promise<T>, onRetry?: () => void): Promise<T> {
    return retryOnConnectionLoss(fn, { outage: this.deps.outage, context, signal: this.giveUp.signal, onRetry });
  }

  /** A failed periodic write: an outage is logged once by the outage log, anything else here. */
  private failed(what: string, err: unknown): void {
    if (!this.deps.outage.failed(err, what)) this.log.warn(`${what} failed`, { err: (err as Error).message });
  }

  async start(): Promise<void> {
    // a fresh agent process runs nothing: whatever Postgres says runs here was lost with the last one
    const lost = await this.db('giving up the previous process\'s jobs', () => this.engine.giveUpJobs(this.machine.id));
    if (lost.ended.length) this.log.warn('jobs of the previous agent process given up', { jobs: lost.ended.map((j) => j.id) });
    await this.heartbeat().catch((err) => this.failed('heartbeat', err));
    this.worker = new Worker<MachineJobPayload>(
      machineQueueName(this.machine.id),
      // tracing on: the run is a span under the dispatcher's that published the job (its data carries it)
      (job, token, signal) => withTraceCarrier(job.data.trace, () =>
        withSpan('job run', { 'svc.job.id': job.data.job_id, 'svc.machine.id': this.machine.id }, () => this.process(job, token, signal), SpanKind.CONSUMER)),
      {
        connection: createRedis(this.deps.redis, { blocking: true }),
        prefix: this.deps.bull.keys.bull,
        concurrency: this.machine.slots,
      },
    );
    this.worker.on('error', (err) => this.log.warn('worker error', { err: err.message }));
    this.worker.on('failed', (job, err) => this.log.warn('run failed', { bull_job: job?.id, err: err.message }));
    // a worker closed while its connections still initialise throws an unhandled "Connection is
    // closed" after close() (taskforcesh/bullmq#3546): started means connected
    await this.worker.waitUntilReady();
    const beat = async () => {
      if (this.closing) return;
      this.beating = this.heartbeat().catch((err) => this.failed('heartbeat', err));
      await this.beating;
      this.beating = null;
      if (!this.closing) this.heartbeatTimer = setTimeout(() => void beat(), this.deps.heartbeatMs);
    };
    this.heartbeatTimer = setTimeout(() => void beat(), this.deps.heartbeatMs);
    this.log.info('machine agent started', { slots: this.machine.slots });
  }

  /** An abort published for one of our jobs. */
  onAbort(msg: JobAbortMessage): void {
    if (msg.machine_id !== this.machine.id) return;
    const run = this.running.get(msg.job_id);
    if (run && this.worker) this.worker.cancelJob(run.bullId, msg.reason);
  }

  /** A job of ours waiting for input was answered: its run reads the answer now. */
  onInput(msg: JobInputMessage): void {
    if (msg.machine_id !== this.machine.id || !this.running.has(msg.job_id)) return;
    const wake = this.inputWaiters.get(msg.job_id);
    if (wake) wake();
    else this.inputNews.add(msg.job_id);
  }

  /** See RunContext.inputNews. */
  private waitForInputNews(jobId: string, ms: number, signal: AbortSignal): Promise<void> {
    if (this.inputNews.delete(jobId)) return Promise.resolve();
    if (signal.aborted) return Promise.reject(new AbortedError(reasonOf(signal)));
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.inputWaiters.delete(jobId);
      };
      const onAbort = () => {
        done();
        reject(new AbortedError(reasonOf(signal)));
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, ms);
      this.inputWaiters.set(jobId, () => {
        done();
        resolve();
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async heartbeat(): Promise<void> {
    // leases first: the dispatcher ends a run whose lease ran out before its machine's last
    // heartbeat, so a heartbeat must never land between a live run's expiry and its renewal
    await this.renewLeases();
    const hb = await this.engine.heartbeat(this.machine.id, {
      running: this.running.size,
      agentVersion: AGENT_VERSION,
      hostInfo: { hostname: os.hostname(), pid: process.pid, platform: process.platform },
    });
    this.deps.outage.ok();
    if (!hb) return;
    if (hb.previous === 'offline') this.backOnline();
    // a deactivated machine takes no new job (running ones finish); reactivated, it resumes
    if (this.worker && !hb.is_active && !this.worker.isPaused()) {
      this.log.warn('machine deactivated: taking no new jobs');
      void this.worker.pause(true);
    } else if (this.worker && hb.is_active && this.worker.isPaused() && !this.closing) {
      this.log.info('machine active again');
      this.worker.resume();
    }
    if (hb.slots !== this.machine.slots) {
      this.machine = { ...this.machine, slots: hb.slots };
      if (this.worker) this.worker.concurrency = hb.slots;
    }
  }

  /**
   * Renews the lease of every run that shows signs of life (RunLife), and learns from the same
   * statement what pub/sub may have missed: a stop requested (abort `stop`), or a job the engine
   * already ended (abort `lost`: its run stops at once, its writes would be refused anyway).
   */
  private async renewLeases(): Promise<void> {
    if (this.running.size === 0) return;
    const now = Date.now();
    const runs = [...this.running].map(([id, r]) => ({ id, attempt: r.attempt, alive: r.life.alive(now) }));
    const owned = await this.engine.renewLeases(this.machine.id, runs, this.deps.leaseSeconds);
    const still = new Map(owned.map((o) => [o.id, o.stop_requested]));
    for (const r of runs) {
      const current = this.running.get(r.id);
      // a run that ended (or restarted) meanwhile is not the one this answer is about
      if (!current || current.attempt !== r.attempt) continue;
      if (!still.has(r.id)) this.onAbort({ job_id: r.id, machine_id: this.machine.id, reason: 'lost' });
      else if (still.get(r.id)) this.onAbort({ job_id: r.id, machine_id: this.machine.id, reason: 'stop' });
    }
  }

  /** Whichever write found the machine offline (a heartbeat or a load report) says so; its effect committed with it. */
  private backOnline(): void {
    this.log.info('machine online');
  }

  /** Reports the number of busy slots now (coalesced: at most one write in flight). */
  private reportLoad(): void {
    if (this.loadReport) {
      this.loadAgain = true;
      return;
    }
    this.loadReport = (async () => {
      do {
        this.loadAgain = false;
        try {
          // a load report counts as a heartbeat too: leases first (see heartbeat)
          await this.renewLeases();
          const hb = await this.engine.heartbeat(this.machine.id, { running: this.running.size });
          this.deps.outage.ok();
          if (hb?.previous === 'offline' && !this.closing) this.backOnline();
        } catch (err) {
          // the next heartbeat reports the load anyway
          this.failed('load report', err);
        }
      } while (this.loadAgain && !this.closing);
      this.loadReport = null;
    })();
  }

  private async process(job: Job<MachineJobPayload>, token: string | undefined, signal?: AbortSignal): Promise<unknown> {
    const { leaseSeconds } = this.deps;
    // this delivery's name: asked again after a lost answer, the start returns our own run
    const holder = randomUUID();
    const res = await this.db('starting a job', () => this.engine.startJob(job.data.job_id, this.machine.id, { holder, leaseSeconds }));
    if ('skipped' in res) return skipDelivery(job, token, res);
    const run = res.started;
    const life = new RunLife(leaseSeconds * 1000, this.deps.outage, this.giveUp.signal);
    this.running.set(run.id, { bullId: job.id!, attempt: run.attempt, consumer: !!run.queue_id, life });
    this.reportLoad();
    this.deps.journal.write({ event: 'job-start', job_id: run.id, machine_id: this.machine.id, attempt: run.attempt });
    const ctrl = new AbortController();
    const forward = () => ctrl.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    let timeoutTimer: NodeJS.Timeout | undefined;
    const armTimeout = (at: Date | null) => {
      clearTimeout(timeoutTimer);
      timeoutTimer = at ? setTimeout(() => ctrl.abort('local-timeout'), Math.max(0, at.getTime() - Date.now())) : undefined;
    };
    armTimeout(run.timeout_at);
    try {
      const ctx: RunContext = {
        machines: this.engine,
        machine: this.machine,
        behaviour: behaviourFor(this.deps.options, { id: run.process_id, name: run.process_name }),
        random: this.random,
        journal: this.deps.journal,
        logger: this.log,
        bullJob: job,
        signal: ctrl.signal,
        abort: (reason) => {
          if (!ctrl.signal.aborted) ctrl.abort(reason);
        },
        itemsProcessed: this.deps.itemsProcessed,
        life,
        inputNews: (ms) => this.waitForInputNews(run.id, ms, ctrl.signal),
        pauseTimeout: () => armTimeout(null),
        resumeTimeout: (at) => armTimeout(at),
      };
      let end: JobEnd;
      try {
        end = run.queue_id ? await consumeQueue(ctx, run) : await runSimulatedJob(ctx, run);
      } catch (err) {
        // whatever broke the run, its job must not stay `running` with nobody working on it
        this.log.error('run broke off', { job_id: run.id, err: (err as Error).message });
        end = { to: 'failed', error_message: `El agente de la máquina ${this.machine.name} no pudo terminar el job: ${(err as Error).message}` };
      }
      const status = await this.finish(run, end, life);
      return { status };
    } finally {
      clearTimeout(timeoutTimer);
      signal?.removeEventListener('abort', forward);
      this.running.delete(run.id);
      this.inputNews.delete(run.id);
      this.reportLoad();
    }
  }

  /**
   * The final transition, waiting out a Postgres outage. When an attempt's answer was lost and
   * the next one is refused, the job is read back: ended as this run asked, under its fencing
   * token, it was this run's own transition (its follow-ups and effects committed with it).
   */
  private async finish(run: StartedJob, end: JobEnd, life: RunLife): Promise<string> {
    let uncertain = false;
    const fin = await life.db('finishing a job', async (): Promise<FinishResult | null> => {
      const done = await this.engine.finishJob(run.id, run.attempt, end);
      // a job stopped while it waited for input was ended `stopped` by the stop itself
      if (done || (!uncertain && end.to !== 'stopped')) return done;
      const job = await this.engine.findRunEndedAs(run.id, run.attempt, end.to);
      return job ? { job, followUps: [], failedItemQueues: [] } : null;
    }, () => {
      uncertain = true;
    });
    this.deps.journal.write({ event: 'job-end', job_id: run.id, machine_id: this.machine.id, attempt: run.attempt, status: fin?.job.status ?? 'refused' });
    if (!fin) {
      this.log.info('result of a run that no longer owns its job dropped', { job_id: run.id, attempt: run.attempt, to: end.to });
      return 'refused';
    }
    // follow-ups, failed items and the consumer's queue are the outbox's (endJobs)
    return fin.job.status;
  }

  /**
   * Graceful stop: take no new job, let running ones finish for `graceMs` (consumers finish
   * their current item and hand back the rest), then abort what is left; offline at once.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    const w = this.worker;
    if (w) {
      // consumers leave right away (their queue will get a new consumer elsewhere)
      for (const run of this.running.values()) if (run.consumer) w.cancelJob(run.bullId, 'shutdown');
      const force = setTimeout(() => {
        w.cancelAllJobs('shutdown');
        // what is still waiting for Postgres now gives up (the engine ends those jobs later)
        this.giveUp.abort();
      }, graceMs);
      await w.close();
      clearTimeout(force);
      await w.disconnect();
    }
    this.giveUp.abort();
    // the goodbye must be the last write: a heartbeat or load report still in flight (the runs
    // that just ended report their slots free) would set the machine online again after it
    await this.beating;
    while (this.loadReport) await this.loadReport;
    await this.engine.goodbye(this.machine.id).catch(() => undefined);
    this.log.info('machine agent stopped');
  }
}
