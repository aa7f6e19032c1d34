import { Worker, type Job } from 'bullmq';
import {
  DISPATCH_QUEUE, DISPATCH_SCHEDULERS, recordArchiveFromConfig, delivererTimingsOf, webhookSettingsOf, DbOutage, IDEMPOTENCY_PURGE_EVERY_MS, createBullDispatch, createEngine, createRedis, isConnectionError, primaries, renewEpoch, type BullDispatch, type Config, type DispatchJobName, type DispatchPayloads, type Logger, type OutboxRelay, type RedisClient, type Sql, type WebhookDeliverer,
} from '@svc/core';
import { dispatcherPassSeconds, dispatcherPassesStarted } from '@svc/core/observability';

const PERIODIC: ReadonlySet<string> = new Set(DISPATCH_SCHEDULERS);
/** How long one tick of the bulk-actions pass runs chunks before it lets the next tick go on. */
const BULK_SLICE_MS = 5000;
/** How long one tick of the retention pass starts new batches: a backlog drains tick by tick. */
const RETENTION_SLICE_MS = 10_000;

export interface DispatcherDeps {
  config: Config;
  sql: Sql;
  /** Postgres itself for the relay's LISTEN when the query pool goes through a transaction pooler (default: that pool) */
  directSql?: Sql;
  logger: Logger;
  /** worker concurrency on the `{dispatch}` queue */
  concurrency?: number;
  /** webhook delivery (default: here with DISPATCHER_ROLE=all, none with dispatch; deliverer.ts runs it alone) */
  deliverer?: WebhookDeliverer | null;
}

export interface Dispatcher {
  readonly bull: BullDispatch;
  /** Publishes the effects commands recorded in the outbox (docs/decisions/outbox.md). */
  readonly relay: OutboxRelay;
  start(): Promise<void>;
  /** Stops taking work, lets the current one finish, closes connections it opened. */
  close(): Promise<void>;
  /** One sweep now (tests and the first tick). */
  sweep(): Promise<void>;
}

