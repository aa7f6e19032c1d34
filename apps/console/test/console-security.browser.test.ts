import { seedMachine, waitFor } from '@svc/testing';
import { base, memberEmail, page, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * The console and Bull Board under their Content-Security-Policy in a real Chromium
 * (docs/decisions/security-headers.md): every page works and the browser reports no violation;
 * an inline script is refused (so the check can see one); Bull Board opens from the console's
 * button through the cookie exchange, never with the token in a URL, and closes with the console's
 * session.
 */
jest.setTimeout(120_000);

useConsoleBrowser('console-security.test');
const nav = () => page.getByRole('navigation', { name: 'Navegación principal' });

interface Violation {
  directive: string;
  blocked: string;
  page: string;
}

/** Every CSP violation the browser reports, from the document's event and from its console. */
async function watchViolations(): Promise<{ events: Violation[]; consoleLines: string[]; urls: string[] }> {
  const seen = { events: [] as Violation[], consoleLines: [] as string[], urls: [] as string[] };
  // a binding and an init script come through the DevTools protocol: no CSP applies to them
  await page.exposeFunction('__reportCspViolation', (v: Violation) => void seen.events.push(v));
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) =>
    window.__reportCspViolation({ directive: e.effectiveDirective, blocked: e.blockedURI, page: location.pathname }))`);
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) seen.consoleLines.push(msg.text());
  });
  page.on('request', (req) => void seen.urls.push(req.url()));
  return seen;
}

describe('the console and Bull Board under their CSP', () => {
  it('work with no CSP violation, and open Bull Board through the cookie exchange', async () => {
    await seedMachine(t.sql, tenantId, { name: 'robot-csp' });
    const seen = await watchViolations();
    await signIn();
    for (const name of ['Trabajos', 'Máquinas', 'Programaciones', 'Disparadores', 'Claves API', 'Auditoría', 'Webhooks', 'Eventos']) {
      await nav().getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { name, level: 1 }).waitFor();
    }
    // the events page reads its stream with fetch under connect-src 'self'
    await page.locator('.live-state[data-state="live"]').waitFor();
    await shot('csp-console');

    // the console's button: bearer token → cookie, then the board, which loads its queues
    await nav().getByRole('button', { name: 'Colas (Bull Board)' }).click();
    await page.waitForURL(`${base}/admin/queues`);
    await page.getByText('Machine robot-csp').first().waitFor({ timeout: 30_000 });
    await shot('csp-bull-board');
    expect(seen.events).toEqual([]);
    expect(seen.consoleLines).toEqual([]);

    // the token went in a header, never in a URL; the cookie is out of the page's scripts' reach
    expect(seen.urls.some((u) => /[?&]token=/.test(u))).toBe(false);
    const cookies = await page.context().cookies(`${base}/admin/queues`);
    const board = cookies.find((c) => c.name === 'svc_board_session')!;
    expect(board).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin/queues' });
    expect(await page.evaluate('document.cookie')).not.toContain('svc_board_session');

    // the policy does refuse an inline script, and the check above would have seen it
    await page.evaluate(`(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = true'; document.body.append(s); })()`);
    expect(await page.evaluate('window.__ran === true')).toBe(false);
    await waitFor('the violation report', async () => seen.events.length > 0);
    expect(seen.events[0]).toMatchObject({ directive: 'script-src-elem', blocked: 'inline', page: '/admin/queues' });
  });

  it('ends the board session with the console\'s: after signing out the board asks to be opened from the console', async () => {
    await signIn();
    await nav().getByRole('button', { name: 'Colas (Bull Board)' }).click();
    await page.waitForURL(`${base}/admin/queues`);
    await page.goto(`${base}/console/`);
    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await page.getByRole('button', { name: 'Entrar' }).waitFor();
    const res = await page.goto(`${base}/admin/queues`);
    expect(res!.status()).toBe(401);
    await page.getByText('Abra Bull Board desde la consola', { exact: false }).waitFor();
    await shot('csp-bull-board-closed');
  });

  it('shows the Bull Board button to admins only', async () => {
    await signIn(memberEmail);
    await nav().getByRole('link', { name: 'Trabajos', exact: true }).waitFor();
    expect(await nav().getByRole('button', { name: 'Colas (Bull Board)' }).count()).toBe(0);
  });
});
