/**
 * The six statuses of a queue item, in their display order. Dependency-free on purpose: the
 * console bundles this module (package.json `exports` subpath `@svc/core/queue-items/statuses`).
 */
export const QUEUE_ITEM_STATUSES = ['new', 'in_progress', 'pending_review', 'completed', 'failed', 'dead_letter'] as const;
export type QueueItemStatus = (typeof QUEUE_ITEM_STATUSES)[number];
