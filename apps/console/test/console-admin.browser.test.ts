import { seedMachine, seedProcess, seedQueue, waitFor } from '@svc/testing';
import { DESKTOP, PHONE, base, createApiKeyInPage, memberEmail, nav, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * The console's admin pages (API keys, audit log, schedules, triggers) in a real browser (Debian's
 * Chromium through playwright-core) against the real API on a port of its own, over a real
 * Postgres and Redis, set up as console.browser.test.ts is. Each test leaves a screenshot in
 * test-output/console/ (git-ignored).
 */
jest.setTimeout(120_000);

useConsoleBrowser('console-admin.test', { permissions: ['clipboard-read', 'clipboard-write'] });
async function keyRow(name: string) {
  const [row] = await t.sql`select id, is_active, scopes, environments from api_keys where tenant_id = ${tenantId} and name = ${name}`;
  return row!;
}

/** The id of the element that has the focus, or its aria-label. */
const focused = () => page.evaluate('document.activeElement && (document.activeElement.id || document.activeElement.getAttribute("aria-label"))');

describe('the console\'s admin pages in a browser', () => {
  it('creates an API key and shows its secret once, which works against the API, and never again', async () => {
    await signIn();
    await nav('Claves API').click();
    await page.getByRole('heading', { name: 'Claves API', level: 1 }).waitFor();
    await page.getByText('Aún no hay claves API.', { exact: false }).waitFor(); // the designed empty state

    // a name too short: the API's message next to the field, the form keeps what was typed
    await page.getByRole('button', { name: 'Nueva clave' }).click();
    await page.getByLabel('Nombre de la clave').fill('x');
    await page.getByRole('checkbox', { name: /processes:read/ }).check();
    await page.getByRole('button', { name: 'Crear clave' }).click();
    await page.locator('#name-error').waitFor();
    expect(await page.getByLabel('Nombre de la clave').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Nombre de la clave').getAttribute('aria-describedby')).toContain('name-error');

    await page.getByLabel('Nombre de la clave').fill('ERP facturas');
    await page.getByRole('checkbox', { name: /Producción/ }).check();
    await page.getByRole('button', { name: 'Crear clave' }).click();
    await page.getByRole('heading', { name: 'Clave «ERP facturas» lista' }).waitFor();
    expect(await page.getByText('no se volverá a mostrar', { exact: false }).isVisible()).toBe(true);
    const secret = await page.getByLabel('Clave secreta').inputValue();
    expect(secret).toMatch(/^svc_ak_/);
    expect(await keyRow('ERP facturas')).toMatchObject({ is_active: true, scopes: ['processes:read'], environments: ['production'] });
    await page.locator('tr[data-key="ERP facturas"]').waitFor();
    expect(await page.locator('tr[data-key="ERP facturas"]').textContent()).toContain(secret.slice(0, 12));

    await page.getByRole('button', { name: 'Copiar la clave' }).click();
    await page.getByText('Clave copiada al portapapeles.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    // without a clipboard API (an insecure origin) the text is selected for Ctrl+C instead
    await page.evaluate('Object.defineProperty(navigator, "clipboard", { value: undefined, configurable: true })');
    await page.getByRole('button', { name: 'Copiar la clave' }).click();
    await page.getByText('No se pudo copiar automáticamente', { exact: false }).waitFor();
    expect(await page.evaluate('(() => { const el = document.activeElement; return el.value.slice(el.selectionStart, el.selectionEnd); })()')).toBe(secret);
    await shot('api-key-secret');

    // the secret works against the API, with its scope
    const ok = await t.http.get('/api/v1/processes/list').set('X-API-Key', secret);
    expect(ok.status).toBe(200);

    // leave and come back: the list is there, the secret is not, anywhere on the page or in storage
    await nav('Auditoría').click();
    await page.getByRole('heading', { name: 'Registro de auditoría' }).waitFor();
    await nav('Claves API').click();
    await page.locator('tr[data-key="ERP facturas"]').waitFor();
    expect(await page.getByLabel('Clave secreta').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    expect(await page.evaluate('JSON.stringify(sessionStorage) + JSON.stringify(localStorage)')).not.toContain(secret);
  });

  it('rotates and revokes a key through an accessible confirmation; the API then refuses it (401); the audit log shows it', async () => {
    await signIn();
    await page.goto(`${base}/console/api-keys`);
    const first = await createApiKeyInPage('Robot nocturno', /processes:read/);
    await page.getByRole('button', { name: 'Ya la he guardado' }).click();
    expect(await page.getByLabel('Clave secreta').count()).toBe(0);

    // rotate: a new secret shown once the same way; the old one stops working
    await page.getByRole('button', { name: 'Rotar la clave Robot nocturno' }).click();
    await page.getByRole('dialog', { name: '¿Rotar la clave «Robot nocturno»?' }).getByRole('button', { name: 'Rotar' }).click();
    await page.getByRole('heading', { name: 'Nuevo secreto de «Robot nocturno»' }).waitFor();
    const second = await page.getByLabel('Clave secreta').inputValue();
    expect(second).not.toBe(first);
    expect((await t.http.get('/api/v1/processes/list').set('X-API-Key', first)).status).toBe(401);
    expect((await t.http.get('/api/v1/processes/list').set('X-API-Key', second)).status).toBe(200);

    // the dialog: modal, focus inside, Escape closes it and gives the focus back, nothing revoked
    const revokeButton = page.getByRole('button', { name: 'Revocar la clave Robot nocturno' });
    await revokeButton.click();
    const dialog = page.getByRole('dialog', { name: '¿Revocar la clave «Robot nocturno»?' });
    await dialog.waitFor();
    expect(await page.evaluate('document.activeElement.closest("dialog") !== null')).toBe(true);
    expect(await page.evaluate('document.querySelector("dialog").matches(":modal")')).toBe(true);
    await shot('api-key-revoke-dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await focused()).toBe('Revocar la clave Robot nocturno');
    expect((await keyRow('Robot nocturno')).is_active).toBe(true);

    await revokeButton.click();
    await dialog.getByRole('button', { name: 'Revocar' }).click();
    await page.getByText('Clave «Robot nocturno» revocada.').waitFor();
    await page.locator('tr[data-key="Robot nocturno"] [data-state="revoked"]').waitFor();
    expect(await page.getByRole('button', { name: 'Revocar la clave Robot nocturno' }).count()).toBe(0);
    expect((await keyRow('Robot nocturno')).is_active).toBe(false);
    expect((await t.http.get('/api/v1/processes/list').set('X-API-Key', second)).status).toBe(401);

    // the audit log: the key's creation, rotation and revocation, newest first
    const keyId = (await keyRow('Robot nocturno')).id as string;
    await nav('Auditoría').click();
    await page.getByLabel('Id del recurso').fill(keyId);
    await page.getByRole('button', { name: 'Filtrar' }).click();
    await page.waitForURL(/resource_id=/);
    await waitFor('three entries', async () => (await page.locator(`tr[data-resource="${keyId}"]`).count()) === 3);
    const actions = await page.locator(`tr[data-resource="${keyId}"]`).evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action')));
    expect(actions).toEqual(['revoke_api_key', 'rotate_api_key', 'create_api_key']);
    await page.getByText('No hay más entradas.').waitFor();
    await shot('audit-log-key');

    await page.getByLabel('Acción').fill('revoke_api_key');
    await page.getByRole('button', { name: 'Filtrar' }).click();
    await waitFor('one entry', async () => (await page.locator('tbody tr').count()) === 1);
    expect(await page.locator('tbody tr').getAttribute('data-action')).toBe('revoke_api_key');
    await page.getByLabel('Acción').fill('nada_de_esto');
    await page.getByRole('button', { name: 'Filtrar' }).click();
    await page.getByText('No hay entradas con estos filtros.').waitFor();
  });

  it('pages the audit log with "Cargar más" on the keyset cursor', async () => {
    await t.sql`
      insert into audit_log (tenant_id, actor_type, action, source, details, created_at)
      select ${tenantId}, 'system', 'console_page_test', 'test', jsonb_build_object('n', g), now() - g * interval '1 second'
      from generate_series(1, 60) g`;
    await signIn();
    await page.goto(`${base}/console/audit-log?action=console_page_test`);
    await waitFor('first page', async () => (await page.locator('tr[data-action="console_page_test"]').count()) === 50);
    expect(await page.locator('tbody tr').first().textContent()).toContain('{"n":1}'); // newest first
    await page.getByRole('button', { name: 'Cargar más' }).click();
    await waitFor('second page', async () => (await page.locator('tr[data-action="console_page_test"]').count()) === 60);
    expect(await page.locator('tbody tr').last().textContent()).toContain('{"n":60}');
    await page.getByText('No hay más entradas.').waitFor();
    expect(await page.getByRole('button', { name: 'Cargar más' }).count()).toBe(0);
    await shot('audit-log-more');
  });

  it('shows an API validation error next to its field: a bad cron, then an unknown time zone', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `informe-${Date.now()}` });
    await signIn();
    await nav('Programaciones').click();
    await page.getByRole('button', { name: 'Nueva programación' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Informe con error');
    await page.getByLabel('Proceso').selectOption({ label: process.name as string });
    await page.getByLabel('Expresión cron').fill('cada lunes a las 8');
    await page.getByRole('button', { name: 'Guardar' }).click();
    const cronError = page.locator('#cron-error');
    await cronError.waitFor();
    expect(await cronError.textContent()).toContain('Expresión cron no válida');
    expect(await page.getByLabel('Expresión cron').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Expresión cron').getAttribute('aria-describedby')).toBe('cron-hint cron-error');
    await shot('schedule-cron-error');

    await page.getByLabel('Expresión cron').fill('0 8 * * *');
    await page.getByLabel('Zona horaria').fill('Marte/Olympus');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#timezone-error').waitFor();
    expect(await page.locator('#cron-error').count()).toBe(0);

    // input_data that is not a JSON object is caught before the request
    await page.getByLabel('Zona horaria').fill('Europe/Madrid');
    await page.getByLabel('Datos de entrada (JSON)').fill('[1, 2]');
    await page.getByRole('button', { name: 'Guardar' }).click();
    expect(await page.locator('#input_data-error').textContent()).toBe('Debe ser un objeto JSON ({ … }).');
    const [count] = await t.sql`select count(*)::int as n from schedules where tenant_id = ${tenantId} and name = 'Informe con error'`;
    expect(count!.n).toBe(0);
  });

  it('creates a schedule and shows its next runs in the browser\'s time zone, edits it, and deactivates it with confirmation', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `nominas-${Date.now()}` });
    const { row: machine } = await seedMachine(t.sql, tenantId, { name: `robot-${Date.now()}` });
    await signIn();
    await nav('Programaciones').click();
    await page.getByRole('button', { name: 'Nueva programación' }).click();
    expect(await page.getByLabel('Zona horaria').inputValue()).toBe('Europe/Madrid'); // the browser's zone by default
    await page.getByLabel('Nombre', { exact: true }).fill('Nóminas diarias');
    await page.getByLabel('Proceso').selectOption({ label: process.name as string });
    await page.getByLabel('Expresión cron').fill('30 7 * * 1-5');
    await page.getByLabel('Zona horaria').fill('UTC');
    await page.getByLabel('Máquina').selectOption({ label: machine.name as string });
    await page.getByLabel('Datos de entrada (JSON)').fill('{"empresa": "ACME"}');
    await page.getByLabel('Prioridad').selectOption('4');
    await page.getByLabel('Ejecuciones perdidas').selectOption('run_once');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Programación «Nóminas diarias» guardada.').waitFor();
    const [saved] = await t.sql`select id, cron, timezone, machine_id, input_data, priority, missed_runs, is_active from schedules where tenant_id = ${tenantId} and name = 'Nóminas diarias'`;
    expect(saved).toMatchObject({ cron: '30 7 * * 1-5', timezone: 'UTC', machine_id: machine.id, input_data: { empresa: 'ACME' }, priority: 4, missed_runs: 'run_once', is_active: true });

    // the preview: five runs at 07:30 UTC, shown at 08:30 in Madrid (CET in winter), weekdays only
    const preview = page.locator('[data-preview="Nóminas diarias"]');
    await waitFor('five runs', async () => (await preview.locator('li').count()) === 5);
    const runs = await preview.locator('time').evaluateAll((els) => els.map((e) => [e.getAttribute('datetime'), e.textContent]));
    for (const [iso, text] of runs as Array<[string, string]>) {
      expect(iso).toMatch(/T07:30:00(\.000)?Z$/);
      expect(text).toMatch(/8:30:00/);
      expect([0, 6]).not.toContain(new Date(iso).getUTCDay());
    }
    expect(await preview.textContent()).toContain('Europe/Madrid');
    await page.locator('tr[data-schedule="Nóminas diarias"]').waitFor();
    await shot('schedule-preview');

    // edit: a new cron, and the preview follows it
    await page.getByRole('button', { name: 'Editar la programación Nóminas diarias' }).click();
    expect(await page.getByLabel('Datos de entrada (JSON)').inputValue()).toContain('"empresa": "ACME"');
    await page.getByLabel('Expresión cron').fill('0 12 * * *');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await waitFor('new runs', async () => ((await preview.locator('li').first().textContent()) ?? '').includes('13:00:00'));
    const [edited] = await t.sql`select cron from schedules where id = ${saved!.id}`;
    expect(edited!.cron).toBe('0 12 * * *');

    await page.getByRole('button', { name: 'Desactivar la programación Nóminas diarias' }).click();
    const dialog = page.getByRole('dialog', { name: '¿Desactivar la programación «Nóminas diarias»?' });
    await dialog.getByRole('button', { name: 'Desactivar' }).click();
    await page.getByText('Programación «Nóminas diarias» desactivada.').waitFor();
    const [off] = await t.sql`select is_active, next_run_at from schedules where id = ${saved!.id}`;
    expect(off).toMatchObject({ is_active: false, next_run_at: null });
  });

  it('creates a queue trigger, edits it, and deactivates it with confirmation', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `entrantes-${Date.now()}` });
    const process = await seedProcess(t.sql, tenantId, { name: `consumidor-${Date.now()}` });
    await signIn();
    await nav('Disparadores').click();
    await page.getByRole('button', { name: 'Nuevo disparador' }).click();
    await page.getByLabel('Cola', { exact: true }).selectOption({ label: queue.name as string });
    await page.getByLabel('Proceso').selectOption({ label: process.name as string });
    await page.getByLabel('Ejecuciones simultáneas (máx.)').fill('101');
    await page.getByLabel('Elementos mínimos para empezar').fill('5');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#max_concurrent_jobs-error').waitFor(); // 1..100: the API's message by the field
    await page.getByLabel('Ejecuciones simultáneas (máx.)').fill('2');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Disparador guardado.').waitFor();
    const row = page.locator(`tr[data-trigger="${queue.name}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(process.name as string);
    const [saved] = await t.sql`select id, process_id, max_concurrent_jobs, min_items_to_start, machine_id, is_active from triggers where queue_id = ${queue.id}`;
    expect(saved).toMatchObject({ process_id: process.id, max_concurrent_jobs: 2, min_items_to_start: 5, machine_id: null, is_active: true });
    await shot('trigger-created');

    await page.getByRole('button', { name: `Editar el disparador de la cola ${queue.name}` }).click();
    expect(await page.getByLabel('Cola', { exact: true }).isDisabled()).toBe(true); // fixed once created
    await page.getByLabel('Ejecuciones simultáneas (máx.)').fill('3');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Disparador guardado.').waitFor();
    await waitFor('edited', async () => (await t.sql`select max_concurrent_jobs from triggers where id = ${saved!.id}`)[0]!.max_concurrent_jobs === 3);

    await page.getByRole('button', { name: `Desactivar el disparador de la cola ${queue.name}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Desactivar' }).click();
    await page.getByText('Disparador desactivado.').waitFor();
    const [off] = await t.sql`select is_active from triggers where id = ${saved!.id}`;
    expect(off!.is_active).toBe(false);
  });

  it('hides the admin pages from a member, who gets a designed "sin permiso" page at their address and reads schedules only', async () => {
    await signIn(memberEmail);
    expect(await nav('Claves API').count()).toBe(0);
    expect(await nav('Auditoría').count()).toBe(0);
    for (const p of ['api-keys', 'audit-log']) {
      await page.goto(`${base}/console/${p}`);
      await page.getByRole('heading', { name: 'Sin permiso' }).waitFor();
      expect(await page.getByText('Esta página es solo para administradores', { exact: false }).isVisible()).toBe(true);
    }
    await shot('member-no-permission');
    await nav('Programaciones').click();
    await page.getByRole('heading', { name: 'Programaciones', level: 1 }).waitFor();
    await page.getByRole('table').or(page.getByText('No hay programaciones.', { exact: false })).first().waitFor();
    expect(await page.getByRole('button', { name: 'Nueva programación' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Editar la programación/ }).count()).toBe(0);
  });

  it('has no serious or critical accessibility violation on the admin pages at 1280 px and at 390 px', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `accesible-${Date.now()}` });
    const queue = await seedQueue(t.sql, tenantId, { name: `accesible-${Date.now()}` });
    const [schedule] = await t.sql`
      insert into schedules (tenant_id, name, process_id, cron, timezone, next_run_at)
      values (${tenantId}, ${`ax-${Date.now()}`}, ${process.id}, '0 6 * * *', 'UTC', now() + interval '1 hour') returning name`;
    await t.sql`insert into triggers (tenant_id, type, queue_id, process_id) values (${tenantId}, 'queue', ${queue.id}, ${process.id})`;
    const found: Record<string, unknown> = {};
    await signIn();
    for (const [label, viewport] of [['1280', DESKTOP], ['390', PHONE]] as const) {
      await page.setViewportSize(viewport);
      await page.goto(`${base}/console/api-keys`);
      await page.getByRole('button', { name: 'Nueva clave' }).click();
      await page.getByRole('checkbox', { name: /queues:read/ }).waitFor();
      await page.getByRole('table').or(page.getByText('Aún no hay claves API.', { exact: false })).first().waitFor();
      found[`api-keys@${label}`] = await seriousViolations();
      await shot(`api-keys-${label}`);

      await page.goto(`${base}/console/audit-log`);
      await page.locator('tbody tr').first().waitFor();
      found[`audit-log@${label}`] = await seriousViolations();
      await shot(`audit-log-${label}`);

      await page.goto(`${base}/console/schedules`);
      await page.getByRole('button', { name: `Ver las próximas ejecuciones de ${schedule!.name}` }).click();
      await page.locator(`[data-preview="${schedule!.name}"] li`).first().waitFor();
      await page.getByRole('button', { name: 'Nueva programación' }).click();
      found[`schedules@${label}`] = await seriousViolations();
      await shot(`schedules-${label}`);

      await page.goto(`${base}/console/triggers`);
      await page.locator(`tr[data-trigger="${queue.name}"]`).waitFor();
      await page.getByRole('button', { name: 'Nuevo disparador' }).click();
      found[`triggers@${label}`] = await seriousViolations();
      await page.getByRole('button', { name: `Desactivar el disparador de la cola ${queue.name}` }).click();
      await page.getByRole('dialog').waitFor();
      found[`dialog@${label}`] = await seriousViolations();
      await page.keyboard.press('Escape');
      await shot(`triggers-${label}`);
    }
    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await signIn(memberEmail);
    await page.goto(`${base}/console/api-keys`);
    await page.getByRole('heading', { name: 'Sin permiso' }).waitFor();
    found['no-permission@390'] = await seriousViolations();
    expect(found).toEqual({
      'api-keys@1280': [], 'audit-log@1280': [], 'schedules@1280': [], 'triggers@1280': [], 'dialog@1280': [],
      'api-keys@390': [], 'audit-log@390': [], 'schedules@390': [], 'triggers@390': [], 'dialog@390': [],
      'no-permission@390': [],
    });
  });
});
