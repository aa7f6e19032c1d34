import { DESKTOP, memberEmail, nav, page, PHONE, seriousViolations, shot, signIn, useConsoleBrowser } from './browser-harness';

useConsoleBrowser('console-nav.test');

const mainNav = () => page.getByRole('navigation', { name: 'Navegación principal' });
/** The groups' visible labels, in order (each group is named by its label: `entries` finds it by that name). */
const groupNames = () => mainNav().locator('[role="group"] > .nav-group-label').allTextContents();
const entries = (group: string) => mainNav().getByRole('group', { name: group }).locator('a, button').allTextContents();
/** Where each entry of the navigation sits, and how tall it is (a wrapped entry is two lines tall). */
const boxes = () => mainNav().locator('a, button').evaluateAll((els) => els.map((e) => {
  const r = e.getBoundingClientRect();
  return { text: e.textContent ?? '', left: Math.round(r.left), top: Math.round(r.top), height: Math.round(r.height), right: Math.round(r.right) };
}));

describe('the main navigation', () => {
  it("puts an admin's 15 entries in three labelled groups (Trabajo, Catálogo, Administración), one column beside the page, none wrapped", async () => {
    await signIn();
    expect(await groupNames()).toEqual(['Trabajo', 'Catálogo', 'Administración']);
    expect(await entries('Trabajo')).toEqual(['Resumen', 'Trabajos', 'Máquinas', 'Colas', 'Programaciones', 'Disparadores']);
    expect(await entries('Catálogo')).toEqual(['Procesos', 'Carpetas', 'Activos']);
    expect(await entries('Administración')).toEqual(['Usuarios', 'Claves API', 'Webhooks', 'Eventos', 'Auditoría', 'Colas (Bull Board)']);
    const desktop = await boxes();
    expect(desktop).toHaveLength(15);
    // one column: every entry starts at the same left edge, one line tall, each below the last
    expect(new Set(desktop.map((b) => b.left)).size).toBe(1);
    expect(desktop.filter((b) => b.height > 40)).toEqual([]);
    expect(desktop.every((b, i) => i === 0 || b.top > desktop[i - 1]!.top)).toBe(true);
    // beside the page, not over it
    const main = await page.locator('main').evaluate((e) => Math.round(e.getBoundingClientRect().left));
    expect(Math.max(...desktop.map((b) => b.right))).toBeLessThanOrEqual(main);
    await nav('Usuarios').click();
    await page.getByRole('heading', { name: 'Usuarios' }).first().waitFor();
    expect(await mainNav().getByRole('link', { name: 'Usuarios', exact: true }).getAttribute('aria-current')).toBe('page');
    await shot('nav-admin-desktop');
    expect(await seriousViolations()).toEqual([]);

    // on a phone the groups are rows above the page, each wrapping as a unit, nothing wider than the screen
    await page.setViewportSize(PHONE);
    const phone = await boxes();
    expect(phone.filter((b) => b.right > PHONE.width)).toEqual([]);
    await shot('nav-admin-phone');
    expect(await seriousViolations()).toEqual([]);
    await page.setViewportSize(DESKTOP);
  });

  it('shows a member the work group alone', async () => {
    await signIn(memberEmail);
    expect(await groupNames()).toEqual(['Trabajo']);
    expect(await entries('Trabajo')).toEqual(['Resumen', 'Trabajos', 'Máquinas', 'Colas', 'Programaciones', 'Disparadores']);
    expect(await seriousViolations()).toEqual([]);
  });
});
