import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkReadmeRobot, installPacked, PUBLISHED_FILE, testSuite } from '@svc/testing';

/**
 * The package's README: its example, exactly as printed there, runs as a robot process that
 * holds only SVC_URL and its machine key, from the package packed and installed into an empty
 * folder outside the repository (as a customer installs it), against an API process, and
 * completes a job triggered through the public API and the items of its queue.
 */
const suite = testSuite();
jest.setTimeout(60_000);

function readmeRobot(): string {
  const readme = readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  const m = /<!-- robot-example -->\s*```js\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('packages/agent/README.md has no robot example');
  return m[1]!;
}

let packed: Awaited<ReturnType<typeof installPacked>>;
beforeAll(async () => {
  packed = await installPacked(['packages/agent']);
}, 120_000);
afterAll(() => packed?.remove());

it('packs its built code, its README and its licence, and nothing else', () => {
  const [{ name, files }] = packed.tarballs as [{ name: string; files: string[] }];
  expect(name).toBe('@svc/agent');
  expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json']));
  expect(files.filter((f) => !PUBLISHED_FILE.test(f))).toEqual([]);
});

it('the README robot, installed from the packed package, runs a job triggered through the API and the items of its queue, with its key alone', async () => {
  const code = readmeRobot();
  expect(code.split('\n').length).toBeLessThanOrEqual(30);
  await checkReadmeRobot(suite, (url, machineKey) => {
    // nothing of the platform's own environment: the base URL and the machine key
    const proc = spawn(process.execPath, ['--input-type=module', '-e', code], {
      cwd: packed.dir,
      env: { PATH: process.env.PATH ?? '', SVC_URL: url, MACHINE_KEY: machineKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (d) => (output += d.toString()));
    proc.stderr.on('data', (d) => (output += d.toString()));
    return { proc, output: () => output };
  });
});
