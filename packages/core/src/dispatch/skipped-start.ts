import type { Job } from 'bullmq';
import { bullmq } from './bullmq-module';
import type { StartResult } from './job-run';

/**
 * What a machine queue's processor (agent-sim's worker, or the API's for a robot connected over the
 * machine protocol) does with a delivery whose job did not start: a delayed retry delivered early
 * goes back to wait until its `not_before` (BullMQ's DelayedError), anything else is simply done.
 */
export async function skipDelivery(job: Job, token: string | undefined, res: Exclude<StartResult, { started: unknown }>): Promise<{ skipped: true; status: unknown }> {
  if (res.skipped === 'not_before') {
    await job.moveToDelayed(res.not_before.getTime(), token);
    throw new (bullmq().DelayedError)();
  }
  return { skipped: true, status: res.status };
}
