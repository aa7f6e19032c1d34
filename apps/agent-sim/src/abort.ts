import type { AbortReason } from '@svc/agent';

/**
 * Why a run is being aborted (the robot SDK's reasons). `stop` (a person asked) and `shutdown`
 * (the agent is leaving) let the current queue item finish; `timeout` (the job's own time ran out
 * here) and `lost` (the platform already ended the run) interrupt at once.
 */
export type RunAbortReason = AbortReason;

export function reasonOf(signal: AbortSignal): RunAbortReason {
  const r = signal.reason;
  return r === 'stop' || r === 'shutdown' || r === 'timeout' || r === 'lost' ? r : 'lost';
}

export class AbortedError extends Error {
  constructor(readonly reason: RunAbortReason) {
    super(`aborted: ${reason}`);
  }
}

/** Resolves after `ms`, or rejects with AbortedError as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError(reasonOf(signal)));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError(reasonOf(signal!)));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Simulated robot work: `ms` of it, interruptible like `sleep`, showing a sign of life about every
 * half second (`alive`), as a real robot's runtime does while it works; the robot SDK renews the
 * run's lease only while such signs come (its `livenessMs`).
 */
export async function work(ms: number, signal: AbortSignal | undefined, alive: () => void): Promise<void> {
  const until = Date.now() + ms;
  for (let left = ms; left > 0; left = until - Date.now()) {
    await sleep(Math.min(left, 500), signal);
    alive();
  }
}

/** A robot stuck for good (no sign of life) until its run is aborted. */
export function stall(signal: AbortSignal): Promise<never> {
  return sleep(2 ** 31 - 1, signal).then(() => stall(signal));
}

/** Kills this whole agent process the hard way (crash modes of the simulator). */
export function crashNow(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}
