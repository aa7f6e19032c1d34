import { spawnSync } from 'node:child_process';
import path from 'node:path';

const CORE = path.join(__dirname, '..', 'dist', 'index.js');

/** Runs `script` in a fresh node process that has loaded the built @svc/core; its last line, as JSON. */
function inFreshProcess(script: string): unknown {
  const out = spawnSync(process.execPath, ['-e', `const core = require(${JSON.stringify(CORE)});\n${script}`], { encoding: 'utf8', timeout: 30_000 });
  expect(out.stderr).toBe('');
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
}

const loaded = `Object.keys(require.cache).some((k) => /[\\\\/]@aws-sdk[\\\\/]/.test(k))`;

it('loading @svc/core does not load the AWS SDK: every process would pay for it at start', () => {
  expect(inFreshProcess(`console.log(JSON.stringify(${loaded}));`)).toBe(false);
});

it('an S3 archive loads the SDK at its first request, not when the configuration builds it', () => {
  expect(
    inFreshProcess(`
      const archive = core.s3Archive({ bucket: 'b', region: 'us-east-1', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'a', secretAccessKey: 's' } });
      const built = ${loaded};
      archive.close();
      // the request fails (nothing listens there); the SDK is loaded by then
      archive.delete('x').catch(() => undefined).finally(() => { console.log(JSON.stringify({ built, used: ${loaded} })); archive.close(); });`),
  ).toEqual({ built: false, used: true });
});
