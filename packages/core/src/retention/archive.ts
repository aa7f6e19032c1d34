import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Where retention puts items and jobs before it deletes them (docs/decisions/retention.md). Like
 * the job log archive (jobs/log-archive.ts) it is an interface, so an object store can be added
 * behind it; a key names a file relative to the archive's root.
 */
export interface RecordArchive {
  /**
   * Stores the NDJSON lines under `key`, compressed, and returns only once they are durable: the
   * pass deletes the rows after this. Writing a key again replaces it whole (a re-run after a
   * crash), never appends.
   */
  put(key: string, lines: readonly string[]): Promise<{ bytes: number }>;
  /** The lines stored under `key`, or null when there is none. */
  get(key: string): Promise<string[] | null>;
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The archive as a directory (ARCHIVE_DIR). A file is written beside its final name, fsynced,
 * renamed over it and its directory fsynced: a reader sees the old file or the whole new one,
 * and after `put` returns a power loss keeps it.
 */
export function directoryArchive(root: string): RecordArchive {
  const base = resolve(root);
  const pathOf = (key: string) => {
    const p = resolve(base, key);
    // keys are built by the pass, but a key read back from the manifest must stay inside the root
    if (!p.startsWith(base + sep)) throw new Error(`archive key outside the archive: ${key}`);
    return p;
  };
  return {
    async put(key, lines) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const data = await gzipAsync(Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8'));
      const tmp = `${path}.${process.pid}.tmp`;
      const fh = await open(tmp, 'w');
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
      await fsyncPath(dirname(path));
      return { bytes: data.length };
    },
    async get(key) {
      let data: Buffer;
      try {
        data = await readFile(pathOf(key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      const text = (await gunzipAsync(data)).toString('utf8');
      return text.split('\n').filter((l) => l.length > 0);
    },
  };
}

/** `2026-11-27T11` for the hour `t` is in (UTC). */
export function hourOf(t: Date): string {
  return t.toISOString().slice(0, 13);
}

/**
 * The key of one batch's file for one hour: the same rows give the same key, so a batch re-run
 * after a crash overwrites the file it had written instead of adding a second copy.
 */
export function archiveKey(scope: { tenantId: string; kind: 'queue_items' | 'jobs'; queueId?: string }, hour: string, ids: readonly string[], firstEndedAt: Date): string {
  const digest = createHash('sha256').update([...ids].sort().join(',')).digest('hex').slice(0, 16);
  const stamp = firstEndedAt.toISOString().replace(/[:.]/g, '');
  const dir = scope.kind === 'jobs' ? join(scope.tenantId, 'jobs', hour) : join(scope.tenantId, 'queues', scope.queueId!, hour);
  return join(dir, `${stamp}-${digest}.ndjson.gz`).split(sep).join('/');
}
