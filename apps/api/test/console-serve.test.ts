import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync, brotliCompressSync } from 'node:zlib';
import request from 'supertest';
import { createApp } from '@svc/api';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { CONSOLE_NOT_BUILT, DEFAULT_CONSOLE_DIR } from '../src/console/serve';

const INDEX = '<!doctype html><html lang="es"><head><script type="module" src="/console/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = 'console.log("console");'.repeat(50);

/** The console's files at /console (apps/api/src/console/serve.ts), through the real app. */
describe('the console at /console', () => {
  let t: ApiTestContext;
  let dir: string;
  let built: ReturnType<typeof request>;
  let missing: ReturnType<typeof request>;

  beforeAll(async () => {
    t = await createApiTestContext();
    // a build as vite lays it out: index.html and hashed assets with their .gz / .br
    dir = mkdtempSync(path.join(tmpdir(), 'console-dist-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), INDEX);
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), SCRIPT);
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js.gz'), gzipSync(SCRIPT));
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js.br'), brotliCompressSync(SCRIPT));
    writeFileSync(path.join(dir, '.env'), 'SECRET=1');
    writeFileSync(path.join(path.dirname(dir), `${path.basename(dir)}-outside.txt`), 'outside');
    built = request(createApp({ ...t.deps, consoleDir: dir }).callback());
    missing = request(createApp({ ...t.deps, consoleDir: path.join(dir, 'no-build-here') }).callback());
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(path.join(path.dirname(dir), `${path.basename(dir)}-outside.txt`), { force: true });
    await t.close();
  });

  it('serves index.html at /console and /console/, revalidated on every load', async () => {
    for (const url of ['/console', '/console/', '/console/index.html']) {
      const res = await built.get(url);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.text).toBe(INDEX);
    }
  });

  it('answers a deep link under /console with index.html, so the app routes it', async () => {
    for (const url of ['/console/queues/5b0f7a6e-2c1d-4a7e-9b7e-111111111111', '/console/queues/x?status=failed&page=2', '/console/sign-in']) {
      const res = await built.get(url);
      expect(res.status).toBe(200);
      expect(res.text).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
    }
  });

  it('serves a hashed asset for a year, immutable, compressed as the browser accepts', async () => {
    const plain = await built.get('/console/assets/index-abc123.js').set('Accept-Encoding', 'identity');
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toMatch(/javascript/);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
    expect(plain.text).toBe(SCRIPT);

    const br = await built.get('/console/assets/index-abc123.js').set('Accept-Encoding', 'br, gzip');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.text).toBe(SCRIPT); // supertest decodes it

    const gz = await built.get('/console/assets/index-abc123.js').set('Accept-Encoding', 'gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.text).toBe(SCRIPT);
  });

  it('answers a missing asset or file with a 404 envelope, never with index.html', async () => {
    for (const url of ['/console/assets/index-old999.js', '/console/assets/', '/console/favicon.ico']) {
      const res = await built.get(url);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Recurso no encontrado', request_id: res.headers['x-request-id'] } });
    }
  });

  it('answers paths that leave the folder, hidden files and undecodable paths as missing (404, not 500)', async () => {
    const outside = `${path.basename(dir)}-outside.txt`;
    for (const url of [
      `/console/..%2f${outside}`, `/console/%2e%2e/${outside}`, '/console/assets/..%2f..%2f..%2fpackage.json', '/console/.env',
      '/console/assets/%2e%2e%5cindex.html', '/console/%E0%A4%A', '/console/a%00b',
    ]) {
      const res = await built.get(url);
      expect([url, res.status]).toEqual([url, 404]);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(res.text).not.toContain('outside');
      expect(res.text).not.toContain('SECRET');
    }
  });

  it('leaves other methods to the API routers (a 404 envelope, no file touched)', async () => {
    const res = await built.post('/console/queues').send({});
    expect(res.status).toBe(404);
    expect(res.body.success).toBe(false);
  });

  it('does not claim paths that only start like /console', async () => {
    const res = await built.get('/consoles');
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe('Ruta no encontrada');
  });

  it('says how to build the console when there is no build (503 in the envelope, never a 500)', async () => {
    for (const url of ['/console', '/console/queues/x']) {
      const res = await missing.get(url);
      expect(res.status).toBe(503);
      expect(res.body.error.message).toBe(CONSOLE_NOT_BUILT);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    expect((await missing.get('/console/assets/index-abc123.js')).status).toBe(404);
  });

  it('serves the real build of apps/console by default (npm test builds it first)', async () => {
    const page = await t.http.get('/console/');
    expect(page.status).toBe(200);
    expect(DEFAULT_CONSOLE_DIR).toBe(path.resolve(__dirname, '../../console/dist'));
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const asset = await t.http.get(script!);
    expect(asset.status).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });
});
