import type {
  ClaimedItem, ItemOutcome, JobEnd, SettleAndClaimResult, StartedJob,
} from '@svc/core';
import { directiveOf, sample } from './behaviour';
import { AbortedError, crashNow, reasonOf, stall, work } from './abort';
import { JobLog, type RunContext } from './run-job';
import { AutoPrefetch, takeSize } from './prefetch';

const PROGRESS_EVERY_MS = 500;
/** how often a consumer asks whether other jobs wait for its machine's slot */
const YIELD_CHECK_MS = 2000;

/**
 * A consumer job (docs/decisions/dispatch.md "Queue consumers"): takes items of its queue in the take order and
 * processes them one at a time until none is ready or it is asked to stop.
 *
 * Each round trip settles the outcomes of the items just processed and takes the next ones
 * (the hand-off buffer: `prefetch` of them, or with 'auto' as many as the recent items' speed
 * allows, see prefetch.ts; with 1 the consumer is strictly one at a time).
 * A stop (or the agent's shutdown) lets the current item finish; items taken but not started
 * go back to `new` untouched. A timeout or a lost ownership interrupts the item at once: the
 * engine fails it and its retry policy applies.
 *
 * Postgres may go away at any moment (a restart, a failover): every call waits it out with
 * back-off, and a round trip whose answer was lost is resolved by the fencing rules before the
 * loop goes on (see `roundTrip`), so the consumer neither dies nor forgets an item.
 */
export async function consumeQueue(ctx: RunContext, run: StartedJob): Promise<JobEnd> {
  const queueId = run.queue_id!;
  const b = ctx.behaviour;
  const log = new JobLog();
  const counts = { completed: 0, pending_review: 0, failed: 0, refused: 0 };
  let buffer: ClaimedItem[] = [];
  let outcomes: ItemOutcome[] = [];
  let lastProgress = Date.now();
  let lastYieldCheck = Date.now();
  let yielded = false;
  let hardAbort: AbortedError | null = null;
  const auto = new AutoPrefetch();
  log.line(`Consumidor de la cola iniciado en la máquina ${ctx.machine.name} (prefetch ${b.prefetch})`);

  // items stop only for the hard reasons; a stop or shutdown waits for the current item
  const itemAbort = new AbortController();
  const onAbort = () => {
    const reason = reasonOf(ctx.signal);
    if (reason !== 'stop' && reason !== 'shutdown') itemAbort.abort(reason);
  };
  ctx.signal.addEventListener('abort', onAbort);
  if (ctx.signal.aborted) onAbort();

  const account = (settled: Array<{ id: string; status: string }>, sent: number) => {
    for (const s of settled) {
      if (s.status === 'completed') counts.completed++;
      else if (s.status === 'pending_review') counts.pending_review++;
      else if (s.status === 'failed') counts.failed++;
    }
    counts.refused += sent - settled.length;
  };

  /**
   * Settles `outcomes` and takes `take` items, in one statement. When its answer is lost, the
   * statement may or may not have been applied: the same outcomes are sent again with nothing to
   * take (a repeat of an applied settle is accepted again), whatever the lost take may have
   * handed to this job unseen goes back to `new` (releaseUnknownClaims), and only then does it
   * take afresh. Nothing is settled twice and no item stays `in_progress` unknown to its holder.
   */
  const roundTrip = async (take: number): Promise<SettleAndClaimResult> => {
    let lost = false;
    return ctx.life.db('settling and taking queue items', async () => {
      const req = { queueId, jobId: run.id, jobAttempt: run.attempt, machineId: ctx.machine.id };
      if (!lost) return ctx.machines.settleAndClaim({ ...req, outcomes, take });
      const { settled } = await ctx.machines.settleAndClaim({ ...req, outcomes, take: 0 });
      const released = await ctx.machines.releaseUnknownClaims(run.id, buffer.map((i) => i.id));
      if (released) log.line(`${released} elementos tomados sin respuesta (conexión perdida) devueltos a la cola`);
      const { claimed } = take > 0 ? await ctx.machines.settleAndClaim({ ...req, outcomes: [], take }) : { claimed: [] };
      return { settled, claimed };
    }, () => {
      lost = true;
    });
  };

  try {
    while (!ctx.signal.aborted) {
      if (buffer.length === 0) {
        if (Date.now() - lastYieldCheck >= YIELD_CHECK_MS) {
          lastYieldCheck = Date.now();
          if (await ctx.life.db('looking for waiting jobs', () => ctx.machines.hasWaitingJobs(ctx.machine.id, run.id))) {
            yielded = true;
            log.line('Otro job espera esta máquina: el consumidor cede su slot');
            break;
          }
        }
        const sent = outcomes.length;
        const res = await roundTrip(takeSize(b.prefetch, auto));
        account(res.settled, sent);
        outcomes = [];
        buffer = res.claimed;
        if (buffer.length === 0) break;
      }
      const item = buffer.shift()!;
      const started = performance.now();
      outcomes.push(await processItem(ctx, run, item, itemAbort.signal));
      auto.observe(performance.now() - started);
      if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
        lastProgress = Date.now();
        await progress(ctx, run, counts, outcomes.length, log);
      }
    }
  } catch (err) {
    if (!(err instanceof AbortedError)) throw err;
    hardAbort = err;
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    if (outcomes.length) {
      const sent = outcomes.length;
      const res = await roundTrip(0);
      account(res.settled, sent);
      outcomes = [];
    }
    if (buffer.length) {
      const held = buffer;
      const released = await ctx.life.db('handing back queue items', () => ctx.machines.releaseItems(run.id, held));
      log.line(`${released} elementos tomados y no iniciados devueltos a la cola`);
    }
  }

  const summary = `${counts.completed} completados, ${counts.pending_review} a revisión, ${counts.failed} fallidos`;
  log.line(`Consumidor terminado: ${summary}`);
  const output = { queue_id: queueId, yielded, items_completed: counts.completed, items_pending_review: counts.pending_review, items_failed: counts.failed, items_refused: counts.refused };
  const reason = hardAbort ? hardAbort.reason : ctx.signal.aborted ? reasonOf(ctx.signal) : null;
  if (reason === 'stop') {
    log.line('Detenido a petición del usuario');
    return log.end(ctx, run, { to: 'stopped', output_data: output, progress_message: summary });
  }
  if (reason === 'local-timeout') {
    return log.end(ctx, run, { to: 'timed_out', error_message: `Tiempo de ejecución agotado: superó timeout_seconds (${run.timeout_seconds} s)`, output_data: output });
  }
  if (reason === 'timeout' || reason === 'lost') {
    return log.end(ctx, run, { to: 'failed', error_message: 'El job ya no pertenece a esta ejecución', output_data: output });
  }
  // drained, or the agent is shutting down: the consumer did its part either way
  return log.end(ctx, run, { to: 'completed', output_data: output, progress_percent: 100, progress_message: summary });
}

