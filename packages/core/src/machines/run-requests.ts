import type { Queryable, Sql } from '../db/sql';
import type { JobRow } from '../jobs/repo';
import { askJobInput, readJobInput, type AskResult } from '../jobs/input';
import { findRunEndedAs, finishJob, type JobEnd } from '../dispatch/job-run';
import { releaseUnknownClaims } from '../queue-items/transitions';
import { settleAndClaimItemsBatched } from '../queue-items/batched-settle';
import type { SettleAndClaim, SettleAndClaimResult, TakeOptions } from '../queue-items/take';

/**
 * A robot's requests that change a run, with the rule for a request that may be a repeat: the
 * robot sent it again after its answer was lost (with the connection, or with Postgres while the
 * statement ran), so the first try may or may not have been applied. Each command below does the
 * same thing whichever happened, so the robot hears one answer and nothing is applied twice
 * (docs/agent-protocol.md, "Repeats").
 */

export interface TakeRequest extends SettleAndClaim {
  /** items the robot holds and has not settled: a repeat keeps them */
  held?: readonly string[];
  /** the robot sent it again, or an earlier try of it may have committed */
  repeat?: boolean;
}

export interface TakeResult extends SettleAndClaimResult {
  /** items the job held that the robot never heard of, handed back to the queue (repeats only) */
  releasedUnknown: number;
}

/**
 * Settles and takes in one statement. A repeat may already have taken items the robot never
 * heard of: its outcomes are settled again with nothing taken (an outcome already settled is
 * refused by its fence), every item the job holds beyond those the robot names goes back to the
 * queue, and only then are items taken afresh. Nothing is settled twice and no item stays
 * `in_progress` unknown to its holder.
 */
export async function takeItemsForRun(sql: Queryable, req: TakeRequest, opts: TakeOptions = {}): Promise<TakeResult> {
  const claim = { queueId: req.queueId, jobId: req.jobId, jobAttempt: req.jobAttempt, machineId: req.machineId };
  if (!req.repeat) return { ...(await settleAndClaimItemsBatched(sql, { ...claim, outcomes: req.outcomes, take: req.take }, opts)), releasedUnknown: 0 };
  const { settled } = await settleAndClaimItemsBatched(sql, { ...claim, outcomes: req.outcomes, take: 0 }, opts);
  const releasedUnknown = await releaseUnknownClaims(sql, req.jobId, [...(req.held ?? []), ...req.outcomes.map((o) => o.id)]);
  const { claimed } = req.take > 0 ? await settleAndClaimItemsBatched(sql, { ...claim, outcomes: [], take: req.take }, opts) : { claimed: [] };
  return { settled, claimed, releasedUnknown };
}

/**
 * Ends a run as the robot asks, or, for a repeat, finds it already ended that way. A run stopped
 * while it waited for input was ended `stopped` by the stop itself, so a first `stopped` end is
 * also looked for. Null: the run is no longer this attempt's (someone else ended it).
 */
export async function finishRun(sql: Sql, jobId: string, attempt: number, end: JobEnd, opts: { repeat?: boolean } = {}): Promise<JobRow | null> {
  const done = await finishJob(sql, jobId, attempt, end);
  if (done) return done.job;
  if (!opts.repeat && end.to !== 'stopped') return null;
  return findRunEndedAs(sql, jobId, attempt, end.to);
}

/** Puts a run's question to a person; a repeat finds its own question already waiting. */
export async function askInputForRun(
  sql: Queryable, jobId: string, attempt: number, ask: { prompt?: unknown; options?: unknown }, opts: { repeat?: boolean } = {},
): Promise<AskResult> {
  const res = await askJobInput(sql, jobId, attempt, ask);
  if (!('refused' in res) || !opts.repeat) return res;
  const state = await readJobInput(sql, jobId, attempt);
  return state?.status === 'waiting_input' ? { waiting: true } : res;
}