/**
 * The dispatcher: a BullMQ Worker on the `{dispatch}` queue. It holds no state of its own;
 * every decision is read from Postgres, so any number of replicas can run and any of them can
 * be killed. Periodic work runs as BullMQ job schedulers (one replica runs each tick).
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { config, sql, logger } = deps;
  const connection: RedisClient = createRedis(config.redis);
  const bull = createBullDispatch({ redis: connection, prefix: config.redisPrefix, logger });
  const recordArchive = recordArchiveFromConfig(config.archive);
  // the consumer jobs it creates go to their machines' queues right after their commit (atOnce)
  const engine = createEngine({ sql, directSql: deps.directSql, logger, webhooks: webhookSettingsOf(config), recordArchive, atOnce: bull,
    claimFloor: config.claimFloor, claimFloorEveryMs: config.claimFloorEveryMs, claimFloorEngageSeconds: config.claimFloorEngageSeconds,
  });
  const { sweeps } = engine;
  let worker: Worker | null = null;
  let epochTimer: NodeJS.Timeout | null = null;
  let closing = false;
  // every tick and nudge talks to Postgres: a restart is one line when it starts, one when it ends
  const outage = new DbOutage(logger);
  const relay = engine.outbox.relay(bull, outage);
  // webhook deliveries (docs/decisions/events.md): every delivering process takes a lease per subscription
  const deliverer = deps.deliverer !== undefined
    ? deps.deliverer
    : config.dispatcherRole === 'all' ? engine.events.deliverer({ ...delivererTimingsOf(config), outage }) : null;

  // the jobs a sweep ends carry their effects (aborts, follow-ups, retry hand-offs) in the outbox
  async function startConsumers(queueId: string): Promise<number> {
    const created = await sweeps.startConsumers(queueId);
    if (created.length) logger.debug('consumer jobs started', { queue_id: queueId, jobs: created.length });
    return created.length;
  }

  async function retryItems(queueId: string | null): Promise<void> {
    const r = await sweeps.retryItems(queueId);
    for (const q of r.readyQueues) await startConsumers(q);
  }

  async function sweep(): Promise<void> {
    const timedOut = await sweeps.timeOutJobs();
    if (timedOut.ended.length) logger.info('jobs timed out', { jobs: timedOut.ended.map((j) => j.id) });

    // heartbeats and lease renewals could not be written while Postgres was away from this
    // dispatcher too: judge machines and runs by them only once agents had time to write again
    if (outage.msSinceRecovery() >= config.machineOfflineAfterSeconds * 1000) {
      const offline = await sweeps.offlineMachines(config.machineOfflineAfterSeconds);
      if (offline.offline.length) logger.warn('machines offline', { machines: offline.offline.map((m) => m.name) });
      if (offline.ended.length) logger.warn('jobs of offline machines or lapsed leases ended', { jobs: offline.ended.map((j) => j.id) });
      if (offline.handedBack.length) logger.warn('jobs never acknowledged by their robot handed out again', { jobs: offline.handedBack.map((j) => j.id) });
    }

    const orphanQueues = await sweeps.failOrphans();
    for (const q of orphanQueues) await retryItems(q);
    await retryItems(null);

    for (const j of await engine.machines.pendingStops(1000)) await bull.publishAbort(j.id, j.machine_id, 'stop');

    const breaches = await sweeps.slaBreaches();
    for (const b of breaches) logger.warn('job SLA breached', { job_id: b.id, tenant_id: b.tenant_id, sla_due_at: b.sla_due_at.toISOString() });

    // the charts' per-minute samples: the first sweep of a minute, on any replica, takes them
    await sweeps.sampleMinute();

    // one batch per tick (an indexed look-up when there is nothing to do); a backlog drains tick by tick
    const archived = await sweeps.archiveLogs(config.logRetentionDays);
    if (archived.length) logger.info('job logs archived', { jobs: archived.length });
  }

  /**
   * A dispatch job that failed for want of Postgres is not retried here: the periodic ticks come
   * again every DISPATCH_SWEEP_MS and nudges are only shortcuts to what the ticks find anyway, so
   * the work resumes by itself once Postgres answers. The outage is logged once (see DbOutage).
   */
  async function handle(job: Job): Promise<unknown> {
    const periodic = PERIODIC.has(job.name) ? job.name : null;
    if (periodic) dispatcherPassesStarted.inc({ pass: periodic });
    const end = periodic ? dispatcherPassSeconds.startTimer({ pass: periodic }) : null;
    try {
      const result = await dispatch(job);
      end?.();
      outage.ok();
      return result;
    } catch (err) {
      outage.failed(err, `dispatch job ${job.name}`);
      throw err;
    }
  }

  async function dispatch(job: Job): Promise<unknown> {
    const name = job.name as DispatchJobName;
    switch (name) {
      case 'queue-ready': {
        const { queue_id } = job.data as DispatchPayloads['queue-ready'];
        return { started: await startConsumers(queue_id) };
      }
      case 'items-failed': {
        await retryItems((job.data as DispatchPayloads['items-failed']).queue_id);
        return null;
      }
      case 'machine-online': {
        const { tenant_id } = job.data as DispatchPayloads['machine-online'];
        let started = 0;
        for (const q of await sweeps.queuesNeedingConsumers(tenant_id)) started += await startConsumers(q);
        return { started };
      }
      case 'sweep': {
        await sweep();
        return null;
      }
      case 'consumers': {
        let started = 0;
        for (const q of await sweeps.queuesNeedingConsumers()) started += await startConsumers(q);
        return { started };
      }
      case 'reconcile': {
        return sweeps.reconcile(bull, { logger });
      }
      case 'purge-idempotency-keys': {
        // the periodic housekeeping: expired Idempotency-Keys, and queue-stat buckets and samples past their day
        const purged = await sweeps.expiredIdempotencyKeys();
        if (purged) logger.info('expired Idempotency-Keys purged', { purged });
        const statBuckets = await sweeps.oldQueueStatBuckets();
        const events = await sweeps.oldEvents(config.eventRetentionDays);
        return { purged, statBuckets, events };
      }
      case 'schedules': {
        const r = await sweeps.fireSchedules({ graceSeconds: config.scheduleMisfireGraceSeconds });
        if (r.fired.length) logger.info('scheduled jobs started', { jobs: r.fired.map((f) => f.job_id) });
        for (const x of r.refused) logger.warn('scheduled run refused', { schedule_id: x.schedule_id, tick: x.tick.toISOString(), reason: x.reason });
        for (const x of r.skipped) logger.info('missed schedule ticks skipped', { schedule_id: x.schedule_id, from: x.from.toISOString() });
        return { fired: r.fired.length, refused: r.refused.length, skipped: r.skipped.length };
      }
      case 'bulk-actions': {
        // a slice per tick, so one large action neither holds a worker slot for long nor starves another
        const chunks = await engine.bulk.run({ budgetMs: BULK_SLICE_MS });
        return { chunks };
      }
      case 'retention': {
        const scopes = await sweeps.retention({ budgetMs: RETENTION_SLICE_MS, dutyCycle: config.retentionDuty });
        return { scopes: scopes.length, deleted: scopes.reduce((n, s) => n + s.deleted, 0) };
      }
      case 'claim-floor': {
        return { floors: await sweeps.claimFloors() };
      }
      default: {
        const unknown: never = name;
        logger.warn('unknown dispatch job', { name: unknown });
        return null;
      }
    }
  }

  async function upsertSchedulers(): Promise<void> {
    const every: Record<(typeof DISPATCH_SCHEDULERS)[number], number> = {
      sweep: config.dispatchSweepMs,
      consumers: config.dispatchSweepMs,
      reconcile: config.dispatchReconcileMs,
      'purge-idempotency-keys': IDEMPOTENCY_PURGE_EVERY_MS,
      // a schedule may tick every second: never slower than that, faster when the sweeps are
      schedules: Math.min(1000, config.dispatchSweepMs),
      'bulk-actions': Math.min(1000, config.dispatchSweepMs),
      retention: config.retentionEveryMs,
      'claim-floor': config.claimFloorEveryMs,
    };
    for (const id of DISPATCH_SCHEDULERS) {
      await bull.dispatchQueue.upsertJobScheduler(id, { every: every[id] }, {
        name: id,
        data: {},
        opts: { removeOnComplete: true, removeOnFail: 50 },
      });
    }
  }

  /**
   * Redis may lose everything (a flush, a failover without persistence), and on a cluster any
   * one primary may. Keys written NX by the dispatchers, one per primary, tell: when one is
   * missing, rebuild schedulers and re-add pending jobs now. The rebuild is the whole one (every
   * re-add is a no-op for what is still there), so it restores what the lost primary held.
   */
  async function checkEpoch(): Promise<void> {
    const { lost } = await renewEpoch(connection, bull.keys.dispatchEpoch);
    if (lost.length) {
      try {
        await upsertSchedulers();
        await sweeps.reconcile(bull, { logger, minAgeMs: 0 });
        await bull.addDispatch('consumers', {});
        logger.info('dispatch state (re)built from Postgres', { markers: lost });
      } catch (err) {
        // not rebuilt (Postgres or a primary away): the next check finds the markers missing again
        await Promise.allSettled(lost.map((k) => connection.del(k)));
        throw err;
      }
    }
  }

  function epochFailed(err: unknown): void {
    if (!outage.failed(err, 'epoch check')) logger.warn('epoch check failed', { err: (err as Error).message });
  }

  async function checkEvictionPolicy(): Promise<void> {
    await connection.ping().catch(() => undefined); // a cluster client knows its primaries once connected
    for (const node of primaries(connection)) {
      try {
        const res = (await node.call('CONFIG', 'GET', 'maxmemory-policy')) as string[];
        const policy = res?.[1];
        if (policy && policy !== 'noeviction') {
          logger.error('Redis maxmemory-policy is not noeviction: BullMQ keys may be evicted (set maxmemory-policy noeviction)', { policy });
        }
      } catch {
        // managed Redis may refuse CONFIG; BullMQ warns on its own then
      }
    }
  }

  return {
    bull,
    relay,
    sweep,
    async start() {
      await checkEvictionPolicy();
      await upsertSchedulers();
      // Postgres away at start: the periodic reconcile and consumers ticks catch up once it answers
      await checkEpoch().catch(epochFailed);
      worker = new Worker(DISPATCH_QUEUE, handle, {
        connection: createRedis(config.redis, { blocking: true }),
        prefix: bull.keys.bull,
        concurrency: deps.concurrency ?? 4,
      });
      worker.on('failed', (job, err) => {
        if (!isConnectionError(err)) logger.warn('dispatch job failed', { name: job?.name, err: err.message });
      });
      worker.on('error', (err) => logger.warn('dispatch worker error', { err: err.message }));
      // started means connected: a worker closed while its connections still initialise throws an
      // unhandled "Connection is closed" after close() (taskforcesh/bullmq#3546)
      await worker.waitUntilReady();
      const tick = async () => {
        if (closing) return;
        await checkEpoch().catch(epochFailed);
        // close() may have come while the check ran: no timer after it
        if (!closing) epochTimer = setTimeout(() => void tick(), Math.max(250, Math.min(2000, config.dispatchSweepMs)));
      };
      epochTimer = setTimeout(() => void tick(), Math.max(250, Math.min(2000, config.dispatchSweepMs)));
      await relay.start();
      deliverer?.start();
      logger.info('dispatcher started', { prefix: config.redisPrefix });
    },
    async close() {
      closing = true;
      if (epochTimer) clearTimeout(epochTimer);
      await relay.close();
      await deliverer?.close();
      if (worker) {
        const w = worker;
        worker = null;
        await w.close();
        await w.disconnect();
      }
      await bull.close();
      connection.disconnect();
      recordArchive?.close?.();
    },
  };
}
