import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import {
  DbOutage, countWebhookOutcome, createEngine, delivererTimingsOf, createLogger, createPooledSql, databaseSettings, parseConfig, webhookSettingsOf,
  type DeliveryOutcome, type Logger, type WebhookDeliverer,
} from '@svc/core';
import { createDeliveryGovernor } from './delivery-governor';

/**
 * Webhook delivery in a thread of the dispatcher that runs only on CPU the rest leaves
 * (docs/decisions/events.md, "Delivery yields to the work"). One request per event, in order,
 * costs the deliverer far more CPU than the change that made the event; on a host whose cores
 * the work already fills, the thread takes what the work leaves and catches up when it is done,
 * instead of slowing the work that makes the events; where the idle class is not free (a
 * hypervisor meters the guest's CPU whatever its priority), it also holds itself to a small share
 * of a core while the host is busy (delivery-governor.ts). On a host of its own it changes nothing.
 *
 * The thread has its own Postgres pool and reports its attempts to this thread's metrics.
 */

const ROLE = 'webhook-delivery';
const RESTART_MS = 1000;

interface CountMessage { type: 'count'; outcome: DeliveryOutcome; n: number }

/** The dispatcher's side: starts the thread (configured from the same environment), restarts it if it dies, closes it on close(). */
export function createDeliveryThread(logger: Logger): WebhookDeliverer {
  let worker: Worker | null = null;
  let closed = false;
  let restart: NodeJS.Timeout | null = null;

  function spawn(): void {
    const w = new Worker(__filename, { workerData: { role: ROLE } });
    worker = w;
    w.on('message', (m: CountMessage) => {
      if (m.type === 'count') countWebhookOutcome(m.outcome, m.n);
    });
    w.on('error', (err) => logger.error('webhook delivery thread failed', { err: err.message }));
    w.on('exit', (code) => {
      if (worker === w) worker = null;
      if (closed) return;
      logger.warn('webhook delivery thread ended; starting it again', { code });
      restart = setTimeout(spawn, RESTART_MS);
      restart.unref();
    });
  }

  return {
    start: spawn,
    passOnce: () => Promise.reject(new Error('the delivery thread runs its own passes')),
    async close() {
      closed = true;
      if (restart) clearTimeout(restart);
      const w = worker;
      if (!w) return;
      const ended = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ type: 'close' });
      // a pass waits for its current request (10 s at most) before it ends
      const timer = setTimeout(() => void w.terminate(), 15_000);
      await ended;
      clearTimeout(timer);
    },
  };
}

/**
 * Puts this thread in the SCHED_IDLE class (Linux, through util-linux's `chrt`, which any user
 * may do to their own threads): it runs only when no other thread wants the CPU, and one that
 * wakes up takes the CPU from it at once. A nice value is not enough: the work's round trips
 * wake up thousands of times a second, and each waited behind a niced thread's time slice (B3
 * with a subscription kept more of its rate with SCHED_IDLE than with nice 10: BENCHMARKS.md,
 * "Issues 17 and 20, second session").
 * Without `chrt`, nice 19.
 */
export function lowerThreadPriority(priority: 'idle' | 'normal', logger: Logger): void {
  if (priority === 'normal' || process.platform !== 'linux') return;
  let tid: number;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch (err) {
    logger.warn('webhook delivery thread keeps the normal CPU priority', { err: (err as Error).message });
    return;
  }
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 5000 });
    return;
  } catch { /* no chrt here: the lowest nice value instead */ }
  try {
    setPriority(tid, 19);
  } catch (err) {
    logger.warn('webhook delivery thread keeps the normal CPU priority', { err: (err as Error).message });
  }
}

async function runThread(): Promise<void> {
  const config = parseConfig(process.env);
  const logger = createLogger({ level: config.logLevel, service: 'dispatcher' });
  lowerThreadPriority(config.webhookDeliveryPriority, logger);
  const sql = createPooledSql(databaseSettings(config), { max: 2 });
  const engine = createEngine({ sql, logger, webhooks: webhookSettingsOf(config) });
  // a Postgres outage is logged once per process, by the dispatcher's main thread, whose periodic
  // work meets it within a second or two: this thread's own view of it stays silent
  const outage = new DbOutage(createLogger({ level: 'error', service: 'dispatcher' }));
  const governor = config.webhookDeliveryPriority === 'idle'
    ? createDeliveryGovernor(config.webhookDeliveryBusyShare, config.webhookDeliveryMaxLagSeconds * 1000)
    : null;
  const deliverer = engine.events.deliverer({
    ...delivererTimingsOf(config), outage,
    ...(governor ? { pace: governor.pace } : {}),
    countOutcome: (outcome, n) => parentPort!.postMessage({ type: 'count', outcome, n } satisfies CountMessage),
  });
  parentPort!.on('message', async (m: { type: string }) => {
    if (m.type !== 'close') return;
    // a pause under way would hold the close up to ten seconds
    governor?.release();
    await deliverer.close();
    await sql.end({ timeout: 5 });
    // ends this thread only
    process.exit(0);
  });
  deliverer.start();
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  runThread().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
