import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { directoryArchive, s3Archive, type RecordArchive } from '@svc/core/internals';
import { startS3Server, type S3TestServer } from '@svc/testing/s3';

/**
 * The contract of a retention archive (retention/archive.ts), one test body run on each
 * implementation: a real directory, and a bucket of a private S3-compatible server (s3rver).
 */
let dir: string;
let s3: S3TestServer;
const opened: RecordArchive[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-record-archive-'));
  s3 = await startS3Server();
});
afterAll(async () => {
  for (const a of opened) a.close?.();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

function bucket(prefix = 'retention/'): RecordArchive {
  const a = s3Archive({ bucket: s3.bucket, prefix, endpoint: s3.endpoint, region: 'us-east-1', credentials: s3.credentials });
  opened.push(a);
  return a;
}

const implementations: Array<[string, () => RecordArchive]> = [
  ['a directory', () => directoryArchive(dir)],
  ['an S3 bucket', () => bucket()],
];

describe.each(implementations)('the archive as %s', (_name, make) => {
  const scope = `${_name.replace(/\W+/g, '-')}`;

  it('gives back the lines it stored, compressed, and null for a key never stored', async () => {
    const archive = make();
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: i, text: `ñandú «${i}» ✓ \u2028`, nested: { a: [i, null] } }));
    const { bytes } = await archive.put(`${scope}/t1/queues/q1/2026-11-27T10/a.ndjson.gz`, lines);
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(Buffer.byteLength(lines.join('\n')) / 2);
    expect(await archive.get(`${scope}/t1/queues/q1/2026-11-27T10/a.ndjson.gz`)).toEqual(lines);
    expect(await archive.get(`${scope}/t1/queues/q1/2026-11-27T10/missing.ndjson.gz`)).toBeNull();
    expect(await archive.get(`${scope}/never/written`)).toBeNull();
  });

  it('a second put of a key replaces the file whole, never appends', async () => {
    const archive = make();
    const key = `${scope}/t1/jobs/2026-11-27T11/b.ndjson.gz`;
    await archive.put(key, ['{"n":1}', '{"n":2}', '{"n":3}']);
    await archive.put(key, ['{"n":9}']);
    expect(await archive.get(key)).toEqual(['{"n":9}']);
    await archive.put(key, []);
    expect(await archive.get(key)).toEqual([]);
  });

  it('keeps keys with odd characters apart and reads each back', async () => {
    const archive = make();
    const odd = ['sp ace', 'plus+sign', 'pct%20coded', 'eq=amp&', 'hash#q?', 'ñandú-✓', "quote'(1)~", 'a.b..c', 'x'.repeat(200)];
    for (const [i, name] of odd.entries()) await archive.put(`${scope}/odd/${name}/f.ndjson.gz`, [JSON.stringify({ i })]);
    for (const [i, name] of odd.entries()) expect(await archive.get(`${scope}/odd/${name}/f.ndjson.gz`)).toEqual([JSON.stringify({ i })]);
    // `%20` is not a space: they are two keys
    expect(await archive.get(`${scope}/odd/pct coded/f.ndjson.gz`)).toBeNull();
  });

  it('lists the files under a prefix, folder by folder, with when they were written, and deletes one', async () => {
    const archive = make();
    const before = Date.now() - 5_000;
    const keys = [`${scope}/ls/b/2.gz`, `${scope}/ls/a/1.gz`, `${scope}/ls/a/sub/3.gz`, `${scope}/ls/a/z.gz`, `${scope}/ls/a-b/5.gz`, `${scope}/ls/b/1 odd+%.gz`, `${scope}/lsx/4.gz`];
    for (const k of keys) await archive.put(k, ['{}']);
    const listed = [];
    for await (const e of archive.list(`${scope}/ls/`)) listed.push(e);
    expect(listed.map((e) => e.key).sort()).toEqual(keys.filter((k) => k.startsWith(`${scope}/ls/`)).sort());
    for (const e of listed) expect(e.modifiedAt.getTime()).toBeGreaterThan(before);
    // the files under one folder (its subfolders' too) come one after another: a sweep's scope is a folder
    const folders = listed.map((e) => e.key.split('/').slice(0, 3).join('/'));
    expect(folders.filter((f, i) => i === 0 || f !== folders[i - 1])).toHaveLength(new Set(folders).size);
    const everything = [];
    for await (const e of archive.list('')) everything.push(e.key);
    expect(everything).toEqual(expect.arrayContaining(keys));

    await archive.delete(`${scope}/ls/b/1 odd+%.gz`);
    await archive.delete(`${scope}/ls/b/1 odd+%.gz`);
    await archive.delete(`${scope}/ls/never/there.gz`);
    expect(await archive.get(`${scope}/ls/b/1 odd+%.gz`)).toBeNull();
    expect(await archive.get(`${scope}/ls/b/2.gz`)).toEqual(['{}']);
    const none = [];
    for await (const e of archive.list(`${scope}/nothing-here/`)) none.push(e);
    expect(none).toEqual([]);
    for (const bad of ['no-slash', '../', '/', 'a//', 'nul\u0000/']) {
      await expect((async () => { for await (const e of archive.list(bad)) void e; })()).rejects.toThrow(/invalid archive (prefix|key)/);
    }
    await expect(archive.delete('../escape')).rejects.toThrow('invalid archive key');
  });

  it('refuses keys that are not relative names, the same way', async () => {
    const archive = make();
    const hostile = ['', '/abs/key', '../outside', 'a/../../b', 'a//b', 'a/./b', 'trailing/', 'nul\u0000byte', 'back\\slash', 'new\nline', 'k'.repeat(800)];
    for (const key of hostile) {
      await expect(archive.put(key, ['{}'])).rejects.toThrow('invalid archive key');
      await expect(archive.get(key)).rejects.toThrow('invalid archive key');
    }
  });
});

describe('the S3 archive', () => {
  it('puts its objects under the prefix and nowhere else', async () => {
    await bucket('tenant-a/archive/').put('t1/queues/q1/h/f.ndjson.gz', ['{"a":1}']);
    expect(await bucket('').get('tenant-a/archive/t1/queues/q1/h/f.ndjson.gz')).toEqual(['{"a":1}']);
    expect(await bucket('').get('t1/queues/q1/h/f.ndjson.gz')).toBeNull();
    expect(await bucket('tenant-b/').get('t1/queues/q1/h/f.ndjson.gz')).toBeNull();
  });

  it('fails a put into a bucket that does not exist, and a get from it, instead of answering null', async () => {
    const missing = s3Archive({ bucket: 'no-such-bucket', endpoint: s3.endpoint, region: 'us-east-1', credentials: s3.credentials });
    opened.push(missing);
    await expect(missing.put('k/f.ndjson.gz', ['{}'])).rejects.toThrow(/bucket/i);
    await expect(missing.get('k/f.ndjson.gz')).rejects.toThrow(/bucket/i);
  });
});
