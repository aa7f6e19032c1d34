import { ConfigError, parseArchiveSettings, parseConfig, recordArchiveFromConfig } from '@svc/core';

/** The retention archive's settings (config.ts): a directory or a bucket, checked at start-up. */
const KEY = Buffer.alloc(32, 7).toString('base64');
const fails = (env: Record<string, string>) => {
  try {
    parseArchiveSettings(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('archive settings', () => {
  it('none, a directory or a bucket', () => {
    expect(parseArchiveSettings({})).toBeNull();
    expect(parseArchiveSettings({ ARCHIVE_DIR: ' /var/archive ' })).toEqual({ kind: 'directory', dir: '/var/archive' });
    expect(parseArchiveSettings({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_REGION: 'eu-west-1' }))
      .toEqual({ kind: 's3', bucket: 'svc-archive', prefix: '', region: 'eu-west-1' });
    expect(parseArchiveSettings({ ARCHIVE_S3_BUCKET: 'svc-archive', AWS_REGION: 'us-west-2', ARCHIVE_S3_PREFIX: '/prod/retention/' }))
      .toEqual({ kind: 's3', bucket: 'svc-archive', prefix: 'prod/retention/', region: 'us-west-2' });
    // a store of its own: path-style at its origin, us-east-1 unless told
    expect(parseArchiveSettings({ ARCHIVE_S3_BUCKET: 'a.b-c', ARCHIVE_S3_ENDPOINT: 'http://minio:9000/' }))
      .toEqual({ kind: 's3', bucket: 'a.b-c', prefix: '', endpoint: 'http://minio:9000', region: 'us-east-1' });
    expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', ARCHIVE_DIR: '/a' }).archive).toEqual({ kind: 'directory', dir: '/a' });
  });

  it('both a directory and a bucket is a start-up error naming both', () => {
    expect(fails({ ARCHIVE_DIR: '/a', ARCHIVE_S3_BUCKET: 'svc-archive' })).toMatch(/ARCHIVE_DIR and ARCHIVE_S3_BUCKET are both set/);
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, NODE_ENV: 'test', ARCHIVE_DIR: '/a', ARCHIVE_S3_BUCKET: 'svc-archive' })).toThrow(ConfigError);
  });

  it('refuses settings that would fail at the first batch', () => {
    expect(fails({ ARCHIVE_S3_PREFIX: 'x' })).toContain('ARCHIVE_S3_PREFIX is set without ARCHIVE_S3_BUCKET');
    expect(fails({ ARCHIVE_DIR: '/a', ARCHIVE_S3_ENDPOINT: 'http://x' })).toContain('ARCHIVE_S3_ENDPOINT is set without ARCHIVE_S3_BUCKET');
    for (const bucket of ['ab', 'Upper', 'has_underscore', '-lead', 'trail-', 'a..b', 'x'.repeat(64), 'nul\u0000x', 'a/b']) {
      expect(fails({ ARCHIVE_S3_BUCKET: bucket, ARCHIVE_S3_REGION: 'eu-west-1' })).toContain('ARCHIVE_S3_BUCKET must be a bucket name');
    }
    expect(fails({ ARCHIVE_S3_BUCKET: 'svc-archive' })).toContain('ARCHIVE_S3_REGION is not set');
    expect(fails({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_REGION: 'EU WEST' })).toContain('ARCHIVE_S3_REGION must be');
    for (const prefix of ['a//b', 'a/../b', 'a\u0000b', 'a\\b', 'p'.repeat(201)]) {
      expect(fails({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_REGION: 'eu-west-1', ARCHIVE_S3_PREFIX: prefix })).toContain('ARCHIVE_S3_PREFIX must be');
    }
    for (const endpoint of ['minio:9000', 'ftp://minio', 'http://minio:9000/bucket', 'http://minio?x=1', 'not a url']) {
      expect(fails({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_ENDPOINT: endpoint })).toContain('ARCHIVE_S3_ENDPOINT must be an http(s)://host[:port] URL');
    }
  });

  it('an endpoint carrying credentials is refused without repeating them', () => {
    const message = fails({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_ENDPOINT: 'http://minioadmin:s3cr3t-v4lue@minio:9000' });
    expect(message).toContain('must not carry credentials');
    expect(message).not.toContain('s3cr3t-v4lue');
    expect(message).not.toContain('minioadmin');
    // a secret in a value that is no URL, or in its query, is not repeated either
    for (const [endpoint, why] of [['AKIAEXAMPLE:s3cr3t-v4lue@minio:9000', 'its scheme is not http or https'],
      ['https://minio:9000/?secretKey=s3cr3t-v4lue', 'it has a query'], ['s3cr3t-v4lue', 'it is not a URL']] as const) {
      const m = fails({ ARCHIVE_S3_BUCKET: 'svc-archive', ARCHIVE_S3_ENDPOINT: endpoint });
      expect(m).toBe(`ARCHIVE_S3_ENDPOINT must be an http(s)://host[:port] URL of an S3-compatible store: ${why}.`);
    }
  });

  it('recordArchiveFromConfig builds what the settings name', () => {
    expect(recordArchiveFromConfig(null)).toBeNull();
    const s3 = recordArchiveFromConfig({ kind: 's3', bucket: 'svc-archive', prefix: '', region: 'eu-west-1' })!;
    expect(typeof s3.put).toBe('function');
    s3.close?.();
    expect(recordArchiveFromConfig({ kind: 'directory', dir: '/tmp/x' })!.close).toBeUndefined();
  });
});
