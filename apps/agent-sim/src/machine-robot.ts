import { connect, endJob, type ExceptionKind, type JobContext, type JobEndFields, type JobInfo, type Robot } from '@svc/agent';
import type { Logger } from '@svc/core';
import { SpanKind, currentTraceCarrier, withSpan, withTraceCarrier } from '@svc/core/observability';
import { createRandom } from './behaviour';
import { behaviourFor, type AgentOptions } from './options';
import { consumeQueue } from './consume-queue';
import { runSimulatedJob, type RunContext } from './run-job';
import type { Journal } from './journal';

export const AGENT_VERSION = 'agent-sim/0.2.0';

export interface RobotDeps {
  /** the platform's base URL (several, comma-separated, tried in turn) */
  url: string;
  logger: Logger;
  options: AgentOptions;
  journal: Journal;
  itemsProcessed: { n: number };
  /** the platform turned a robot away because its machine connected elsewhere: the process ends */
  onReplaced(message: string): void;
}

/**
 * One simulated robot machine on the robot SDK (`@svc/agent`): it holds its machine key and the
 * platform's URL, nothing else. The SDK connects, heartbeats, hands it its jobs and aborts a run
 * on a stop; this class plays the robot's part (docs/agent-sim.md): durations, failures, reviews,
 * questions, crashes and the journal.
 */
export class MachineRobot {
  private robot: Robot | null = null;
  private readonly random: () => number;
  machine: { id: string; name: string; slots: number } | null = null;
  /** known from the first job on (a job may start before `start` resolves) */
  private machineId = '';
  /** the kind of failure each run ending `failed` reported, for its job-end line in the journal */
  private readonly exceptions = new Map<string, ExceptionKind>();

  constructor(private readonly deps: RobotDeps, private readonly machineKey: string) {
    this.random = createRandom(deps.options.seed);
  }

  private get log(): Logger {
    return this.deps.logger.child(this.machine ? { machine_id: this.machine.id, machine: this.machine.name } : {});
  }

  /** Connects; resolves once the platform welcomed the machine (rejects when it refuses the key). */
  async start(): Promise<void> {
    this.robot = connect({
      url: this.deps.url,
      machineKey: this.machineKey,
      allowInsecure: this.deps.options.allowInsecure,
      ca: this.deps.options.ca,
      agentVersion: AGENT_VERSION,
      heartbeatMs: this.deps.options.heartbeatMs,
      // a run's lease is renewed only while it shows signs of life (a stalled robot loses its job)
      livenessMs: 'lease',
      logger: { info: (msg, meta) => this.log.info(msg, meta), warn: (msg, meta) => this.log.warn(msg, meta) },
      // tracing on: the run (its end included) is a span under the platform's start of the job,
      // and the platform's statements for each of its requests are spans under it
      around: (job, execute) => withTraceCarrier(job.trace ?? undefined, () =>
        withSpan('job run', { 'svc.job.id': job.id }, execute, SpanKind.CONSUMER)),
      traceCarrier: currentTraceCarrier,
      onJob: (ctx) => this.run(ctx),
      onJobEnd: (job, status, lost) => this.ended(job, status, lost === true),
    });
    void this.robot.refused.then(({ why, reason }) => {
      // two processes holding one machine key (a cloned VM): this one stops instead of taking the connection back for ever
      if (why === 'replaced') this.deps.onReplaced(`machine ${this.machine?.name ?? '?'} connected from another process or host with the same key (${reason}): this robot stops`);
    });
    this.machine = await this.robot.ready;
    this.log.info('machine agent started', { slots: this.machine.slots });
  }

  private async run(job: JobContext) {
    const { machine } = job;
    this.machineId = machine.id;
    const info = job.job;
    this.deps.journal.write({ event: 'job-start', job_id: info.id, machine_id: machine.id, attempt: info.attempt });
    const ctx: RunContext = {
      job,
      run: {
        id: info.id, attempt: info.attempt, process_name: info.processName, input_data: info.input,
        retry_count: info.retryCount, timeout_seconds: info.timeoutSeconds, queue_id: info.queueId,
      },
      machine,
      behaviour: behaviourFor(this.deps.options, { id: info.processId, name: info.processName }),
      random: this.random,
      journal: this.deps.journal,
      logger: this.log,
      signal: job.signal,
      itemsProcessed: this.deps.itemsProcessed,
    };
    let end: JobEndFields;
    try {
      end = info.queueId ? await consumeQueue(ctx) : await runSimulatedJob(ctx);
    } catch (err) {
      // whatever broke the run, its job must not stay `running` with nobody working on it
      this.log.error('run broke off', { job_id: info.id, err: (err as Error).message });
      end = { status: 'failed', error: `El agente de la máquina ${machine.name} no pudo terminar el job: ${(err as Error).message}` };
    }
    // the SDK sends application for a failure that names no kind: the journal says the same
    if (end.status === 'failed') this.exceptions.set(info.id, end.exception ?? 'application');
    return endJob(end);
  }

  private ended(job: JobInfo, status: string | null, lost: boolean): void {
    const exception = this.exceptions.get(job.id);
    this.exceptions.delete(job.id);
    this.deps.journal.write({
      event: 'job-end', job_id: job.id, machine_id: this.machineId, attempt: job.attempt, status: status ?? 'refused', ...(lost ? { outcome: 'aborted' } : {}),
      ...(status === 'failed' && exception ? { exception } : {}),
    });
    if (!status) this.log.info('result of a run that no longer owns its job dropped', { job_id: job.id, attempt: job.attempt });
  }

  /**
   * Graceful stop: no new job; consumers finish their current item and hand back the rest at
   * once; other runs get `graceMs`, then are aborted; the machine is marked offline last.
   */
  async close(graceMs: number): Promise<void> {
    await this.robot?.close(graceMs);
    this.log.info('machine agent stopped');
  }
}
