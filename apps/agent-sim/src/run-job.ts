import type { JobContext, JobEndFields } from '@svc/agent';
import type { Logger } from '@svc/core';
import { BUSINESS_FAILURE_MESSAGE, directiveOf, drawEnd, forcedException, metricsAt, metricsProfile, sample, type Behaviour } from './behaviour';
import { AbortedError, crashNow, reasonOf, stall, work } from './abort';
import type { Journal } from './journal';

/** The job a run works on, as agent-sim reads it. */
export interface SimRun {
  id: string;
  attempt: number;
  process_name: string;
  input_data: Record<string, unknown> | null;
  retry_count: number;
  timeout_seconds: number | null;
  queue_id: string | null;
}

/** What a run needs from its agent. */
export interface RunContext {
  /** the robot SDK's handle on the run: its reports, items, questions and signal */
  job: JobContext;
  run: SimRun;
  machine: { id: string; name: string };
  behaviour: Behaviour;
  random: () => number;
  journal: Journal;
  logger: Logger;
  /** aborted with a RunAbortReason (stop, shutdown, timeout, lost) */
  signal: AbortSignal;
  /** items processed by this agent process so far (crash mode mid-item) */
  itemsProcessed: { n: number };
}

/**
 * Asks a person (the job goes `running → waiting_input`) and waits for the answer, which it
 * returns; the SDK keeps the run's lease alive and reads the job on every piece of news. Ends with
 * AbortedError when the run is stopped or no longer owns its job meanwhile.
 */
export async function askForInput(ctx: RunContext, question: { prompt: string; options: Record<string, unknown> }, log: JobLog): Promise<unknown> {
  const { run } = ctx;
  log.line(`Esperando una respuesta: ${question.prompt}`);
  let value: unknown;
  try {
    value = await ctx.job.askForInput(question.prompt, question.options as { choices: unknown[] }, {
      onWaiting: () => ctx.journal.write({ event: 'input-asked', job_id: run.id, machine_id: ctx.machine.id, attempt: run.attempt }),
    });
  } catch (err) {
    if (ctx.signal.aborted) throw new AbortedError(reasonOf(ctx.signal));
    throw err;
  }
  log.line(`Respuesta recibida: ${JSON.stringify(value)}`);
  ctx.journal.write({ event: 'input-answered', job_id: run.id, machine_id: ctx.machine.id, attempt: run.attempt });
  return value;
}

/**
 * The run's log as the robot writes it: lines are kept only until they are sent with the next
 * report or the run's end (the SDK numbers them, so a report repeated after a lost answer appends
 * once, and splits what is too long for one message).
 */
export class JobLog {
  private pending = '';
  line(message: string): void {
    this.pending += `${new Date().toISOString()} ${message}\n`;
  }
  /** The lines written since the last take ('' when none). */
  take(): string {
    const text = this.pending;
    this.pending = '';
    return text;
  }
  /** The run's end with the lines still unsent. */
  end(end: JobEndFields): JobEndFields {
    const text = this.take();
    return text ? { ...end, log: text } : end;
  }
}

/**
 * A report of the run (fenced by its attempt, repeated safely after a lost answer): the SDK
 * aborts the run's signal when a stop was requested or the run no longer owns its job.
 */
export async function report(ctx: RunContext, r: Parameters<JobContext['report']>[0]): Promise<void> {
  try {
    await ctx.job.report(r);
  } catch (err) {
    if (!ctx.signal.aborted) throw err;
  }
  if (ctx.signal.aborted) throw new AbortedError(reasonOf(ctx.signal));
}

/**
 * A simulated run of an ordinary job: sleeps its duration in `progress_steps` steps, writing
 * progress and log lines as it goes (each write fenced by the run's attempt), then completes or
 * fails. A stop ends it `stopped` at once; the local timeout ends it `timed_out`.
 */
export async function runSimulatedJob(ctx: RunContext): Promise<JobEndFields> {
  const { run } = ctx;
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
  // a question halfway through (after this step), forced by the directive or drawn at input_rate
  const askAt = directive.input || (directive.input === undefined && b.input_rate > 0 && ctx.random() < b.input_rate) ? Math.ceil(steps / 2) : 0;
  const forced = typeof directive.input === 'object' ? directive.input : {};
  let input: { value: unknown } | null = null;
  try {
    if (directive.stall && run.retry_count === 0) await stall(ctx.signal);
    for (let i = 1; i <= steps; i++) {
      await work(duration / steps, ctx.signal, () => ctx.job.alive());
      if (b.crash === 'mid-job' && i * 2 >= steps) crashNow();
      const due = Math.floor((i * b.log_lines) / steps);
      for (; linesWritten < due; linesWritten++) log.line(`Paso ${i} de ${steps}: línea de registro ${linesWritten + 1}`);
      percent = Math.round((i / steps) * 100);
      await report(ctx, {
        percent,
        message: `Paso ${i} de ${steps}`,
        log: log.take(),
        metrics: metricsAt(profile, Date.now() - started, duration),
      });
      if (i === askAt) {
        const value = await askForInput(ctx, { prompt: forced.prompt ?? b.input_prompt, options: forced.options ?? b.input_options }, log);
        input = { value };
      }
    }
  } catch (err) {
    if (!(err instanceof AbortedError)) throw err;
    return log.end(endAborted(ctx, err, log, percent, metricsAt(profile, Date.now() - started, duration)));
  }
  const elapsed = Date.now() - started;
  // the one draw of the end, where the failure was always drawn (drawEnd: application, then business)
  const drawn = directive.outcome ? (directive.outcome === 'fail' ? forcedException(directive) : 'completed') : drawEnd(b, ctx.random(), false);
  const metrics = metricsAt(profile, elapsed, elapsed);
  if (drawn === 'application' || drawn === 'business') {
    const message = directive.error_message ?? (drawn === 'business' ? BUSINESS_FAILURE_MESSAGE : b.failure_message);
    log.line(drawn === 'business' ? `Error de negocio: ${message}` : `Error: ${message}`);
    return log.end({ status: 'failed', error: message, exception: drawn, metrics, percent });
  }
  log.line('Terminado correctamente');
  return log.end({
    status: 'completed',
    output: {
      ...b.output,
      ...(directive.output ?? {}),
      ...(input ? { input_value: input.value } : {}),
      simulated: true,
      machine: ctx.machine.name,
      duration_ms: Math.round(elapsed),
    },
    metrics,
    percent: 100,
    message: 'Terminado',
  });
}

function endAborted(ctx: RunContext, err: AbortedError, log: JobLog, percent: number, metrics: ReturnType<typeof metricsAt>): JobEndFields {
  switch (err.reason) {
    case 'stop':
      log.line('Detenido a petición del usuario');
      return { status: 'stopped', metrics, percent, message: 'Detenido' };
    case 'timeout':
      log.line(`Tiempo agotado (${ctx.run.timeout_seconds} s)`);
      return {
        status: 'timed_out',
        error: `Tiempo de ejecución agotado: superó timeout_seconds (${ctx.run.timeout_seconds} s)`,
        metrics,
        percent,
      };
    case 'shutdown':
      log.line('El agente se detuvo antes de terminar');
      return { status: 'failed', error: `El agente de la máquina ${ctx.machine.name} se detuvo antes de terminar el job`, metrics };
    case 'lost':
      // the platform already ended this job; the fenced end below will be refused
      return { status: 'failed', error: 'El job ya no pertenece a esta ejecución' };
  }
}
