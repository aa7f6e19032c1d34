import type { Job } from 'bullmq';
import { LOG_APPEND_MAX_BYTES, type AgentMachine, type Engine, type JobEnd, type LogAppend, type Logger, type StartedJob } from '@svc/core';
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
  /**
   * Resolves when the agent hears that this job's question was answered (pub/sub), or after
   * `ms`; rejects with AbortedError when the run is aborted.
   */
  inputNews(ms: number): Promise<void>;
  /** the job's timeout does not run while it waits for input: the local one neither */
  pauseTimeout(): void;
  /** the timeout runs again, now until `at` (the engine's new timeout_at) */
  resumeTimeout(at: Date | null): void;
}

/** How often a robot waiting for input reads its job when no news comes (a lost pub/sub message). */
export const INPUT_POLL_MS = 1000;

/**
 * Asks a person (jobs/input.ts: `running → waiting_input`) and waits for the answer, which it
 * returns. The wait shows signs of life (the agent keeps renewing the lease), reads the job on
 * every piece of news and at least every INPUT_POLL_MS, and ends with AbortedError when the run
 * is stopped or no longer owns its job.
 */
export async function askForInput(ctx: RunContext, run: StartedJob, question: { prompt: string; options: Record<string, unknown> }, log: JobLog): Promise<unknown> {
  const res = await ctx.life.db('asking for input', () => ctx.machines.askInput(run.id, run.attempt, question));
  if ('refused' in res) {
    ctx.abort(res.refused === 'stop_requested' ? 'stop' : 'lost');
    throw new AbortedError(reasonOf(ctx.signal));
  }
  ctx.pauseTimeout();
  log.line(`Esperando una respuesta: ${question.prompt}`);
  ctx.journal.write({ event: 'input-asked', job_id: run.id, machine_id: ctx.machine.id, attempt: run.attempt });
  for (;;) {
    await ctx.inputNews(INPUT_POLL_MS);
    ctx.life.sign();
    const state = await ctx.life.db('reading the answer', () => ctx.machines.readInput(run.id, run.attempt));
    if (state?.status === 'running' && state.answer) {
      ctx.resumeTimeout(state.timeout_at);
      log.line(`Respuesta recibida: ${JSON.stringify(state.answer.value)}`);
      ctx.journal.write({ event: 'input-answered', job_id: run.id, machine_id: ctx.machine.id, attempt: run.attempt });
      return state.answer.value;
    }
    if (state?.status === 'waiting_input') continue;
    ctx.abort(state?.status === 'stopped' || state?.stop_requested ? 'stop' : 'lost');
    throw new AbortedError(reasonOf(ctx.signal));
  }
}

/**
 * The run's log as the robot writes it: lines are kept only until they are sent, appended to the
 * job in Postgres with the next progress report (one statement), numbered so a report repeated
 * after a lost answer appends once. The engine bounds the whole log (docs/decisions/job-logs.md).
 */
export class JobLog {
  private pending = '';
  private seq = 0;
  line(message: string): void {
    this.pending += `${new Date().toISOString()} ${message}\n`;
  }
  /** The lines written since the last take, as numbered appends of at most LOG_APPEND_MAX_BYTES. */
  take(): LogAppend[] {
    const texts = splitForAppend(this.pending);
    this.pending = '';
    return texts.map((text) => ({ text, seq: ++this.seq }));
  }
  /**
   * Everything not sent yet: all but the last append go on their own (only past 64 KiB of new
   * lines), the last is returned to ride on the caller's statement (a progress report, the end).
   */
  async flush(ctx: RunContext, run: StartedJob): Promise<LogAppend | undefined> {
    const appends = this.take();
    const last = appends.pop();
    // a run that lost its job appends nothing: its progress report or end finds that out
    for (const a of appends) await ctx.life.db('appending to the job log', () => ctx.machines.appendLogs(run.id, run.attempt, a));
    return last;
  }
  /** The run's end with the lines still unsent. */
  async end(ctx: RunContext, run: StartedJob, end: JobEnd): Promise<JobEnd> {
    const last = await this.flush(ctx, run);
    return last ? { ...end, logs_append: last } : end;
  }
}

