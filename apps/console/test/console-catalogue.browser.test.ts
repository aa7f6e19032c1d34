import { createHash } from 'node:crypto';
import type { Locator } from 'playwright-core';
import { seedJob, seedMachine, seedProcess, seedQueue } from '@svc/testing';
import { DESKTOP, PASSWORD, PHONE, adminEmail, base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * The catalogue pages (processes, machines, queues, assets, folders) in a real browser against the
 * real API over real Postgres and Redis, set up as console.browser.test.ts is. Each test leaves a
 * screenshot in test-output/console/ (git-ignored).
 */
jest.setTimeout(180_000);

useConsoleBrowser('console-catalogue.test');
const nav = (name: string) => page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link', { name, exact: true });

/** axe-core's serious and critical violations at desktop and phone width, by label; none expected. */
async function axeBoth(label: string, found: Record<string, unknown>): Promise<void> {
  for (const [size, viewport] of [['1280', DESKTOP], ['390', PHONE]] as const) {
    await page.setViewportSize(viewport);
    found[`${label}@${size}`] = await seriousViolations();
  }
  await page.setViewportSize(DESKTOP);
}
const noViolations = (found: Record<string, unknown[]>) => Object.fromEntries(Object.keys(found).map((k) => [k, []]));

/** The API's own answer to a body, with an admin's token: what the page must show. */
async function adminToken(): Promise<string> {
  const res = await t.http.post('/api/v1/auth/login').send({ email: adminEmail, password: PASSWORD });
  expect(res.status).toBe(200);
  return res.body.data.access_token as string;
}

/** Waits for a locator; a timeout says what the page showed instead. */
async function shown(locator: Locator): Promise<void> {
  try {
    await locator.waitFor();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the page shows:\n${await page.locator('body').innerText()}`);
  }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

describe('the console\'s catalogue pages in a browser', () => {
  it('creates a folder and a process with an input_schema (the JSON and the API\'s messages by the field, a sample), edits it; the folder lists it before deactivating', async () => {
    const found: Record<string, unknown[]> = {};
    await signIn();
    await nav('Carpetas').click();
    await page.getByText('No hay carpetas.', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Nueva carpeta' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Finanzas');
    await page.getByLabel('Descripción').fill('Procesos de facturación');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Carpeta «Finanzas» guardada.').waitFor();
    await page.locator('tr[data-folder="Finanzas"]').waitFor();
    const [folder] = await t.sql`select id, description from folders where tenant_id = ${tenantId} and name = 'Finanzas'`;
    expect(folder!.description).toBe('Procesos de facturación');
    await axeBoth('folders', found);

    await nav('Procesos').click();
    await page.getByRole('button', { name: 'Nuevo proceso' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Facturas');
    await page.getByLabel('Carpeta').selectOption({ label: 'Finanzas' });
    const schemaField = page.getByLabel('Esquema de entrada (JSON Schema)');

    // broken JSON: said by the form, nothing sent
    await schemaField.fill('{"type": ');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#input_schema-error').getByText('No es JSON válido.').waitFor();
    expect(await schemaField.getAttribute('aria-invalid')).toBe('true');

    // JSON that is no valid schema: the API's own message, next to the field
    const bad = { type: 'object', properties: { ref: { type: 'string', pattern: '^(a)\\1$' } } };
    const api = await t.http.post('/api/v1/settings/processes').set('Authorization', `Bearer ${await adminToken()}`)
      .send({ name: 'comprobación', input_schema: bad });
    expect(api.status).toBe(422);
    const apiMessage = api.body.error.details[0].message as string;
    await schemaField.fill(JSON.stringify(bad));
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#input_schema-error').waitFor();
    expect(await page.locator('#input_schema-error').textContent()).toContain(apiMessage);
    expect(await schemaField.getAttribute('aria-describedby')).toContain('input_schema-error');
    await shot('catalogue-process-schema-error');
    expect((await t.sql`select count(*)::int as n from processes where tenant_id = ${tenantId}`)[0]!.n).toBe(0);

    // a valid schema: a sample input of its shape, then saved
    const good = { type: 'object', required: ['invoice'], properties: { invoice: { type: 'string', examples: ['INV-1001'] }, amount: { type: 'number', minimum: 0 }, urgent: { type: 'boolean' } } };
    await schemaField.fill(JSON.stringify(good, null, 2));
    expect(JSON.parse((await page.locator('[data-sample]').textContent())!)).toEqual({ invoice: 'INV-1001', amount: 0, urgent: false });
    await page.getByLabel('Reintentos máximos').fill('2');
    await axeBoth('process-form', found);
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Proceso «Facturas» guardado.').waitFor();
    const [process] = await t.sql`select id, input_schema, folder_id, max_retries from processes where tenant_id = ${tenantId} and name = 'Facturas'`;
    expect(process).toMatchObject({ input_schema: good, folder_id: folder!.id, max_retries: 2 });

    // edit: every field goes back to the form; a change is saved
    await page.getByRole('button', { name: 'Editar el proceso Facturas' }).click();
    expect(JSON.parse(await schemaField.inputValue())).toEqual(good);
    await page.getByLabel('Tiempo máximo (segundos)').fill('120');
    await page.getByLabel('Etiquetas').fill('finanzas, sap');
    await page.getByLabel('Reintentar automáticamente si falla').check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Proceso «Facturas» guardado.').waitFor();
    expect((await t.sql`select timeout_seconds, tags, auto_retry from processes where id = ${process!.id}`)[0]).toMatchObject({ timeout_seconds: 120, tags: ['finanzas', 'sap'], auto_retry: true });
    await page.locator('tr[data-process="Facturas"]').getByText('Finanzas', { exact: true }).waitFor();
    await axeBoth('processes', found);

    // the folder's deactivation names the process in it; cancelling leaves it active
    await nav('Carpetas').click();
    await page.getByRole('button', { name: 'Desactivar la carpeta Finanzas' }).click();
    const dialog = page.getByRole('dialog', { name: '¿Desactivar la carpeta «Finanzas»?' });
    await dialog.locator('[data-dependant-kind="processes"]').getByText('Facturas', { exact: false }).waitFor();
    await axeBoth('folder-dialog', found);
    await dialog.getByRole('button', { name: 'Cancelar' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await t.sql`select is_active from folders where id = ${folder!.id}`)[0]!.is_active).toBe(true);
    expect(found).toEqual(noViolations(found));
  });

  it('creates a machine whose key is shown once and works, rotates it (a new key, the old one gone), edits its slots and deactivates it with its pending job listed', async () => {
    const found: Record<string, unknown[]> = {};
    await signIn();
    await nav('Máquinas').click();
    await page.getByRole('button', { name: 'Nueva máquina' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Robot-01');
    await page.getByLabel('Ranuras', { exact: true }).fill('0');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#slots-error').waitFor(); // the API's range message by the field
    await page.getByLabel('Ranuras', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByRole('heading', { name: 'Clave de la máquina «Robot-01»' }).waitFor();
    const key = await page.getByLabel('Clave secreta').inputValue();
    expect(key).toMatch(/^svc_mk_/);
    const [machine] = await t.sql`select id, slots, machine_key_hash from machines where tenant_id = ${tenantId} and name = 'Robot-01'`;
    expect(machine!.slots).toBe(2);
    expect(Buffer.compare(machine!.machine_key_hash as Buffer, sha256(key))).toBe(0);
    await axeBoth('machine-key', found);
    await shot('catalogue-machine-key');
    await page.getByRole('button', { name: 'Ya la he guardado' }).click();
    expect(await page.getByLabel('Clave secreta').count()).toBe(0);
    expect(await page.content()).not.toContain(key);

    // rotation: asked first, then a new key shown once; the stored hash is the new key's
    await page.getByRole('button', { name: 'Rotar clave de la máquina Robot-01' }).click();
    await page.getByRole('dialog', { name: '¿Rotar la clave de la máquina «Robot-01»?' }).getByRole('button', { name: 'Rotar clave' }).click();
    await page.getByRole('heading', { name: 'Nueva clave de la máquina «Robot-01»' }).waitFor();
    const rotated = await page.getByLabel('Clave secreta').inputValue();
    expect(rotated).toMatch(/^svc_mk_/);
    expect(rotated).not.toBe(key);
    const [after] = await t.sql`select machine_key_hash from machines where id = ${machine!.id}`;
    expect(Buffer.compare(after!.machine_key_hash as Buffer, sha256(rotated))).toBe(0);
    await page.getByRole('button', { name: 'Ya la he guardado' }).click();

    // edit slots, kind and description
    await page.getByRole('button', { name: 'Editar la máquina Robot-01' }).click();
    await page.getByLabel('Ranuras', { exact: true }).fill('3');
    await page.getByLabel('Tipo').selectOption('attended');
    await page.getByLabel('Descripción').fill('Escritorio de Ana');
    // a desk robot reads only the test environments' assets
    const environments = page.getByRole('group', { name: 'Entornos cuyos activos puede leer' });
    await environments.getByLabel('Preproducción (staging)').check();
    await environments.getByLabel('Desarrollo (dev)').check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Máquina «Robot-01» guardada.').waitFor();
    await page.locator('tr[data-machine="Robot-01"] [data-cell="slots"]').getByText('de 3').waitFor();
    expect((await t.sql`select slots, kind, description, environments from machines where id = ${machine!.id}`)[0]).toMatchObject({
      slots: 3, kind: 'attended', description: 'Escritorio de Ana', environments: ['dev', 'staging'],
    });
    await axeBoth('machines', found);

    // deactivation lists the job waiting for it
    const proc = await seedProcess(t.sql, tenantId, { name: 'Nóminas' });
    await seedJob(t.sql, tenantId, { process_id: proc.id as string, machine_id: machine!.id as string, status: 'pending' });
    await page.getByRole('button', { name: 'Desactivar la máquina Robot-01' }).click();
    const dialog = page.getByRole('dialog', { name: '¿Desactivar la máquina «Robot-01»?' });
    await shown(dialog.getByText('1 trabajo pendiente en esta máquina'));
    await axeBoth('machine-dialog', found);
    await shot('catalogue-machine-deactivate');
    await dialog.getByRole('button', { name: 'Desactivar' }).click();
    await page.getByText('Máquina «Robot-01» desactivada.').waitFor();
    expect((await t.sql`select is_active from machines where id = ${machine!.id}`)[0]!.is_active).toBe(false);
    expect(found).toEqual(noViolations(found));
  });

  it('creates a queue with a consumer process, an asset whose credential is never shown again, and deactivates the process after seeing what depends on it', async () => {
    const found: Record<string, unknown[]> = {};
    const proc = await seedProcess(t.sql, tenantId, { name: 'Cobros' });
    await signIn();
    await nav('Colas').click();
    await page.getByRole('button', { name: 'Nueva cola' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('cobros-entrada');
    await page.getByLabel('Descripción').fill('Cobros pendientes');
    await page.getByLabel('Proceso consumidor').selectOption({ label: 'Cobros' });
    await page.getByLabel('Consumidores simultáneos (máx.)').fill('2');
    await page.getByLabel('Reintentos por elemento').fill('11');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#max_retries-error').waitFor(); // out of range: the API's message
    await page.getByLabel('Reintentos por elemento').fill('5');
    await axeBoth('queue-form', found);
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Cola «cobros-entrada» guardada.').waitFor();
    const [queue] = await t.sql`select id, consumer_process_id, max_consumers, max_retries, description from queues where tenant_id = ${tenantId} and name = 'cobros-entrada'`;
    expect(queue).toMatchObject({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 5, description: 'Cobros pendientes' });
    await page.locator('tr[data-queue="cobros-entrada"]').getByText('Cobros', { exact: true }).waitFor();

    // edit: pause it from its settings
    await page.getByRole('button', { name: 'Editar la cola cobros-entrada' }).click();
    await page.getByLabel('En pausa (acepta elementos, nadie los procesa)').check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('tr[data-queue="cobros-entrada"] [data-paused]').waitFor();
    expect((await t.sql`select is_paused from queues where id = ${queue!.id}`)[0]!.is_paused).toBe(true);
    await axeBoth('queues', found);
    await shot('catalogue-queues');
    // the queue's items are its own page
    await page.getByRole('link', { name: 'Ver los elementos de la cola cobros-entrada' }).click();
    await page.waitForURL(`${base}/console/queues/${queue!.id}`);
    // and its triggers are the triggers page filtered by it: the default one its consumer got
    await nav('Colas').click();
    await page.getByRole('link', { name: '1 disparador de la cola cobros-entrada' }).click();
    await shown(page.locator('[data-queue-filter]').getByText('Solo los disparadores de la cola «cobros-entrada».'));
    await page.locator('tr[data-trigger="cobros-entrada"]').waitFor();
    expect(await page.locator('tr[data-trigger]').count()).toBe(1);
    await axeBoth('queue-triggers', found);

    // an asset with a credential: the password is written, never shown back
    await nav('Activos').click();
    await page.getByRole('button', { name: 'Nuevo activo' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('erp-login');
    await page.getByLabel('Tipo').selectOption('credential');
    await page.getByLabel('Usuario en production').fill('robot-cobros');
    await page.getByLabel('Contraseña en production').fill('s3creta-muy-larga');
    await page.getByLabel('Usuario en dev').fill('robot-dev');
    await page.getByLabel('Contraseña en dev').fill('otra-s3creta');
    await axeBoth('asset-form', found);
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Activo «erp-login» guardado.').waitFor();
    const row = page.locator('tr[data-asset="erp-login"]');
    await row.locator('[data-env="production"]').getByText('contraseña guardada').waitFor();
    expect(await row.locator('[data-env="production"]').textContent()).toContain('robot-cobros');
    expect(await row.locator('[data-env="staging"]').textContent()).toBe('sin valor');
    expect(await page.content()).not.toContain('s3creta-muy-larga');
    await page.getByRole('button', { name: 'Editar el activo erp-login' }).click();
    expect(await page.getByLabel('Usuario en production').inputValue()).toBe('robot-cobros');
    expect(await page.getByLabel('Contraseña en production').inputValue()).toBe('');
    // an edit that leaves the credentials alone keeps them
    await page.getByLabel('Descripción').fill('Acceso al ERP');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByText('Activo «erp-login» guardado.'));
    const read = await t.http.get('/api/v1/settings/assets').set('Authorization', `Bearer ${await adminToken()}`);
    const stored = read.body.data.find((a: { name: string }) => a.name === 'erp-login');
    expect(stored).toMatchObject({ description: 'Acceso al ERP', values: { production: { username: 'robot-cobros', has_password: true }, dev: { username: 'robot-dev', has_password: true }, staging: null } });
    expect(JSON.stringify(read.body)).not.toContain('s3creta');
    await axeBoth('assets', found);
    await shot('catalogue-assets');

    // the process's deactivation names the queue it consumes
    await nav('Procesos').click();
    await page.getByRole('button', { name: 'Desactivar el proceso Cobros' }).click();
    const dialog = page.getByRole('dialog', { name: '¿Desactivar el proceso «Cobros»?' });
    await dialog.locator('[data-dependant-kind="queues"]').getByText('cobros-entrada', { exact: false }).waitFor();
    await axeBoth('process-dialog', found);
    await shot('catalogue-process-deactivate');
    await dialog.getByRole('button', { name: 'Desactivar' }).click();
    await page.getByText('Proceso «Cobros» desactivado.').waitFor();
    expect((await t.sql`select is_active from processes where id = ${proc.id as string}`)[0]!.is_active).toBe(false);
    expect(found).toEqual(noViolations(found));
  });

  it('shows a member the machines and queues without admin controls, and "Sin permiso" for processes, assets and folders', async () => {
    const found: Record<string, unknown[]> = {};
    await seedQueue(t.sql, tenantId, { name: 'vista-miembro' });
    await seedMachine(t.sql, tenantId, { name: 'Robot-miembro' });
    await signIn(memberEmail);
    const mainNav = page.getByRole('navigation', { name: 'Navegación principal' });
    for (const hidden of ['Procesos', 'Carpetas', 'Activos']) expect(await mainNav.getByRole('link', { name: hidden, exact: true }).count()).toBe(0);

    await nav('Colas').click();
    await page.locator('tr[data-queue="vista-miembro"]').waitFor();
    expect(await page.getByRole('button', { name: 'Nueva cola' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^(Editar|Desactivar) la cola/ }).count()).toBe(0);
    await axeBoth('member-queues', found);

    await nav('Máquinas').click();
    await page.locator('tr[data-machine="Robot-miembro"]').waitFor();
    expect(await page.getByRole('button', { name: 'Nueva máquina' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /la máquina/ }).count()).toBe(0);
    await axeBoth('member-machines', found);

    for (const path of ['processes', 'asset-catalogue', 'folders']) {
      await page.goto(`${base}/console/${path}`);
      await shown(page.getByRole('heading', { name: 'Sin permiso' }));
    }
    expect(found).toEqual(noViolations(found));
  });
});
