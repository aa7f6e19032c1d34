import type { QueueItemRow } from './repo';
import type { QueueItemResponse } from './schemas';
import { iso } from '../validation/iso-date';

/** QueueItemResponse: the only way a queue item leaves the system (API, CLI, OpenAPI examples). */
export function toQueueItemResponse(row: QueueItemRow): QueueItemResponse {
  return {
    id: row.id,
    queue_id: row.queue_id,
    status: row.status,
    priority: row.priority,
    reference: row.reference,
    deadline: iso(row.deadline),
    postpone: iso(row.postpone),
    data: row.data,
    result: row.result,
    retry_count: row.retry_count,
    error_message: row.error_message,
    processed_by: row.processed_by,
    created_at: row.created_at.toISOString(),
    processed_at: iso(row.processed_at),
    reviewed_by: row.reviewed_by,
    reviewed_at: iso(row.reviewed_at),
    exception_type: row.exception_type,
  };
}
