import type { ItemOutcome, JobEndFields, QueueItem } from '@svc/agent';
import { BUSINESS_FAILURE_MESSAGE, directiveOf, drawEnd, forcedException, sample } from './behaviour';
import { AbortedError, crashNow, reasonOf, stall, work } from './abort';
import { JobLog, report, type RunContext } from './run-job';
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
 * The platform may go away at any moment (an API replica, Postgres): the SDK waits for it and
 * sends a round trip whose answer was lost again as a repeat, which the platform resolves by the
 * fencing rules (it hands back whatever that take gave this job beyond the items named `held`),
 * so the consumer neither dies nor forgets an item.
 */
export async function consumeQueue(ctx: RunContext): Promise<JobEndFields> {
  const { run } = ctx;
  const queueId = run.queue_id!;
  const b = ctx.behaviour;
  const log = new JobLog();
  const counts = { completed: 0, pending_review: 0, failed: 0, refused: 0 };
  let buffer: QueueItem[] = [];
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

  /** Settles `outcomes` and takes `take` items, in one round trip (see above for a lost answer). */
  const roundTrip = (take: number) => ctx.job.items.take({ outcomes, take, held: buffer.map((i) => i.id) });

  try {
    while (!ctx.signal.aborted) {
      if (buffer.length === 0) {
        if (Date.now() - lastYieldCheck >= YIELD_CHECK_MS) {
          lastYieldCheck = Date.now();
          if (await ctx.job.items.othersWaiting()) {
            yielded = true;
            log.line('Otro job espera esta máquina: el consumidor cede su slot');
            break;
          }
        }
        const sent = outcomes.length;
        const res = await roundTrip(takeSize(b.prefetch, auto));
        account(res.settled, sent);
        outcomes = [];
        buffer = res.items;
        if (buffer.length === 0) break;
      }
      const item = buffer.shift()!;
      const started = performance.now();
      outcomes.push(await processItem(ctx, item, itemAbort.signal));
      auto.observe(performance.now() - started);
      if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
        lastProgress = Date.now();
        await progress(ctx, counts, outcomes.length, log);
      }
    }
  } catch (err) {
    if (!(err instanceof AbortedError) && !ctx.signal.aborted) throw err;
    hardAbort = err instanceof AbortedError ? err : new AbortedError(reasonOf(ctx.signal));
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
  }
  // a run that no longer owns its job settles nothing: its writes would be refused
  if (reasonOf(ctx.signal) !== 'lost' || !ctx.signal.aborted) {
    try {
      if (outcomes.length) {
        const sent = outcomes.length;
        const res = await roundTrip(0);
        account(res.settled, sent);
        outcomes = [];
      }
      if (buffer.length) {
        const held = buffer;
        buffer = [];
        const released = await ctx.job.items.release(held.map((i) => ({ id: i.id, attempt: i.attempt })));
        log.line(`${released} elementos tomados y no iniciados devueltos a la cola`);
      }
    } catch (err) {
      // refused as stale: the run was lost meanwhile (the SDK aborted its signal)
      if (!ctx.signal.aborted) throw err;
      hardAbort ??= new AbortedError(reasonOf(ctx.signal));
    }
  }

  const summary = `${counts.completed} completados, ${counts.pending_review} a revisión, ${counts.failed} fallidos`;
  log.line(`Consumidor terminado: ${summary}`);
  const output = { queue_id: queueId, yielded, items_completed: counts.completed, items_pending_review: counts.pending_review, items_failed: counts.failed, items_refused: counts.refused };
  const reason = hardAbort ? hardAbort.reason : ctx.signal.aborted ? reasonOf(ctx.signal) : null;
  if (reason === 'stop') {
    log.line('Detenido a petición del usuario');
    return log.end({ status: 'stopped', output, message: summary });
  }
  if (reason === 'timeout') {
    return log.end({ status: 'timed_out', error: `Tiempo de ejecución agotado: superó timeout_seconds (${run.timeout_seconds} s)`, output });
  }
  if (reason === 'lost') {
    return log.end({ status: 'failed', error: 'El job ya no pertenece a esta ejecución', output });
  }
  // drained, or the agent is shutting down: the consumer did its part either way
  return log.end({ status: 'completed', output, percent: 100, message: summary });
}

async function processItem(ctx: RunContext, item: QueueItem, signal: AbortSignal): Promise<ItemOutcome> {
  const { run } = ctx;
  const b = ctx.behaviour;
  const d = directiveOf(item.data);
  ctx.journal.write({ event: 'item-start', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt });
  if (d.crash || (b.crash === 'mid-item' && ctx.itemsProcessed.n >= b.crash_after_items)) crashNow();
  const started = Date.now();
  const duration = d.duration_ms ?? sample(b.item_duration, ctx.random);
  try {
    if (d.stall && item.retryCount === 0) await stall(signal);
    await work(duration, signal, () => ctx.job.alive());
  } catch (err) {
    // the robot stopped working on it now: the journal says when (fault tests check overlaps)
    if (err instanceof AbortedError) ctx.journal.write({ event: 'item-end', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt, outcome: 'aborted' });
    throw err;
  }
  ctx.itemsProcessed.n++;
  // one draw (drawEnd): an application failure, a business one, a review, or completed
  const drawn = d.outcome ? (d.outcome === 'fail' ? forcedException(d) : d.outcome === 'review' ? 'review' : 'completed') : drawEnd(b, ctx.random(), true);
  const exception = drawn === 'application' || drawn === 'business' ? drawn : undefined;
  const outcome: ItemOutcome['status'] = exception ? 'failed' : drawn === 'review' ? 'pending_review' : 'completed';
  ctx.journal.write({ event: 'item-end', item_id: item.id, job_id: run.id, machine_id: ctx.machine.id, attempt: item.attempt, outcome, ...(exception ? { exception } : {}) });
  if (exception) {
    const message = d.error_message ?? (exception === 'business' ? BUSINESS_FAILURE_MESSAGE : b.failure_message);
    return { id: item.id, attempt: item.attempt, status: 'failed', error_message: message, exception };
  }
  return {
    id: item.id,
    attempt: item.attempt,
    status: outcome,
    result: { ...(d.output ?? {}), machine: ctx.machine.name, duration_ms: Date.now() - started, ...(outcome === 'pending_review' ? { review_reason: 'El robot pide una revisión humana' } : {}) },
  };
}

async function progress(ctx: RunContext, counts: { completed: number; pending_review: number; failed: number }, unsettled: number, log: JobLog): Promise<void> {
  const done = counts.completed + counts.pending_review + counts.failed + unsettled;
  await report(ctx, { message: `${done} elementos procesados`, log: log.take() });
}
