import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Where retention puts items and jobs before it deletes them (docs/decisions/retention.md): a
 * directory (below) or an S3-compatible bucket (s3-archive.ts), chosen by configuration
 * (archive-config.ts). A key names a file relative to the archive's root, the same in both.
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
  /**
   * Every file whose key starts with `prefix` (`''`, or `/`-terminated), with when it was last
   * written; the files under one folder, its subfolders' included, come one after another. What
   * the sweep of orphan files (sweep.ts) walks.
   */
  list(prefix: string): AsyncIterable<ArchiveEntry>;
  /** Removes the file under `key`; one already gone is no error. */
  delete(key: string): Promise<void>;
  /** Lets go of connections (an object store's client); a directory holds none. */
  close?(): void;
}

export interface ArchiveEntry {
  key: string;
  modifiedAt: Date;
}

/** The longest key, in UTF-8 bytes: S3's limit less room for a key prefix. */
export const ARCHIVE_KEY_MAX_BYTES = 768;

/**
 * The keys every archive accepts: relative, `/`-separated, no empty, `.` or `..` segment, no
 * control character, at most ARCHIVE_KEY_MAX_BYTES. The pass builds its keys, but restore reads
 * them back from the manifest, and a key must name the same object in a directory and a bucket.
 */
export function checkArchiveKey(key: string): void {
  // eslint-disable-next-line no-control-regex
  const bad = typeof key !== 'string' || key.length === 0 || /[\u0000-\u001f\u007f\\]/.test(key)
    || key.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')
    || Buffer.byteLength(key, 'utf8') > ARCHIVE_KEY_MAX_BYTES;
  if (bad) throw new Error(`invalid archive key: ${JSON.stringify(String(key).slice(0, 200))}`);
}

/** A prefix to list under: everything (`''`) or a folder, `/`-terminated. */
export function checkArchivePrefix(prefix: string): void {
  if (prefix === '') return;
  if (typeof prefix !== 'string' || !prefix.endsWith('/')) throw new Error(`invalid archive prefix: ${JSON.stringify(String(prefix).slice(0, 200))}`);
  checkArchiveKey(prefix.slice(0, -1));
}

/** The gzip NDJSON body of a file, and its lines back. */
export async function encodeLines(lines: readonly string[]): Promise<Buffer> {
  return gzipAsync(Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8'));
}

export async function decodeLines(data: Uint8Array): Promise<string[]> {
  const text = (await gunzipAsync(data)).toString('utf8');
  return text.split('\n').filter((l) => l.length > 0);
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
    checkArchiveKey(key);
    const p = resolve(base, key);
    // keys are built by the pass, but a key read back from the manifest must stay inside the root
    if (!p.startsWith(base + sep)) throw new Error(`archive key outside the archive: ${key}`);
    return p;
  };
  return {
    async put(key, lines) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const data = await encodeLines(lines);
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
      return decodeLines(data);
    },
    async *list(prefix) {
      checkArchivePrefix(prefix);
      // depth first: a folder's files, its subfolders' included, come together, as S3's key order has them
      async function* walk(rel: string): AsyncGenerator<ArchiveEntry> {
        let entries;
        try {
          entries = await readdir(join(base, rel), { withFileTypes: true });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw err;
        }
        for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
          const key = `${rel}${e.name}`;
          if (e.isDirectory()) yield* walk(`${key}/`);
          else if (e.isFile()) {
            try {
              yield { key, modifiedAt: (await stat(join(base, key))).mtime };
            } catch (err) {
              // removed since the folder was read
              if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
            }
          }
        }
      }
      yield* walk(prefix);
    },
    async delete(key) {
      const path = pathOf(key);
      try {
        await unlink(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      await fsyncPath(dirname(path));
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