async function processItem(ctx: RunContext, run: StartedJob, item: ClaimedItem, signal: AbortSignal): Promise<ItemOutcome> {
  const b = ctx.behaviour;
  const d = directiveOf(item.data);
  ctx.journal.write({ event: 'item-start', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt });
  if (d.crash || (b.crash === 'mid-item' && ctx.itemsProcessed.n >= b.crash_after_items)) crashNow();
  const started = Date.now();
  const duration = d.duration_ms ?? sample(b.item_duration, ctx.random);
  try {
    if (d.stall && item.retry_count === 0) await stall(signal);
    await work(duration, signal, () => ctx.life.sign());
  } catch (err) {
    // the robot stopped working on it now: the journal says when (fault tests check overlaps)
    if (err instanceof AbortedError) ctx.journal.write({ event: 'item-end', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt, outcome: 'aborted' });
    throw err;
  }
  ctx.itemsProcessed.n++;
  let outcome: ItemOutcome['status'];
  if (d.outcome) outcome = d.outcome === 'fail' ? 'failed' : d.outcome === 'review' ? 'pending_review' : 'completed';
  else {
    const r = ctx.random();
    outcome = r < b.failure_rate ? 'failed' : r < b.failure_rate + b.review_rate ? 'pending_review' : 'completed';
  }
  ctx.journal.write({ event: 'item-end', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt, outcome });
  if (outcome === 'failed') {
    return { id: item.id, attempt: item.attempt, status: 'failed', error_message: d.error_message ?? b.failure_message };
  }
  return {
    id: item.id,
    attempt: item.attempt,
    status: outcome,
    result: { ...(d.output ?? {}), machine: ctx.machine.name, duration_ms: Date.now() - started, ...(outcome === 'pending_review' ? { review_reason: 'El robot pide una revisión humana' } : {}) },
  };
}

async function progress(ctx: RunContext, run: StartedJob, counts: { completed: number; pending_review: number; failed: number }, unsettled: number, log: JobLog): Promise<void> {
  const done = counts.completed + counts.pending_review + counts.failed + unsettled;
  const progress = { progress_message: `${done} elementos procesados`, logs_append: await log.flush(ctx, run) };
  const res = await ctx.life.db('reporting job progress', () => ctx.machines.reportProgress(run.id, run.attempt, progress));
  if (!res) ctx.abort('lost');
  else if (res.stop_requested) ctx.abort('stop');
  await ctx.bullJob.updateProgress({ items_processed: done }).catch(() => undefined);
}
