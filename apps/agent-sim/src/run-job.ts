import type { Job } from 'bullmq';
import type { AgentMachine, Engine, JobEnd, Logger, StartedJob } from '@svc/core';
import { directiveOf, metricsAt, metricsProfile, sample, type Behaviour } from './behaviour';
import { AbortedError, crashNow, reasonOf, stall, work } from './abort';
import type { Journal } from './journal';
import type { RunLife } from './run-life';

/** What a run needs from its agent. */
export interface RunContext {
  /** the engine's commands for a machine's agent */
  machines: Engine['machines'];
  machine: AgentMachine;
  behaviour: Behaviour;
  random: () => number;
  journal: Journal;
  logger: Logger;
  bullJob: Job;
  /** aborted with a RunAbortReason (stop, shutdown, local-timeout, timeout, lost) */
  signal: AbortSignal;
  /** asks for the run to be aborted (a stop found by polling, a lost ownership) */
  abort(reason: 'stop' | 'lost'): void;
  /** items processed by this agent process so far (crash mode mid-item) */
  itemsProcessed: { n: number };
  /** signs of life (the lease) and database calls that wait out a Postgres outage */
  life: RunLife;
}

const LOG_LIMIT = 64 * 1024;

export class JobLog {
  private text = '';
  private truncated = false;
  line(message: string): void {
    if (this.truncated) return;
    const next = `${new Date().toISOString()} ${message}\n`;
    if (this.text.length + next.length > LOG_LIMIT) {
      this.text += '… (registro truncado)\n';
      this.truncated = true;
      return;
    }
    this.text += next;
  }
  get value(): string {
    return this.text;
  }
}

/**
 * A simulated run of an ordinary job: sleeps its duration in `progress_steps` steps, writing
 * progress and log lines as it goes (each write fenced by the run's attempt), then completes or
 * fails. A stop ends it `stopped` at once; the local timeout ends it `timed_out`.
 */
export async function runSimulatedJob(ctx: RunContext, run: StartedJob): Promise<JobEnd> {
  const b = ctx.behaviour;
  const directive = directiveOf(run.input_data);
  const duration = directive.duration_ms ?? sample(b.duration, ctx.random);
  const steps = Math.max(1, b.progress_steps);
  const log = new JobLog();
  const started = Date.now();
  const profile = metricsProfile(b, ctx.random);
  log.line(`Inicio en la máquina ${ctx.machine.name}: proceso ${run.process_name}, intento ${run.attempt}`);
  if (b.crash === 'job-start' || directive.crash) crashNow();
  let linesWritten = 0;
  let percent = 0;
  try {
    if (directive.stall && run.retry_count === 0) await stall(ctx.signal);
    for (let i = 1; i <= steps; i++) {
      await work(duration / steps, ctx.signal, () => ctx.life.sign());
      if (b.crash === 'mid-job' && i * 2 >= steps) crashNow();
      const due = Math.floor((i * b.log_lines) / steps);
      for (; linesWritten < due; linesWritten++) log.line(`Paso ${i} de ${steps}: línea de registro ${linesWritten + 1}`);
      percent = Math.round((i / steps) * 100);
      const progress = {
        progress_percent: percent,
        progress_message: `Paso ${i} de ${steps}`,
        logs: log.value,
        resource_metrics: metricsAt(profile, Date.now() - started, duration),
      };
      // fenced and idempotent: safe to send again after a lost answer
      const res = await ctx.life.db('reporting job progress', () => ctx.machines.reportProgress(run.id, run.attempt, progress));
      if (!res) ctx.abort('lost');
      else if (res.stop_requested) ctx.abort('stop');
      if (ctx.signal.aborted) throw new AbortedError(reasonOf(ctx.signal));
      await ctx.bullJob.updateProgress(percent).catch(() => undefined);
    }
  } catch (err) {
    if (!(err instanceof AbortedError)) throw err;
    return endAborted(ctx, run, err, log, percent, metricsAt(profile, Date.now() - started, duration));
  }
  const elapsed = Date.now() - started;
  const fail = directive.outcome ? directive.outcome === 'fail' : ctx.random() < b.failure_rate;
  const metrics = metricsAt(profile, elapsed, elapsed);
  if (fail) {
    const message = directive.error_message ?? b.failure_message;
    log.line(`Error: ${message}`);
    return { to: 'failed', error_message: message, logs: log.value, resource_metrics: metrics, progress_percent: percent };
  }
  log.line('Terminado correctamente');
  return {
    to: 'completed',
    output_data: {
      ...b.output,
      ...(directive.output ?? {}),
      simulated: true,
      machine: ctx.machine.name,
      duration_ms: Math.round(elapsed),
    },
    logs: log.value,
    resource_metrics: metrics,
    progress_percent: 100,
    progress_message: 'Terminado',
  };
}

function endAborted(ctx: RunContext, run: StartedJob, err: AbortedError, log: JobLog, percent: number, metrics: ReturnType<typeof metricsAt>): JobEnd {
  switch (err.reason) {
    case 'stop':
      log.line('Detenido a petición del usuario');
      return { to: 'stopped', logs: log.value, resource_metrics: metrics, progress_percent: percent, progress_message: 'Detenido' };
    case 'local-timeout':
      log.line(`Tiempo agotado (${run.timeout_seconds} s)`);
      return {
        to: 'timed_out',
        error_message: `Tiempo de ejecución agotado: superó timeout_seconds (${run.timeout_seconds} s)`,
        logs: log.value,
        resource_metrics: metrics,
        progress_percent: percent,
      };
    case 'shutdown':
      log.line('El agente se detuvo antes de terminar');
      return { to: 'failed', error_message: `El agente de la máquina ${ctx.machine.name} se detuvo antes de terminar el job`, logs: log.value, resource_metrics: metrics };
    case 'timeout':
    case 'lost':
      // the dispatcher already ended this job; the guarded write below will be refused
      return { to: 'failed', error_message: 'El job ya no pertenece a esta ejecución', logs: log.value };
  }
}