/** Splits text at line ends into pieces of at most LOG_APPEND_MAX_BYTES (a longer line is cut). */
export function splitForAppend(text: string, max = LOG_APPEND_MAX_BYTES): string[] {
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
  // a question halfway through (after this step), forced by the directive or drawn at input_rate
  const askAt = directive.input || (directive.input === undefined && b.input_rate > 0 && ctx.random() < b.input_rate) ? Math.ceil(steps / 2) : 0;
  const forced = typeof directive.input === 'object' ? directive.input : {};
  let input: { value: unknown } | null = null;
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
        logs_append: await log.flush(ctx, run),
        resource_metrics: metricsAt(profile, Date.now() - started, duration),
      };
      // fenced and idempotent: safe to send again after a lost answer
      const res = await ctx.life.db('reporting job progress', () => ctx.machines.reportProgress(run.id, run.attempt, progress));
      if (!res) ctx.abort('lost');
      else if (res.stop_requested) ctx.abort('stop');
      if (ctx.signal.aborted) throw new AbortedError(reasonOf(ctx.signal));
      await ctx.bullJob.updateProgress(percent).catch(() => undefined);
      if (i === askAt) {
        const value = await askForInput(ctx, run, { prompt: forced.prompt ?? b.input_prompt, options: forced.options ?? b.input_options }, log);
        input = { value };
      }
    }
  } catch (err) {
    if (!(err instanceof AbortedError)) throw err;
    return log.end(ctx, run, endAborted(ctx, run, err, log, percent, metricsAt(profile, Date.now() - started, duration)));
  }
  const elapsed = Date.now() - started;
  const fail = directive.outcome ? directive.outcome === 'fail' : ctx.random() < b.failure_rate;
  const metrics = metricsAt(profile, elapsed, elapsed);
  if (fail) {
    const message = directive.error_message ?? b.failure_message;
    log.line(`Error: ${message}`);
    return log.end(ctx, run, { to: 'failed', error_message: message, resource_metrics: metrics, progress_percent: percent });
  }
  log.line('Terminado correctamente');
  return log.end(ctx, run, {
    to: 'completed',
    output_data: {
      ...b.output,
      ...(directive.output ?? {}),
      ...(input ? { input_value: input.value } : {}),
      simulated: true,
      machine: ctx.machine.name,
      duration_ms: Math.round(elapsed),
    },
    resource_metrics: metrics,
    progress_percent: 100,
    progress_message: 'Terminado',
  });
}

function endAborted(ctx: RunContext, run: StartedJob, err: AbortedError, log: JobLog, percent: number, metrics: ReturnType<typeof metricsAt>): JobEnd {
  switch (err.reason) {
    case 'stop':
      log.line('Detenido a petición del usuario');
      return { to: 'stopped', resource_metrics: metrics, progress_percent: percent, progress_message: 'Detenido' };
    case 'local-timeout':
      log.line(`Tiempo agotado (${run.timeout_seconds} s)`);
      return {
        to: 'timed_out',
        error_message: `Tiempo de ejecución agotado: superó timeout_seconds (${run.timeout_seconds} s)`,
        resource_metrics: metrics,
        progress_percent: percent,
      };
    case 'shutdown':
      log.line('El agente se detuvo antes de terminar');
      return { to: 'failed', error_message: `El agente de la máquina ${ctx.machine.name} se detuvo antes de terminar el job`, resource_metrics: metrics };
    case 'timeout':
    case 'lost':
      // the dispatcher already ended this job; the guarded write below will be refused
      return { to: 'failed', error_message: 'El job ya no pertenece a esta ejecución' };
  }
}
