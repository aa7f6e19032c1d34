import { counter, FAST_BUCKETS, histogram, WORK_BUCKETS } from './registry';

/**
 * The domain's counters and histograms, moved where the events happen (in core, whichever
 * process runs the command: an ended job is counted by the agent that finished it or the
 * dispatcher that timed it out). Labels are closed sets (statuses, outcomes): no tenant or
 * queue label here, so a counter never grows with the data (docs/decisions/observability.md).
 * A command's counters move when its statement ran; a transaction retried after an outage may
 * count once more.
 */

export const quotaRejections = counter({
  name: 'svc_quota_rejections_total',
  help: 'Job triggers refused because the tenant used its monthly quota.',
});

export const itemAttempts = counter({
  name: 'svc_queue_item_attempts_total',
  help: 'Queue items taken by a consumer (each take is one attempt).',
});

export const itemsSettled = counter<'status'>({
  name: 'svc_queue_items_settled_total',
  help: 'Queue item outcomes reported by consumers, by the status they moved to.',
  labelNames: ['status'],
});

export const itemRetryOutcomes = counter<'outcome'>({
  name: 'svc_queue_item_retry_policy_total',
  help: 'Failed queue items handled by the retry policy: retried (back to new) or dead_letter.',
  labelNames: ['outcome'],
});

export const itemCompletionSeconds = histogram({
  name: 'svc_queue_item_completion_seconds',
  help: 'Time from a queue item being created to it being completed.',
  buckets: WORK_BUCKETS,
});

export const jobsEnded = counter<'status'>({
  name: 'svc_jobs_ended_total',
  help: 'Jobs that reached a final status, by that status.',
  labelNames: ['status'],
});

export const jobsCreated = counter<'source'>({
  name: 'svc_jobs_created_total',
  help: 'Jobs created, by how they came to be (api, webhook, schedule, queue, chain, retry).',
  labelNames: ['source'],
});

export const jobDurationSeconds = histogram<'status'>({
  name: 'svc_job_duration_seconds',
  help: 'Time from a job starting to it ending, by final status (jobs that never started are not observed).',
  labelNames: ['status'],
  buckets: WORK_BUCKETS,
});

export const jobStartLatencySeconds = histogram({
  name: 'svc_job_start_latency_seconds',
  help: 'Time from a job being created (triggered) to it running on its machine.',
  buckets: WORK_BUCKETS,
});

export const jobStopLatencySeconds = histogram({
  name: 'svc_job_stop_latency_seconds',
  help: 'Time from a stop being requested for a running job to it being stopped.',
  buckets: WORK_BUCKETS,
});

export const dispatcherPassSeconds = histogram<'pass'>({
  name: 'svc_dispatcher_pass_seconds',
  help: "Duration of the dispatcher's periodic passes that completed (sweep, consumers, reconcile, schedules, purge-idempotency-keys, bulk-actions).",
  labelNames: ['pass'],
  buckets: FAST_BUCKETS,
});

// Started next to completed (the histogram's _count): a gap that grows is a pass failing or hanging,
// and a completed count past the started count read earlier proves a pass began after that read.
export const dispatcherPassesStarted = counter<'pass'>({
  name: 'svc_dispatcher_passes_started_total',
  help: "The dispatcher's periodic passes started, by pass (completed ones are svc_dispatcher_pass_seconds_count).",
  labelNames: ['pass'],
});

export const outboxPublished = counter<'kind'>({
  name: 'svc_outbox_published_total',
  help: 'Outbox effects published by the relay, by kind.',
  labelNames: ['kind'],
});

export const outboxPublishedAtOnce = counter<'kind'>({
  name: 'svc_outbox_published_at_once_total',
  help: 'Effects published by the committing process right after its commit, by kind (the relay publishes them again).',
  labelNames: ['kind'],
});

/** Seconds between two instants (Date or epoch ms), never negative (clocks of two hosts). */
export function secondsBetween(from: Date | number, to: Date | number = Date.now()): number {
  return Math.max(0, (Number(to) - Number(from)) / 1000);
}

export const webhookDeliveries = counter<'outcome'>({
  name: 'svc_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome: delivered, retry (will be tried again), given_up (marked failed), subscription_disabled.',
  labelNames: ['outcome'],
});

/** Counts webhook attempts of one outcome (in the process that made them). */
export function countWebhookOutcome(outcome: 'delivered' | 'retry' | 'given_up' | 'subscription_disabled', n: number): void {
  webhookDeliveries.inc({ outcome }, n);
}
