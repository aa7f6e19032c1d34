import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/**
 * A private S3-compatible server for tests (s3rver, an implementation of the S3 REST API over a
 * folder): its own temp folder, a free loopback port, one bucket. Requests are signature-checked
 * against s3rver's fixed credentials, which `credentials` and `env` carry; the store is reached
 * path-style through `endpoint`, as a MinIO would be (ARCHIVE_S3_ENDPOINT).
 */
export interface S3TestServer {
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** the settings and credentials a child process (dispatcher, CLI) gets to use this bucket */
  env: Record<string, string>;
  /** stops answering: connections are refused until the test ends */
  stop(): Promise<void>;
  close(): Promise<void>;
}

const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export async function startS3Server(bucket = 'svc-archive-test'): Promise<S3TestServer> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'svc-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  let running = true;
  const stop = async () => {
    if (!running) return;
    running = false;
    await server.close();
  };
  return {
    endpoint,
    bucket,
    credentials: CREDENTIALS,
    env: {
      ARCHIVE_S3_BUCKET: bucket, ARCHIVE_S3_ENDPOINT: endpoint, ARCHIVE_S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      // a child on Node 20 would print the SDK's notice that its later versions need Node 22
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    },
    stop,
    async close() {
      await stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
