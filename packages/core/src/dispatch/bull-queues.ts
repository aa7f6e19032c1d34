import type { DefaultJobOptions } from 'bullmq';

/**
 * The one list of BullMQ queues and job payloads, shared by the API (which runs the machine
 * queues' workers for its robots) and the dispatcher. Every queue lives under `redisKeys(prefix).bull`; each queue name
 * carries its own Redis hash tag (`{…}`) so all keys of one queue land in one Cluster slot.
 * BullMQ forbids `:` in queue names, hence the dots.
 *
 * Queues:
 *  - `{dispatch}`            — the dispatcher's own work: nudges from the outbox relay and the
 *                              periodic sweeps (BullMQ job schedulers: one replica runs each tick).
 *  - `{machine.<machine id>}` — jobs to run on one machine; the API replica holding its robot
 *                              reads it while it has work, with concurrency = the machine's slots.
 */
export const DISPATCH_QUEUE = '{dispatch}';

export function machineQueueName(machineId: string): string {
  return `{machine.${machineId}}`;
}

/** The machine id of a machine queue name, or null for any other queue. */
export function machineIdOfQueue(name: string): string | null {
  const m = /^\{machine\.([0-9a-f-]{36})\}$/i.exec(name);
  return m ? m[1]! : null;
}

/**
 * Deterministic BullMQ job id of a platform job (docs/architecture.md, invariant 1): a reconciler re-add
 * of a job that is still in Redis is a no-op. `attempt` is the job row's fencing counter when
 * it was enqueued (0 for a new job; a job handed back is enqueued again after its start bumped it). BullMQ accepts `:` in a custom id only with three parts.
 */
export function bullJobId(jobId: string, attempt = 0): string {
  return `job:${jobId}:${attempt}`;
}

/** The platform job id of a BullMQ job id built by bullJobId, or null. */
export function jobIdOfBullJob(id: string | undefined): string | null {
  const m = id ? /^job:([0-9a-f-]{36}):\d+$/i.exec(id) : null;
  return m ? m[1]! : null;
}

/** Payload of a job in a machine queue. Everything else is read from Postgres when it starts. */
export interface MachineJobPayload {
  job_id: string;
  tenant_id: string;
  machine_id: string;
  /** W3C trace context of the dispatcher's span that published it (tracing on only) */
  trace?: Record<string, string>;
}

/** Job names and payloads of the `{dispatch}` queue. */
export interface DispatchPayloads {
  /** Items became ready in a queue: start consumer jobs if it has room. */
  'queue-ready': { queue_id: string };
  /** Items of a queue failed: apply the retry policy (failed → new | dead_letter) now. */
  'items-failed': { queue_id: string };
  /** A machine came (back) online: its tenant's queues may now get consumers. */
  'machine-online': { tenant_id: string; machine_id: string };
  /** Periodic: timeouts, offline machines, orphaned items, item retry policy, job retries, SLA. */
  sweep: Record<string, never>;
  /** Periodic: start consumers for every queue with ready items and room. */
  consumers: Record<string, never>;
  /** Periodic: re-add pending jobs to their machine queues from Postgres. */
  reconcile: Record<string, never>;
  /** Periodic: delete Idempotency-Keys past their 24 hours (docs/decisions/idempotency.md). */
  'purge-idempotency-keys': Record<string, never>;
  /** Periodic (every second): start the jobs of due schedules (docs/decisions/schedules.md). */
  schedules: Record<string, never>;
  /** Periodic (every second): run the chunks of open bulk actions for a while (docs/decisions/bulk-actions.md). */
  'bulk-actions': Record<string, never>;
  /** Periodic (RETENTION_EVERY_MS): archive and delete ended items and jobs past their retention (docs/decisions/retention.md). */
  retention: Record<string, never>;
  /** Periodic (CLAIM_FLOOR_EVERY_MS): the queues' claim floors from their items (docs/decisions/claim-floor.md). */
  'claim-floor': Record<string, never>;
}
export type DispatchJobName = keyof DispatchPayloads;

/** Scheduler ids of the periodic dispatcher jobs (upsertJobScheduler is idempotent). */
export const DISPATCH_SCHEDULERS = ['sweep', 'consumers', 'reconcile', 'purge-idempotency-keys', 'schedules', 'bulk-actions', 'retention', 'claim-floor'] as const satisfies readonly DispatchJobName[];

/**
 * How often the Idempotency-Key purge runs. Keys live 24 hours and an expired one is already
 * ignored on read, so the purge only bounds the table's size: every ten minutes keeps each
 * batch small without any sweep-rate urgency.
 */
export const IDEMPOTENCY_PURGE_EVERY_MS = 10 * 60_000;

/**
 * BullMQ priority (1 is the highest): job priority 5 (urgent) first, 1 (low) last; inside one
 * priority, SLA-bound jobs go before jobs without an SLA, then FIFO.
 */
export function bullPriority(jobPriority: number, hasSla = false): number {
  const p = Math.min(5, Math.max(1, Math.round(jobPriority)));
  return (6 - p) * 2 - (hasSla ? 1 : 0);
}

/**
 * Completed and failed BullMQ jobs are kept for a while so operators see them in Bull Board;
 * Postgres keeps the record, so nothing depends on them.
 */
export const MACHINE_JOB_OPTIONS: DefaultJobOptions = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 1000 },
  // an agent error before the job started (Postgres unreachable): try again, then the reconciler
  attempts: 5,
  backoff: { type: 'exponential', delay: 500 },
};

export const DISPATCH_JOB_OPTIONS: DefaultJobOptions = {
  removeOnComplete: { age: 600, count: 200 },
  removeOnFail: { age: 24 * 3600, count: 500 },
  attempts: 3,
  backoff: { type: 'fixed', delay: 200 },
};

/** A person-readable queue name for Bull Board. */
export function queueDisplayName(queueName: string, machineName?: string | null): string {
  if (queueName === DISPATCH_QUEUE) return 'Dispatcher (sweeps and nudges)';
  const id = machineIdOfQueue(queueName);
  if (id) return `Machine ${machineName ?? id}`;
  return queueName;
}
