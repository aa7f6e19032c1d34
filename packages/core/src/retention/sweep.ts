import type { Sql } from '../db/sql';
import type { RecordArchive } from './archive';
import { tryScopeLock } from './pass';

/** Files a sweep leaves alone until they are this old, unless told otherwise. */
export const ORPHAN_MIN_AGE_MS = 86_400_000;
/** Keys checked against the manifest, and removed, in one transaction. */
const SWEEP_CHUNK = 1000;

export interface OrphanSweepOptions {
  /** files written more recently are left (default a day) */
  olderThanMs?: number;
  /** report the orphans, remove nothing */
  dryRun?: boolean;
  /** tests: the sweep's clock */
  now?: Date;
}

export interface OrphanSweepResult {
  /** files listed */
  scanned: number;
  /** files old enough, in no manifest row: removed, or to be removed on a dry run */
  orphans: string[];
  /** scopes whose pass ran while the sweep came: their files are left to the next sweep */
  busy: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The pass's scope a key belongs to (archiveKey's layout), or null for a file that is not the pass's. */
function scopeOf(key: string): { kind: 'queue_items' | 'jobs'; target: string } | null {
  const [tenant, kind, queue] = key.split('/');
  if (!tenant || !UUID.test(tenant)) return null;
  if (kind === 'jobs') return { kind: 'jobs', target: tenant };
  if (kind === 'queues' && queue && UUID.test(queue)) return { kind: 'queue_items', target: queue };
  return null;
}

/**
 * `svc archive sweep` (docs/decisions/retention.md): removes the files of the archive that no
 * manifest row lists, written by batches killed before their commit (and partial `.tmp` files of
 * a directory). A scope's candidates are checked and removed in one transaction holding the same
 * lock as the scope's batches: no batch of that scope is between its write and its commit then,
 * so a file not listed is one no commit will list; a scope whose pass holds the lock is left to
 * the next sweep. Files of another layout are never touched.
 */
export async function sweepArchiveOrphans(sql: Sql, archive: RecordArchive, opts: OrphanSweepOptions = {}): Promise<OrphanSweepResult> {
  const cutoff = (opts.now ?? new Date()).getTime() - (opts.olderThanMs ?? ORPHAN_MIN_AGE_MS);
  const out: OrphanSweepResult = { scanned: 0, orphans: [], busy: 0 };
  let scope: string | null = null;
  let pending: string[] = [];
  const flush = async () => {
    if (pending.length === 0) return;
    const keys = pending;
    const s = scopeOf(keys[0]!)!;
    pending = [];
    const done = await sql.begin(async (tx) => {
      if (!(await tryScopeLock(tx, s.kind, s.target))) return false;
      const listed = new Set((await tx<Array<{ key: string }>>`select key from archive_files where key = any(${keys}::text[])`).map((r) => r.key));
      for (const key of keys) {
        if (listed.has(key)) continue;
        if (!opts.dryRun) await archive.delete(key);
        out.orphans.push(key);
      }
      return true;
    });
    if (!done) out.busy += 1;
  };
  for await (const entry of archive.list('')) {
    out.scanned += 1;
    const s = scopeOf(entry.key);
    if (!s || entry.modifiedAt.getTime() >= cutoff) continue;
    const id = `${s.kind}:${s.target}`;
    if (id !== scope || pending.length >= SWEEP_CHUNK) {
      await flush();
      scope = id;
    }
    pending.push(entry.key);
  }
  await flush();
  return out;
}
