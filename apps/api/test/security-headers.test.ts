import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createApp } from '@svc/api';
import { seedWorkspace } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { cameOverTls } from '../src/http/tls';

/**
 * Security headers on every surface (docs/decisions/security-headers.md): a CSP without inline
 * script that forbids framing, nosniff, Referrer-Policy, X-Frame-Options; HSTS and the board
 * cookie's Secure flag only when a trusted proxy says the request came over TLS.
 */
let direct: ApiTestContext;
let proxied: ApiTestContext;
let consoleDir: string;
let consoleHttp: ReturnType<typeof request>;

beforeAll(async () => {
  direct = await createApiTestContext();
  proxied = await createApiTestContext({ trustedProxyCount: 1 });
  // a console build of its own, so this file needs no vite build
  consoleDir = mkdtempSync(path.join(os.tmpdir(), 'svc-console-'));
  writeFileSync(path.join(consoleDir, 'index.html'), '<!doctype html><html><body><div id="root"></div></body></html>');
  consoleHttp = request(createApp({ ...direct.deps, consoleDir }).callback());
});

afterAll(async () => {
  await direct?.close();
  await proxied?.close();
  rmSync(consoleDir, { recursive: true, force: true });
});

function expectCommonHeaders(headers: Record<string, string>): string {
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['referrer-policy']).toBe('no-referrer');
  const csp = headers['content-security-policy']!;
  expect(csp).toContain("frame-ancestors 'none'");
  // no inline script, no eval, anywhere
  const scriptSrc = /(?:^|;)\s*script-src ([^;]*)/.exec(csp)?.[1] ?? /(?:^|;)\s*default-src ([^;]*)/.exec(csp)![1]!;
  expect(scriptSrc).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  return csp;
}

it('gives JSON answers, errors included, a policy that allows nothing', async () => {
  const ws = await seedWorkspace(direct.sql);
  for (const res of [
    await direct.http.get('/health'),
    await direct.http.get('/api/v1/machines').set('X-API-Key', ws.key),
    await direct.http.get('/api/v1/machines'), // 401 envelope
    await direct.http.get('/api/v1/no-such-route'), // 404 envelope
  ]) {
    const csp = expectCommonHeaders(res.headers);
    expect(csp).toMatch(/^default-src 'none';/);
    expect(res.headers['strict-transport-security']).toBeUndefined();
  }
});

it('gives the console a same-origin policy without inline script or style', async () => {
  const res = await consoleHttp.get('/console/');
  expect(res.status).toBe(200);
  const csp = expectCommonHeaders(res.headers);
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).toContain("connect-src 'self'");
});

it('gives Bull Board a policy whose scripts are its own files, on the page and on its 401', async () => {
  const ws = await seedWorkspace(direct.sql);
  const page = await direct.http.get('/admin/queues').set('Authorization', `Bearer ${ws.adminToken}`);
  expect(page.status).toBe(200);
  const csp = expectCommonHeaders(page.headers);
  expect(csp).toContain("script-src 'self'");
  // every script of the page is a file (allowed by 'self'), or a JSON data block a browser never runs
  const scripts = [...page.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
  expect(scripts.length).toBeGreaterThan(0);
  for (const [, attrs, body] of scripts) {
    if (/\bsrc=/.test(attrs!)) {
      expect(attrs).toMatch(/src="static\//);
    } else {
      expect(attrs).toMatch(/type="application\/json"/);
      expect(body!.trim().startsWith('{')).toBe(true);
    }
  }
  // nothing from a third party: its Google Fonts link is taken out (the policy would refuse it)
  expect(page.text).not.toMatch(/https?:\/\//);
  const refused = await direct.http.get('/admin/queues').set('Accept', 'text/html');
  expect(refused.status).toBe(401);
  expectCommonHeaders(refused.headers);
});

it('sends HSTS only when a trusted proxy says the request came over TLS', async () => {
  // no trusted proxy: a client's X-Forwarded-Proto means nothing
  const spoofed = await direct.http.get('/health').set('X-Forwarded-Proto', 'https');
  expect(spoofed.headers['strict-transport-security']).toBeUndefined();
  // one trusted proxy that says https
  const tls = await proxied.http.get('/health').set('X-Forwarded-Proto', 'https');
  expect(tls.headers['strict-transport-security']).toMatch(/^max-age=\d{7,}/);
  // the proxy appended what it saw (http) to what the client wrote (https): the proxy's word counts
  const appended = await proxied.http.get('/health').set('X-Forwarded-Proto', 'https, http');
  expect(appended.headers['strict-transport-security']).toBeUndefined();
  expect((await proxied.http.get('/health')).headers['strict-transport-security']).toBeUndefined();
});

it('picks the trusted hop of X-Forwarded-Proto like the client IP of X-Forwarded-For', () => {
  expect(cameOverTls(true, undefined, 0)).toBe(true);
  expect(cameOverTls(false, 'https', 0)).toBe(false);
  expect(cameOverTls(false, 'https', 1)).toBe(true);
  expect(cameOverTls(false, 'HTTPS', 1)).toBe(true);
  expect(cameOverTls(false, 'http, https', 1)).toBe(true);
  expect(cameOverTls(false, 'https, http', 1)).toBe(false);
  expect(cameOverTls(false, 'http, https, http', 2)).toBe(true);
  expect(cameOverTls(false, 'https', 2)).toBe(true); // fewer entries than proxies: the edge's
  expect(cameOverTls(false, '', 1)).toBe(false);
});

it('marks the board cookie Secure only behind a trusted TLS proxy', async () => {
  const ws = await seedWorkspace(proxied.sql);
  const tls = await proxied.http.post('/admin/queues/session').set('Authorization', `Bearer ${ws.adminToken}`).set('X-Forwarded-Proto', 'https');
  expect(tls.status).toBe(200);
  expect(tls.headers['set-cookie']![0]).toMatch(/; Secure(;|$)/);
  expect(tls.headers['strict-transport-security']).toBeDefined();
  const plain = await proxied.http.post('/admin/queues/session').set('Authorization', `Bearer ${ws.adminToken}`).set('X-Forwarded-Proto', 'http');
  expect(plain.headers['set-cookie']![0]).not.toMatch(/Secure/i);
  const spoofed = await direct.http
    .post('/admin/queues/session')
    .set('Authorization', `Bearer ${(await seedWorkspace(direct.sql)).adminToken}`)
    .set('X-Forwarded-Proto', 'https');
  expect(spoofed.headers['set-cookie']![0]).not.toMatch(/Secure/i);
});
