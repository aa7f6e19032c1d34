import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { installPacked, PUBLISHED_FILE, seedWorkspace } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/**
 * The package's README: its example, exactly as printed there, runs as its own Node process, from
 * the package packed and installed into an empty folder outside the repository (as a customer
 * installs it), against an API server with nothing but the base URL, an API key and a queue's name.
 */
const run = promisify(execFile);

function readmeClient(): string {
  const m = /<!-- client-example -->\s*```js\n([\s\S]*?)```/.exec(readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8'));
  if (!m) throw new Error('packages/client/README.md has no client example');
  return m[1]!;
}

let t: ApiTestContext;
let server: http.Server;
let packed: Awaited<ReturnType<typeof installPacked>>;
beforeAll(async () => {
  packed = await installPacked(['packages/client']);
  t = await createApiTestContext();
  server = http.createServer(t.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}, 120_000);
afterAll(async () => {
  server?.closeAllConnections();
  if (server) await new Promise((r) => server.close(r));
  await t?.close();
  await packed?.remove();
});

it('packs its built code, its README and its licence, and nothing else', () => {
  const [{ name, files }] = packed.tarballs as [{ name: string; files: string[] }];
  expect(name).toBe('@svc/client');
  expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'dist/index.d.ts', 'dist/index.js', 'package.json']));
  expect(files.filter((f) => !PUBLISHED_FILE.test(f))).toEqual([]);
});

it('the README client, installed from the packed package, adds items, finds a customer\'s across pages and reads an error as ApiError', async () => {
  const ws = await seedWorkspace(t.sql);
  const queue = await ws.queue();
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', readmeClient()], {
    cwd: packed.dir,
    env: { PATH: process.env.PATH ?? '', SVC_URL: url, SVC_API_KEY: ws.key, QUEUE: queue.name },
  });
  const [added, total, error] = stdout.trim().split('\n');
  const [{ id }] = await t.sql`select id from queue_items where queue_id = ${queue.id} and reference = 'INV-7'`;
  expect(added).toBe(`added ${id as string}`);
  expect(total).toBe('ACME total 165');
  expect(error).toBe('404 NOT_FOUND with request id');
  const [{ n }] = await t.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;
  expect(n).toBe(3);
});
