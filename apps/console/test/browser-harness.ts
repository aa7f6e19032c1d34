import { mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { createUser } from '@svc/core/internals';
import { seedTenant, waitFor } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/**
 * What the console's browser tests share: the real API on a port of its own over real Postgres
 * and Redis, a workspace with an admin and a member who sign in with a password, Debian's
 * Chromium through playwright-core (jest.config.js runs the *.browser.test.ts files only when one
 * is found: scripts/chromium.cjs), a fresh page per test, screenshots in test-output/console/
 * (git-ignored) and axe-core's accessibility check.
 *
 * The bindings below are set by the hooks `useConsoleBrowser` registers; test files import them
 * and read them inside their tests (ES module bindings are live, so each read sees the current
 * page).
 */
export const PASSWORD = 'una-clave-larga-1';
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

const SHOTS = path.join(path.resolve(__dirname, '../../..'), 'test-output', 'console');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export let t: ApiTestContext;
export let base: string;
export let tenantId: string;
export let adminEmail: string;
export let memberEmail: string;
export let page: Page;

/** Registers the suite's set-up and tear-down; `domain` tells this file's users apart in the logs. */
export function useConsoleBrowser(domain: string, pageOptions: BrowserContextOptions = {}): void {
  let server: http.Server;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await createApiTestContext();
    server = http.createServer(t.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    tenantId = (await seedTenant(t.sql)).id;
    adminEmail = `admin-${Date.now()}@${domain}`;
    memberEmail = `member-${Date.now()}@${domain}`;
    await createUser(t.sql, tenantId, { email: adminEmail, password: PASSWORD, role: 'admin', name: 'Ana Admin' });
    await createUser(t.sql, tenantId, { email: memberEmail, password: PASSWORD, role: 'member', name: 'Mario Miembro' });
    browser = await chromium.launch({ executablePath: process.env.SVC_CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
  });

  beforeEach(async () => {
    page = await browser.newPage({ viewport: DESKTOP, locale: 'es-ES', timezoneId: 'Europe/Madrid', ...pageOptions });
  });

  afterEach(async () => {
    await page.close();
  });
}

export const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

/** A link of the console's main navigation. */
export const nav = (name: string) => page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link', { name, exact: true });

/**
 * Creates an API key through the "Claves API" page (open already) with the scopes whose checkbox
 * labels match, and returns the secret it shows once.
 */
export async function createApiKeyInPage(name: string, ...scopeLabels: RegExp[]): Promise<string> {
  await page.getByRole('button', { name: 'Nueva clave' }).click();
  await page.getByLabel('Nombre de la clave').fill(name);
  for (const label of scopeLabels) await page.getByRole('checkbox', { name: label }).check();
  await page.getByRole('button', { name: 'Crear clave' }).click();
  await page.getByRole('heading', { name: `Clave «${name}» lista` }).waitFor();
  return page.getByLabel('Clave secreta').inputValue();
}

/** Signs in through the form and waits for the overview. */
export async function signIn(email = adminEmail, password = PASSWORD, timeout = 60_000): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByLabel('Correo electrónico').fill(email);
  await page.getByLabel('Contraseña').fill(password);
  await page.getByRole('button', { name: 'Entrar' }).click();
  await page.getByRole('heading', { name: 'Resumen' }).waitFor({ timeout });
}

/**
 * Waits until `expression` is truthy in the page. Polled from here through page.evaluate (the
 * DevTools protocol): page.waitForFunction with a string evals it inside the page, which the
 * console's CSP (no 'unsafe-eval') refuses.
 */
export async function waitUntil(expression: string, timeout = 30_000): Promise<void> {
  await waitFor(expression, async () => Boolean(await page.evaluate(expression)), timeout);
}

/** Waits until the text of the first element matching `selector` is `expected` (the page refreshes by itself). */
export async function waitForText(selector: string, expected: string, timeout = 30_000): Promise<void> {
  await waitUntil(
    `(() => { const el = document.querySelector(${JSON.stringify(selector)}); return !!el && el.textContent.trim() === ${JSON.stringify(expected)}; })()`,
    timeout,
  );
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(): Promise<Array<{ id: string; nodes: string[] }>> {
  // evaluated through the DevTools protocol, not as an inline <script>: the console's CSP refuses those
  await page.evaluate(AXE_SOURCE);
  return (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`)) as Array<{ id: string; nodes: string[] }>;
}
