import type { JobsOptions, Queue } from 'bullmq';
import { bullmq } from './bullmq-module';
import type { Logger } from '../logger';
import { createRedis, isRedisClient, redisKeys, type RedisClient, type RedisKeys, type RedisTarget } from '../redis';
import type { DispatchJobRef, DispatchPort } from './port';
import {
  DISPATCH_JOB_OPTIONS, DISPATCH_QUEUE, MACHINE_JOB_OPTIONS, bullJobId, bullPriority, machineQueueName,
  type DispatchJobName, type DispatchPayloads, type MachineJobPayload,
} from './bull-queues';
import { encodeAbort, encodeInputAnswered, encodeMachineWork, type AbortReason } from './stops';

export interface BullDispatchOptions {
  /** A shared connection (not closed by close()), or where Redis is (a connection of its own). */
  redis: RedisClient | RedisTarget | string;
  prefix: string;
  logger?: Logger;
  /** Machine Queue objects kept open (least recently used are closed beyond it). */
  maxMachineQueues?: number;
}

/**
 * The BullMQ side of dispatch, used by the outbox relay (as its DispatchPort), the dispatcher and
 * the agents: puts jobs on machine queues, nudges the dispatcher, publishes aborts.
 */
export interface BullDispatch extends DispatchPort {
  readonly keys: RedisKeys;
  readonly connection: RedisClient;
  /** The `{dispatch}` queue (sweeps and nudges). */
  readonly dispatchQueue: Queue;
  machineQueue(machineId: string): Queue;
  /** Adds a job to the dispatcher's queue now. */
  addDispatch<N extends DispatchJobName>(name: N, payload: DispatchPayloads[N], opts?: JobsOptions): Promise<void>;
  publishAbort(jobId: string, machineId: string, reason: AbortReason): Promise<void>;
  /** Tells the API replicas that these machines' queues hold jobs (the earliest start of each). */
  publishMachineWork(jobs: ReadonlyArray<Pick<DispatchJobRef, 'machine_id' | 'not_before'>>): Promise<void>;
}

export function createBullDispatch(opts: BullDispatchOptions): BullDispatch {
  const ownConnection = !isRedisClient(opts.redis);
  const connection = isRedisClient(opts.redis) ? opts.redis : createRedis(opts.redis);
  const keys = redisKeys(opts.prefix);
  const log = opts.logger;
  const maxQueues = opts.maxMachineQueues ?? 500;
  const machineQueues = new Map<string, Queue>();
  const queueErrors = (q: Queue) => q.on('error', (err) => log?.warn('bullmq queue error', { queue: q.name, err: err.message }));
  // created on first use: a process that never dispatches (a CLI, a script) opens nothing
  let dispatchQueueInstance: Queue | null = null;
  const dispatchQueue = (): Queue => {
    if (!dispatchQueueInstance) {
      dispatchQueueInstance = new (bullmq().Queue)(DISPATCH_QUEUE, { connection, prefix: keys.bull, defaultJobOptions: DISPATCH_JOB_OPTIONS });
      queueErrors(dispatchQueueInstance);
    }
    return dispatchQueueInstance;
  };

  function machineQueue(machineId: string): Queue {
    let q = machineQueues.get(machineId);
    if (q) {
      // refresh its place in the LRU order
      machineQueues.delete(machineId);
      machineQueues.set(machineId, q);
      return q;
    }
    q = new (bullmq().Queue)(machineQueueName(machineId), { connection, prefix: keys.bull, defaultJobOptions: MACHINE_JOB_OPTIONS });
    queueErrors(q);
    machineQueues.set(machineId, q);
    if (machineQueues.size > maxQueues) {
      const [oldestId, oldest] = machineQueues.entries().next().value as [string, Queue];
      machineQueues.delete(oldestId);
      void oldest.close().catch(() => undefined);
    }
    return q;
  }

  async function addDispatch<N extends DispatchJobName>(name: N, payload: DispatchPayloads[N], jobOpts?: JobsOptions): Promise<void> {
    await dispatchQueue().add(name, payload, jobOpts);
  }

  async function jobsCreated(jobs: ReadonlyArray<DispatchJobRef>): Promise<void> {
    const byMachine = new Map<string, DispatchJobRef[]>();
    for (const j of jobs) {
      const list = byMachine.get(j.machine_id) ?? [];
      list.push(j);
      byMachine.set(j.machine_id, list);
    }
    const now = Date.now();
    await Promise.all(
      [...byMachine].map(([machineId, list]) =>
        machineQueue(machineId).addBulk(
          list.map((j) => {
            const data: MachineJobPayload = { job_id: j.id, tenant_id: j.tenant_id, machine_id: j.machine_id, ...(j.trace ? { trace: j.trace } : {}) };
            const delay = j.not_before ? Math.max(0, j.not_before.getTime() - now) : 0;
            return {
              name: 'run',
              data,
              opts: { jobId: bullJobId(j.id, j.attempt ?? 0), priority: bullPriority(j.priority, !!j.sla_due_at), ...(delay > 0 ? { delay } : {}) },
            };
          }),
        ),
      ),
    );
    await publishMachineWork(jobs);
  }

  async function publishMachineWork(jobs: ReadonlyArray<Pick<DispatchJobRef, 'machine_id' | 'not_before'>>): Promise<void> {
    const earliest = new Map<string, number>();
    for (const j of jobs) {
      const at = j.not_before ? j.not_before.getTime() : 0;
      const was = earliest.get(j.machine_id);
      if (was === undefined || at < was) earliest.set(j.machine_id, at);
    }
    if (earliest.size === 0) return;
    const machines = [...earliest].map(([machine_id, at]) => ({ machine_id, at }));
    await connection.publish(keys.machineWork, encodeMachineWork({ machines }));
  }

  async function publishAbort(jobId: string, machineId: string, reason: AbortReason): Promise<void> {
    await connection.publish(keys.jobStops, encodeAbort({ job_id: jobId, machine_id: machineId, reason }));
  }

  return {
    keys,
    connection,
    get dispatchQueue() {
      return dispatchQueue();
    },
    machineQueue,
    addDispatch,
    publishAbort,
    publishMachineWork,
    jobsCreated,
    queueItemsReady: (queue) => addDispatch('queue-ready', { queue_id: queue.id }),
    queueItemsFailed: (queue) => addDispatch('items-failed', { queue_id: queue.id }),
    jobStopRequested: (job) => publishAbort(job.id, job.machine_id, 'stop'),
    runEnded: (job, reason) => publishAbort(job.id, job.machine_id, reason),
    jobInputAnswered: async (job) => {
      await connection.publish(keys.jobInputs, encodeInputAnswered({ job_id: job.id, machine_id: job.machine_id }));
    },
    machineOnline: (machine) => addDispatch('machine-online', { tenant_id: machine.tenant_id, machine_id: machine.id }),
    async close() {
      await Promise.allSettled([...(dispatchQueueInstance ? [dispatchQueueInstance.close()] : []), ...[...machineQueues.values()].map((q) => q.close())]);
      machineQueues.clear();
      if (ownConnection) connection.disconnect();
    },
  };
}
