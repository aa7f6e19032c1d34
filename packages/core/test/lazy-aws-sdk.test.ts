import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** Every entry of the built @svc/core: the public ones and the tests' own (which holds s3Archive). */
const ENTRIES = ['index', 'schemas', 'machine-protocol', 'observability', 'internals'].map((e) => path.join(__dirname, '..', 'dist', `${e}.js`));

/** Runs `script` in a fresh node process that has loaded every entry of the built @svc/core as `core`; its last line, as JSON. */
function inFreshProcess(script: string): unknown {
  const load = `const core = Object.assign({}, ${ENTRIES.map((e) => `require(${JSON.stringify(e)})`).join(', ')});`;
  const out = spawnSync(process.execPath, ['-e', `${load}\n${script}`], { encoding: 'utf8', timeout: 30_000 });
  expect(out.stderr).toBe('');
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
}

const loaded = `Object.keys(require.cache).some((k) => /[\\\\/]@aws-sdk[\\\\/]/.test(k))`;

it('loading @svc/core (any of its entries) does not load the AWS SDK: every process would pay for it at start', () => {
  expect(inFreshProcess(`console.log(JSON.stringify([typeof core.createEngine, typeof core.s3Archive, ${loaded}]));`)).toEqual(['function', 'function', false]);
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
