/**
 * Abort requests for running jobs, published on the Redis channel `redisKeys(prefix).jobStops`
 * and heard by every agent; the one running the job aborts it through BullMQ's AbortSignal
 * (`worker.cancelJob`). Pub/sub is fire-and-forget: agents also poll `stop_requested`, and the
 * dispatcher re-publishes stops that are still pending, so a lost message only delays a stop.
 */
export type AbortReason =
  /** a person asked to stop it (jobs/{id}/stop): it ends `stopped` */
  | 'stop'
  /** the dispatcher timed it out: it is already `timed_out`, the robot just stops working */
  | 'timeout'
  /** the dispatcher gave the job up (machine declared offline): the robot stops working */
  | 'lost';

export interface JobAbortMessage {
  job_id: string;
  machine_id: string;
  reason: AbortReason;
}

export function encodeAbort(m: JobAbortMessage): string {
  return JSON.stringify(m);
}

/** "The job waiting for input was answered": its agent reads the answer (jobs/input.ts). */
export interface JobInputMessage {
  job_id: string;
  machine_id: string;
}

export function encodeInputAnswered(m: JobInputMessage): string {
  return JSON.stringify(m);
}

export function decodeInputAnswered(raw: string): JobInputMessage | null {
  try {
    const m = JSON.parse(raw) as Partial<JobInputMessage>;
    return typeof m.job_id === 'string' && typeof m.machine_id === 'string' ? { job_id: m.job_id, machine_id: m.machine_id } : null;
  } catch {
    return null;
  }
}

export function decodeAbort(raw: string): JobAbortMessage | null {
  try {
    const m = JSON.parse(raw) as Partial<JobAbortMessage>;
    if (typeof m.job_id !== 'string' || typeof m.machine_id !== 'string') return null;
    const reason: AbortReason = m.reason === 'timeout' || m.reason === 'lost' ? m.reason : 'stop';
    return { job_id: m.job_id, machine_id: m.machine_id, reason };
  } catch {
    return null;
  }
}

/**
 * "These machines have jobs on their queues" (published when jobs are put on machine queues, and
 * again by the reconciler for every pending job): the API replica holding a machine's robot reads
 * its queue only while there is work for it (docs/decisions/agent-protocol.md). `at` is when the
 * earliest of them may start (epoch ms; 0: now). Fire-and-forget like the stops: the reconciler's
 * repeat bounds what a lost message costs.
 */
export interface MachineWorkMessage {
  machines: Array<{ machine_id: string; at: number }>;
}

export function encodeMachineWork(m: MachineWorkMessage): string {
  return JSON.stringify(m);
}

export function decodeMachineWork(raw: string): MachineWorkMessage | null {
  try {
    const m = JSON.parse(raw) as { machines?: unknown };
    if (!Array.isArray(m.machines)) return null;
    const machines = m.machines.filter(
      (e): e is { machine_id: string; at: number } => typeof e?.machine_id === 'string' && typeof e?.at === 'number' && Number.isFinite(e.at),
    );
    return { machines: machines.map((e) => ({ machine_id: e.machine_id, at: e.at })) };
  } catch {
    return null;
  }
}
