/**
 * Where the outbox relay publishes the effects commands recorded (outbox/effects.ts): BullMQ in
 * production (BullDispatch), a recorder in tests. Postgres is the truth (docs/architecture.md,
 * invariant 1): these make work start at once, and each is safe to deliver twice.
 */
export interface DispatchJobRef {
  id: string;
  tenant_id: string;
  machine_id: string;
  priority: number;
  sla_due_at?: Date | null;
  not_before?: Date | null;
  /**
   * The job row's `attempt` when it is enqueued: 0 for a new job; a job handed back after a
   * hand-off its robot never acknowledged (dispatch/hand-back.ts) is enqueued again under a new
   * BullMQ id, since its earlier one may still be kept as finished.
   */
  attempt?: number;
  /** W3C trace context the job's run continues (tracing on only; docs/decisions/observability.md) */
  trace?: Record<string, string>;
}

export interface DispatchPort {
  /**
   * Jobs were created with status pending. `sla_due_at` puts an SLA-bound job ahead of others of
   * the same priority on its machine; `not_before` delays it (a retry with a delay).
   */
  jobsCreated(jobs: ReadonlyArray<DispatchJobRef>): Promise<void>;
  /** Items became ready in a queue (added, re-driven, approved). */
  queueItemsReady(queue: { id: string; tenant_id: string }): Promise<void>;
  /** Items of a queue became `failed` outside a robot (a rejected review): apply the retry policy now. */
  queueItemsFailed(queue: { id: string }): Promise<void>;
  /** A running job's stop was requested: its agent must abort it now. */
  jobStopRequested(job: { id: string; machine_id: string }): Promise<void>;
  /** A job waiting for input was answered: its agent must read the answer now. */
  jobInputAnswered(job: { id: string; machine_id: string }): Promise<void>;
  /** The engine ended a running job (timed out, given up): its agent must stop working on it. */
  runEnded(job: { id: string; machine_id: string }, reason: 'timeout' | 'lost'): Promise<void>;
  /** A machine came back online: its tenant's queues may get consumers now. */
  machineOnline(machine: { id: string; tenant_id: string }): Promise<void>;
  close(): Promise<void>;
}

/** For processes and tests that run without a dispatcher. */
export const noopDispatch: DispatchPort = {
  jobsCreated: async () => undefined,
  queueItemsReady: async () => undefined,
  queueItemsFailed: async () => undefined,
  jobStopRequested: async () => undefined,
  jobInputAnswered: async () => undefined,
  runEnded: async () => undefined,
  machineOnline: async () => undefined,
  close: async () => undefined,
};
