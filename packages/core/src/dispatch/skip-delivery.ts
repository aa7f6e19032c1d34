import type { Job } from 'bullmq';
import { bullmq } from './bullmq-module';
import type { StartResult } from './job-run';

/**
 * What a machine queue's processor (agent-sim's worker, or the API's for a robot connected over the
 * machine protocol) does with a delivery whose job did not start: a delayed retry delivered early
 * goes back to wait until its `not_before` (BullMQ's DelayedError), anything else is simply done.
 */
export async function skipDelivery(job: Job, token: string | undefined, res: Exclude<StartResult, { started: unknown }>): Promise<{ skipped: true; status: unknown }> {
  if (res.skipped === 'not_before') return deliverLater(job, token, res.not_before);
  return { skipped: true, status: res.status };
}

/**
 * The delivery goes back to its machine queue, to be taken again from `at` on: by a worker that
 * will not start it now (its robot is leaving), or for a delayed retry delivered early.
 */
export async function deliverLater(job: Job, token: string | undefined, at: Date): Promise<never> {
  await job.moveToDelayed(at.getTime(), token);
  throw new (bullmq().DelayedError)();
}
