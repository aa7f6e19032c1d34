import type { Queryable, Sql } from '../db/sql';
import type { Logger } from '../logger';
import { addItemsMany } from '../queue-items/service';
import type { QueueRef } from '../queue-items/repo';
import { BULK_MAX_ITEMS, type AddQueueItemInput } from '../queue-items/schemas';
import type { RecordArchive } from './archive';

export interface ArchiveFileRow {
  key: string;
  kind: 'queue_items' | 'jobs';
  queue_id: string | null;
  queue_name: string | null;
  hour: Date;
  rows: number;
  bytes: string | number;
  first_ended_at: Date;
  last_ended_at: Date;
  created_at: Date;
}

/** The archive's manifest for a workspace (a queue's files, or all), oldest first. */
export async function listArchiveFiles(sql: Queryable, tenantId: string, filter: { queueId?: string; from?: Date; to?: Date } = {}): Promise<ArchiveFileRow[]> {
  return sql<ArchiveFileRow[]>`
    select key, kind, queue_id, queue_name, hour, rows, bytes, first_ended_at, last_ended_at, created_at from archive_files
    where tenant_id = ${tenantId}
      ${filter.queueId ? sql`and queue_id = ${filter.queueId}` : sql``}
      ${filter.from ? sql`and last_ended_at >= ${filter.from}` : sql``}
      ${filter.to ? sql`and first_ended_at < ${filter.to}` : sql``}
    order by hour, first_ended_at, key`;
}

/**
 * `svc archive restore`: the archived items of a queue that ended in [from, to) come back as new
 * items (new ids, status `new`, their data, priority and reference), so they are processed
 * again; the archive keeps its copy. Only files of the manifest are read. Returns how many.
 */
export async function restoreArchivedItems(
  deps: { sql: Sql; logger?: Logger }, archive: RecordArchive, queue: QueueRef, from: Date, to: Date,
): Promise<number> {
  const files = await listArchiveFiles(deps.sql, queue.tenant_id, { queueId: queue.id, from, to });
  let pending: AddQueueItemInput[] = [];
  let restored = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    restored += await addItemsMany(deps, queue, pending);
    pending = [];
  };
  for (const f of files) {
    const lines = await archive.get(f.key);
    // a listed file that is gone is a broken archive, not an empty one: fail loudly
    if (lines === null) throw new Error(`archive file missing: ${f.key}`);
    for (const line of lines) {
      const row = JSON.parse(line) as { updated_at: string; data: Record<string, unknown>; priority: number; reference: string | null };
      const ended = new Date(row.updated_at);
      if (ended < from || ended >= to) continue;
      pending.push({ data: row.data, priority: row.priority, reference: row.reference });
      if (pending.length >= BULK_MAX_ITEMS) await flush();
    }
  }
  await flush();
  return restored;
}
