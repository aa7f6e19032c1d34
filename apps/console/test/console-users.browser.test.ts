import { createUser } from '@svc/core/internals';
import { DESKTOP, PASSWORD, PHONE, base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * The users page and the password change in a real browser (Debian's Chromium through
 * playwright-core) against the real API over real Postgres and Redis, as console-admin is set up.
 */
jest.setTimeout(120_000);

useConsoleBrowser('console-users.test');
const nav = (name: string) => page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link', { name, exact: true });

async function userRow(email: string) {
  const [row] = await t.sql`select id, role, is_active, must_change_password from users where tenant_id = ${tenantId} and email = ${email}`;
  return row!;
}

describe('users and passwords in the console', () => {
  it('an admin adds a user; they sign in with the one-time password, must choose their own, then land on the overview', async () => {
    await signIn();
    await nav('Usuarios').click();
    await page.getByRole('heading', { name: 'Usuarios', level: 1 }).waitFor();
    await page.locator(`tr[data-user="${memberEmail}"]`).waitFor();

    // an invalid email: the API's message next to the field
    const email = `nueva-${Date.now()}@console-users.test`;
    await page.getByRole('button', { name: 'Nuevo usuario' }).click();
    await page.getByLabel('Correo electrónico').fill('no-es-un-correo');
    await page.getByRole('button', { name: 'Crear usuario' }).click();
    await page.locator('#email-error').waitFor();
    expect(await page.getByLabel('Correo electrónico').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('Correo electrónico').fill(email);
    await page.getByLabel('Nombre (opcional)').fill('Nuria Nueva');
    await page.getByRole('button', { name: 'Crear usuario' }).click();
    await page.getByRole('heading', { name: `Contraseña de un solo uso de ${email}` }).waitFor();
    const oneTime = await page.getByLabel('Contraseña de un solo uso', { exact: true }).inputValue();
    expect(oneTime).toMatch(/^[A-Za-z0-9_-]{24}$/);
    await page.locator(`tr[data-user="${email}"]`).waitFor();
    expect(await page.locator(`tr[data-user="${email}"]`).textContent()).toContain('Debe cambiar la contraseña');
    expect(await userRow(email)).toMatchObject({ role: 'member', is_active: true, must_change_password: true });
    expect(await seriousViolations()).toEqual([]);
    await shot('users-one-time-password');
    await page.getByRole('button', { name: 'Ya la he entregado' }).click();
    expect(await page.content()).not.toContain(oneTime);
    expect(await page.evaluate('JSON.stringify(sessionStorage) + JSON.stringify(localStorage)')).not.toContain(oneTime);

    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await page.getByRole('heading', { name: 'Iniciar sesión' }).waitFor();

    // the new user: nothing but the password change until it is done
    await page.getByLabel('Correo electrónico').fill(email);
    await page.getByLabel('Contraseña', { exact: true }).fill(oneTime);
    await page.getByRole('button', { name: 'Entrar' }).click();
    await page.getByRole('heading', { name: 'Elija su contraseña' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Navegación principal' }).count()).toBe(0);
    await page.goto(`${base}/console/jobs`);
    await page.getByRole('heading', { name: 'Elija su contraseña' }).waitFor();
    expect(await seriousViolations()).toEqual([]);

    // a wrong current password: the API's message next to that field
    await page.getByLabel('Contraseña actual').fill('no-es-la-clave');
    await page.getByLabel('Contraseña nueva', { exact: true }).fill('mi-clave-propia-1');
    await page.getByLabel('Repita la contraseña nueva').fill('mi-clave-propia-1');
    await page.getByRole('button', { name: 'Cambiar la contraseña' }).click();
    await page.getByText('La contraseña actual no es correcta').waitFor();
    expect(await page.getByLabel('Contraseña actual').getAttribute('aria-invalid')).toBe('true');
    await shot('users-forced-password');

    await page.getByLabel('Contraseña actual').fill(oneTime);
    await page.getByRole('button', { name: 'Cambiar la contraseña' }).click();
    await page.getByRole('heading', { name: 'Resumen' }).waitFor();
    expect(await userRow(email)).toMatchObject({ must_change_password: false });
    // a member: no users page in the navigation, and its address says so without asking the API
    expect(await nav('Usuarios').count()).toBe(0);
    await page.goto(`${base}/console/users`);
    await page.getByRole('heading', { name: 'Sin permiso' }).waitFor();
    expect((await t.http.post('/api/v1/auth/login').send({ email, password: 'mi-clave-propia-1' })).status).toBe(200);
  });

  it('an admin changes a role and deactivates a user through confirmations; the deactivated user\'s open session ends', async () => {
    const email = `saliente-${Date.now()}@console-users.test`;
    await createUser(t.sql, tenantId, { email, password: PASSWORD, role: 'member' });
    const browser = page.context().browser()!;
    const other = await browser.newPage({ viewport: DESKTOP, locale: 'es-ES', timezoneId: 'Europe/Madrid' });
    try {
      await other.goto(`${base}/console/`);
      await other.getByLabel('Correo electrónico').fill(email);
      await other.getByLabel('Contraseña').fill(PASSWORD);
      await other.getByRole('button', { name: 'Entrar' }).click();
      await other.getByRole('heading', { name: 'Resumen' }).waitFor();

      await signIn();
      await page.goto(`${base}/console/users`);
      await page.locator(`tr[data-user="${email}"]`).waitFor();
      await page.getByRole('button', { name: `Hacer administrador a ${email}` }).click();
      const roleDialog = page.getByRole('dialog', { name: `¿Cambiar el rol de ${email} a administrador?` });
      await roleDialog.getByRole('button', { name: 'Hacer administrador' }).click();
      await page.getByText(`Rol de ${email} cambiado.`).waitFor();
      await page.locator(`tr[data-user="${email}"][data-role="admin"]`).waitFor();
      expect(await userRow(email)).toMatchObject({ role: 'admin' });

      await page.getByRole('button', { name: `Desactivar a ${email}` }).click();
      const dialog = page.getByRole('dialog', { name: `¿Desactivar a ${email}?` });
      await dialog.waitFor();
      expect(await seriousViolations()).toEqual([]);
      await shot('users-deactivate-dialog');
      await dialog.getByRole('button', { name: 'Desactivar' }).click();
      await page.getByText(`${email} desactivado.`).waitFor();
      await page.locator(`tr[data-user="${email}"][data-active="false"]`).waitFor();
      expect(await page.getByRole('button', { name: `Desactivar a ${email}` }).count()).toBe(0);
      expect(await userRow(email)).toMatchObject({ is_active: false });

      // the other tab's next read is refused: its session ends and says why
      await other.getByText('Su sesión ha caducado. Vuelva a iniciar sesión.').waitFor({ timeout: 30_000 });
      await other.getByRole('heading', { name: 'Iniciar sesión' }).waitFor();
    } finally {
      await other.close();
    }
  });

  it('any user changes their own password from the header, at desktop and phone widths', async () => {
    const email = `propia-${Date.now()}@console-users.test`;
    await createUser(t.sql, tenantId, { email, password: PASSWORD, role: 'member' });
    await signIn(email);
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      await page.getByRole('link', { name: 'Cambiar contraseña' }).click();
      await page.getByRole('heading', { name: 'Cambiar la contraseña' }).waitFor();
      expect(await seriousViolations()).toEqual([]);
    }
    await page.getByLabel('Contraseña actual').fill(PASSWORD);
    await page.getByLabel('Contraseña nueva', { exact: true }).fill('otra-clave-larga-2');
    await page.getByLabel('Repita la contraseña nueva').fill('otra-clave-distinta');
    await page.getByRole('button', { name: 'Cambiar la contraseña' }).click();
    await page.getByText('Las dos contraseñas nuevas no coinciden.').waitFor();
    await page.getByLabel('Repita la contraseña nueva').fill('otra-clave-larga-2');
    await page.getByRole('button', { name: 'Cambiar la contraseña' }).click();
    await page.getByText('Contraseña cambiada.').waitFor();
    await shot('users-own-password');
    expect((await t.http.post('/api/v1/auth/login').send({ email, password: PASSWORD })).status).toBe(401);
    expect((await t.http.post('/api/v1/auth/login').send({ email, password: 'otra-clave-larga-2' })).status).toBe(200);
    // the session that changed it stays open
    await nav('Resumen').click();
    await page.getByRole('heading', { name: 'Resumen' }).waitFor();
  });
});
