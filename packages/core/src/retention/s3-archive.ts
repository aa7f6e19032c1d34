import type { S3Client } from '@aws-sdk/client-s3';
import { checkArchiveKey, checkArchivePrefix, decodeLines, encodeLines, type RecordArchive } from './archive';

/**
 * The AWS SDK, loaded when a process first uses an S3 archive (as BullMQ and undici are): the
 * API, the robots, the CLI and a dispatcher without ARCHIVE_S3_BUCKET never load it.
 */
let sdkModule: typeof import('@aws-sdk/client-s3') | null = null;
function sdk(): typeof import('@aws-sdk/client-s3') {
  sdkModule ??= require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  return sdkModule;
}

export interface S3ArchiveOptions {
  bucket: string;
  /** prepended to every key, `/`-terminated or empty (config.ts normalises it) */
  prefix?: string;
  /** an S3-compatible store (MinIO, Ceph, a test server): addressed path-style, `http(s)://host[:port]` */
  endpoint?: string;
  region: string;
  /** tests only: the deployment's credentials come from the SDK's standard chain (AWS_ACCESS_KEY_ID, profiles, roles) */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** how long one request may take before the SDK gives it up (and retries it) */
  requestTimeoutMs?: number;
}

/**
 * The archive as an S3 bucket (ARCHIVE_S3_BUCKET): one gzip NDJSON object per key, under the
 * prefix. PutObject answers only once the store has the whole object durably, so `put` returning
 * is what the pass may delete after; a second PutObject of a key replaces the object whole, as a
 * reader sees the old one or the new one, never a mix.
 */
export function s3Archive(opts: S3ArchiveOptions): RecordArchive & { close(): void } {
  const prefix = opts.prefix ?? '';
  // made at the first request: building the archive from the configuration loads nothing
  let made: S3Client | null = null;
  const client = (): S3Client =>
    (made ??= new (sdk().S3Client)({
      region: opts.region,
      ...(opts.endpoint ? { endpoint: opts.endpoint, forcePathStyle: true } : {}),
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
      // a batch holds its row locks while it waits for the store: a store that hangs must fail the
      // batch (its rows stay, the next tick retries), not hold the locks until the socket dies
      requestHandler: { connectionTimeout: 5_000, requestTimeout: opts.requestTimeoutMs ?? 60_000 },
      // S3-compatible stores other than AWS often refuse the newer default checksum headers; the
      // SDK still sends them where the operation requires one
      ...(opts.endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const } : {}),
    }));
  const objectKey = (key: string) => {
    checkArchiveKey(key);
    return `${prefix}${key}`;
  };
  return {
    async put(key, lines) {
      const Key = objectKey(key);
      const body = await encodeLines(lines);
      await client().send(new (sdk().PutObjectCommand)({ Bucket: opts.bucket, Key, Body: body, ContentType: 'application/gzip' }));
      return { bytes: body.length };
    },
    async get(key) {
      const Key = objectKey(key);
      try {
        const res = await client().send(new (sdk().GetObjectCommand)({ Bucket: opts.bucket, Key }));
        return decodeLines(await res.Body!.transformToByteArray());
      } catch (err) {
        if (err instanceof sdk().S3ServiceException && err.name === 'NoSuchKey') return null;
        throw err;
      }
    },
    async *list(under) {
      checkArchivePrefix(under);
      let token: string | undefined;
      do {
        const page = await client().send(new (sdk().ListObjectsV2Command)({ Bucket: opts.bucket, Prefix: `${prefix}${under}`, ContinuationToken: token }));
        for (const o of page.Contents ?? []) {
          if (o.Key === undefined || !o.Key.startsWith(prefix)) continue;
          // no date is read as "just written": the sweep leaves what it cannot age
          yield { key: o.Key.slice(prefix.length), modifiedAt: o.LastModified ?? new Date() };
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
    async delete(key) {
      // DeleteObject answers success for a key that is not there
      await client().send(new (sdk().DeleteObjectCommand)({ Bucket: opts.bucket, Key: objectKey(key) }));
    },
    close() {
      made?.destroy();
    },
  };
}
