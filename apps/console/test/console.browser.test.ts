import { seedApiKey, seedQueue, waitFor } from '@svc/testing';
import { DESKTOP, PASSWORD, PHONE, adminEmail, base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitForText } from './browser-harness';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against the real
 * API on a port of its own, over a real Postgres and Redis: what an operator does, click by
 * click. Each test leaves a screenshot in test-output/console/ (git-ignored). jest.config.js
 * runs this file only when a Chromium is found (scripts/chromium.cjs).
 */
jest.setTimeout(90_000);

useConsoleBrowser('console.test');
let apiKey: string;

beforeAll(async () => {
  apiKey = (await seedApiKey(t.sql, tenantId, { scopes: ['queues:read', 'queues:write'] })).key;
});

/** Adds items through the public API, as a producer does. */
async function addItems(queueName: string, items: Array<Record<string, unknown>>): Promise<void> {
  for (const item of items) {
    const res = await t.http.post(`/api/v1/queues/by-name/${queueName}/items`).set('X-API-Key', apiKey).send(item);
    expect(res.status).toBe(200);
  }
}

async function insertItem(queueId: string, status: string, reference: string): Promise<string> {
  const [row] = await t.sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, reference, retry_count, error_message, processed_at)
    values (${tenantId}, ${queueId}, ${status}, ${t.sql.json({ invoice: reference, amount: 120.5 })}, ${reference},
            ${status === 'dead_letter' ? 3 : 0}, ${status === 'dead_letter' ? 'ERP caído' : null}, now())
    returning id`;
  return row!.id as string;
}

async function itemRow(id: string) {
  const [row] = await t.sql`select status, reviewed_by, error_message, retry_count from queue_items where id = ${id}`;
  return row;
}

describe('the operators\' console in a browser', () => {
  it('signs in, showing the API\'s Spanish messages next to the field they name, and signs out', async () => {
    await page.goto(`${base}/console/queues/00000000-0000-4000-8000-000000000000`);
    await page.waitForURL(/\/console\/sign-in$/); // a deep link without a session asks to sign in first
    await page.getByLabel('Correo electrónico').fill('no-es-un-correo');
    await page.getByLabel('Contraseña').fill('x');
    await page.getByRole('button', { name: 'Entrar' }).click();
    const emailError = page.locator('#email-error');
    await emailError.waitFor();
    expect((await emailError.textContent())?.length).toBeGreaterThan(0);
    expect(await page.getByLabel('Correo electrónico').getAttribute('aria-describedby')).toBe('email-error');

    await page.getByLabel('Correo electrónico').fill(adminEmail);
    await page.getByLabel('Contraseña').fill('una-clave-equivocada');
    await page.getByRole('button', { name: 'Entrar' }).click();
    await page.getByRole('alert').filter({ hasText: 'Credenciales inválidas' }).waitFor();
    await shot('sign-in-error');

    await page.getByLabel('Contraseña').fill(PASSWORD);
    await page.getByRole('button', { name: 'Entrar' }).click();
    // back to the deep link asked for first: a queue this workspace does not have, a designed error
    await page.getByRole('alert').filter({ hasText: 'No se pudieron cargar los datos' }).waitFor();
    expect(page.url()).toBe(`${base}/console/queues/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('link', { name: 'Resumen', exact: true }).click();
    await page.getByRole('heading', { name: 'Resumen' }).waitFor();
    expect(page.url()).toMatch(new RegExp(`^${base}/console/?$`));
    expect(await page.getByText(`${adminEmail} (administrador)`).isVisible()).toBe(true);
    const stored = await page.evaluate('JSON.parse(sessionStorage.getItem("svc.console.session")).user.email');
    expect(stored).toBe(adminEmail);

    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await page.getByText('Ha cerrado la sesión.').waitFor();
    expect(await page.evaluate('sessionStorage.getItem("svc.console.session")')).toBeNull();
    const [token] = await t.sql`select count(*)::int as n from access_tokens a join users u on u.id = a.user_id where u.email = ${adminEmail} and a.revoked_at is null`;
    expect(token!.n).toBe(0); // sign-out revoked the token on the server
  });

  it('ends the session when the API refuses the token (401) and comes back to sign-in', async () => {
    await signIn();
    const token = (await page.evaluate('JSON.parse(sessionStorage.getItem("svc.console.session")).token')) as string;
    expect((await t.http.post('/api/v1/auth/logout').set('Authorization', `Bearer ${token}`)).status).toBe(200);
    // the overview refreshes by itself; its next read gets 401
    await page.getByText('Su sesión ha caducado. Vuelva a iniciar sesión.').waitFor({ timeout: 60_000 });
    expect(page.url()).toMatch(/\/console\/sign-in$/);
    await shot('session-expired');
  });

  it('shows a queue\'s counts change on the overview as items are added through the public API', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `facturas-${Date.now()}` });
    const name = queue.name as string;
    await signIn();
    const card = `[data-queue="${name}"]`;
    await waitForText(`${card} [data-count="new"]`, '0');
    await addItems(name, [{ data: { n: 1 }, reference: 'A-1' }, { data: { n: 2 }, reference: 'A-2' }, { data: { n: 3 }, reference: 'A-3', deadline: new Date(Date.now() + 10 * 60_000).toISOString() }]);
    await waitForText(`${card} [data-count="new"]`, '3');
    await waitForText(`${card} [data-figure="ready"]`, '3');
    await waitForText(`${card} [data-figure="at-risk"]`, '1');
    await addItems(name, [{ data: { n: 4 } }]);
    await waitForText(`${card} [data-count="new"]`, '4');
    // a robot took 4 minutes over an item in the last hour: at that pace, with no machine consuming
    // the queue, the item due in 10 minutes is late, and one machine would make it (docs/decisions/deadline-forecast.md)
    await t.sql`insert into queue_item_records (tenant_id, queue_id, status, data, started_at, processed_at, updated_at)
                values (${tenantId}, ${queue.id}, 'completed', '{}', now() - interval '5 minutes', now() - interval '1 minute', now() - interval '1 minute')`;
    await waitForText(`${card} [data-late]`, '1 llegaría tarde');
    await shot('overview');
    await page.click(`${card} h3 a`);
    await waitForText('[data-forecast]', 'Pronóstico de plazos: Ninguna máquina puede consumir la cola ahora; 1 elemento llegaría tarde; haría falta 1 máquina.');
    await shot('queue-forecast');
  });

  it('finds an item by reference and shows its detail', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `pedidos-${Date.now()}` });
    await addItems(queue.name as string, [
      { data: { pedido: 1 }, reference: 'PED-001' },
      { data: { pedido: 2, cliente: 'ACME' }, reference: 'PED-002', priority: 5 },
      { data: { pedido: 3 }, reference: 'PED-003' },
    ]);
    await signIn();
    await page.getByRole('link', { name: `Abrir la cola ${queue.name}` }).click();
    await page.getByRole('heading', { name: `Cola ${queue.name}` }).waitFor();
    await page.locator('tr[data-item="PED-003"]').waitFor();
    await page.getByLabel('Buscar por referencia').fill('PED-002');
    await page.getByRole('button', { name: 'Buscar', exact: true }).click();
    await page.waitForURL(/reference=PED-002/);
    await waitFor('one row', async () => (await page.locator('table.items tbody tr').count()) === 1);
    expect(await page.locator('tr[data-item="PED-002"]').count()).toBe(1);
    await page.getByRole('button', { name: 'Ver detalle: PED-002' }).click();
    const detail = page.getByRole('region', { name: /Elemento PED-002/ });
    await detail.waitFor();
    expect(await detail.locator('pre').first().textContent()).toContain('"cliente": "ACME"');
    expect(await detail.getByText('Urgente').count()).toBe(1);
    await shot('queue-search');

    // a reference no item has: the designed empty state, not a blank table
    await page.getByLabel('Buscar por referencia').fill('NO-EXISTE');
    await page.getByRole('button', { name: 'Buscar', exact: true }).click();
    await page.getByText('No hay elementos con estos filtros.').waitFor();
  });

  it('approves an item pending review, rejects another with a reason, and re-drives a dead letter', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `revision-${Date.now()}` });
    const queueId = queue.id as string;
    const toApprove = await insertItem(queueId, 'pending_review', 'REV-OK');
    const toReject = await insertItem(queueId, 'pending_review', 'REV-NO');
    const dead = await insertItem(queueId, 'dead_letter', 'DL-1');
    await signIn();
    await page.goto(`${base}/console/queues/${queueId}?status=pending_review`);
    await page.locator('tr[data-item="REV-OK"]').waitFor();
    expect(await page.locator('tr[data-item="DL-1"]').count()).toBe(0); // the status filter holds

    await page.getByRole('button', { name: 'Ver detalle: REV-OK' }).click();
    await page.getByRole('button', { name: 'Aprobar' }).click();
    await page.getByText('Elemento aprobado: vuelve a la cola.').waitFor();
    expect(await itemRow(toApprove)).toMatchObject({ status: 'new', reviewed_by: adminEmail });

    await page.getByRole('button', { name: 'Ver detalle: REV-NO' }).click();
    await page.getByLabel('Motivo del rechazo').fill('Importe incorrecto');
    await page.getByRole('button', { name: 'Rechazar' }).click();
    await page.getByText('Elemento rechazado.').waitFor();
    // rejected → failed; with no dispatcher here the retry policy has not run yet
    expect(await itemRow(toReject)).toMatchObject({ status: 'failed', error_message: 'Importe incorrecto', reviewed_by: adminEmail });
    await shot('queue-review');

    await page.getByLabel('Estado', { exact: true }).selectOption('dead_letter');
    await page.locator('tr[data-item="DL-1"]').waitFor();
    await page.getByRole('checkbox', { name: 'Seleccionar DL-1' }).check();
    await page.getByRole('button', { name: /Reenviar seleccionados/ }).click();
    await page.getByText('1 elemento(s) reenviado(s) a la cola.').waitFor();
    expect(await itemRow(dead)).toMatchObject({ status: 'new', retry_count: 0 });
  });

  it('filters the items by kind of failure with the other filters, shows the kind on failed rows and in the detail, and counts failures apart', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `excepciones-${Date.now()}` });
    const queueId = queue.id as string;
    const rows: Array<[string, string, string | null]> = [
      ['failed', 'NEG-1', 'business'], ['failed', 'NEG-2', 'business'], ['failed', 'NEG-3', 'business'],
      ['failed', 'APP-1', 'application'], ['dead_letter', 'DL-1', 'application'], ['completed', 'OK-1', 'application'], ['new', 'NEW-1', null],
    ];
    for (const [status, reference, kind] of rows) {
      await t.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, reference, error_message, exception_type, processed_at)
        values (${tenantId}, ${queueId}, ${status}, ${t.sql.json({ reference })}, ${reference}, ${kind ? 'Fallo' : null}, ${kind}, now())`;
    }
    // the last hour: 3 failures, 2 of them business (what the transitions' trigger counts, minute by minute)
    await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, failed_business, processing_ms, timed)
                values (${queueId}, date_trunc('minute', now()), 0, 0, 3, 2, 0, 0)`;
    await signIn();
    await page.goto(`${base}/console/queues/${queueId}`);
    await waitForText('[data-failed-now]', 'Fallidos: 4 (3 de negocio, definitivos; 1 de aplicación, se reintentan)');
    await waitForText('[data-failed-last-hour]', 'Fallos en la última hora: 3 (2 de negocio, 1 de aplicación)');
    await page.locator('tr[data-item="NEW-1"]').waitFor();
    expect(await page.locator('tr[data-item="NEG-1"] [data-exception-type]').textContent()).toBe('Excepción de negocio');
    expect(await page.locator('tr[data-item="DL-1"] [data-exception-type]').textContent()).toBe('Excepción de aplicación');
    // a completed item keeps the kind of its last failure, which its row does not show; a new one has none
    expect(await page.locator('tr[data-item="OK-1"] [data-exception-type]').count()).toBe(0);
    expect(await page.locator('tr[data-item="NEW-1"] [data-exception-type]').count()).toBe(0);
    expect(await seriousViolations()).toEqual([]);

    const references = async () => page.locator('table.items tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-item')).sort());
    await page.getByLabel('Tipo de excepción').selectOption('business');
    await page.waitForURL(/exception_type=business/);
    await waitFor('the business failures only', async () => JSON.stringify(await references()) === JSON.stringify(['NEG-1', 'NEG-2', 'NEG-3']));
    await shot('queue-exceptions');

    // with the status filter and the reference search: all three in the address
    await page.getByLabel('Tipo de excepción').selectOption('application');
    await page.getByLabel('Estado', { exact: true }).selectOption('failed');
    await page.waitForURL(/status=failed/);
    expect(new URL(page.url()).searchParams.get('exception_type')).toBe('application');
    await waitFor('the failed application failure only', async () => JSON.stringify(await references()) === JSON.stringify(['APP-1']));
    await page.getByLabel('Buscar por referencia').fill('NEG-1');
    await page.getByRole('button', { name: 'Buscar', exact: true }).click();
    await page.getByText('No hay elementos con estos filtros.').waitFor();
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ exception_type: 'application', status: 'failed', reference: 'NEG-1' });

    // a deep link keeps the filter, "Todas" removes it
    await page.goto(`${base}/console/queues/${queueId}?status=dead_letter&exception_type=application`);
    await page.locator('tr[data-item="DL-1"]').waitFor();
    expect(await page.getByLabel('Tipo de excepción').inputValue()).toBe('application');
    expect(await references()).toEqual(['DL-1']);
    await page.getByLabel('Tipo de excepción').selectOption('');
    await page.waitForURL((url) => !url.searchParams.has('exception_type'));

    await page.goto(`${base}/console/queues/${queueId}?exception_type=business&reference=NEG-2`);
    await page.getByRole('button', { name: 'Ver detalle: NEG-2' }).click();
    const detail = page.getByRole('region', { name: /Elemento NEG-2/ });
    await detail.waitFor();
    expect(await detail.locator('[data-exception-type="business"]').textContent()).toBe('Excepción de negocio');
    expect(await detail.getByText('Tipo de excepción', { exact: true }).count()).toBe(1);
  });

  it('pauses and resumes a queue (admin), which a member may not', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `pausable-${Date.now()}` });
    const queueId = queue.id as string;
    await signIn();
    await page.goto(`${base}/console/queues/${queueId}`);
    await page.getByRole('button', { name: 'Pausar la cola' }).click();
    await page.getByRole('button', { name: 'Reanudar la cola' }).waitFor();
    await page.getByText('La cola está en pausa: acepta elementos, pero ningún robot los procesa.').waitFor();
    const [paused] = await t.sql`select is_paused from queues where id = ${queueId}`;
    expect(paused!.is_paused).toBe(true);
    await shot('queue-paused');
    await page.getByRole('button', { name: 'Reanudar la cola' }).click();
    await page.getByRole('button', { name: 'Pausar la cola' }).waitFor();
    const [resumed] = await t.sql`select is_paused from queues where id = ${queueId}`;
    expect(resumed!.is_paused).toBe(false);

    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await signIn(memberEmail);
    await page.goto(`${base}/console/queues/${queueId}`);
    await page.getByRole('heading', { name: `Cola ${queue.name}` }).waitFor();
    expect(await page.getByRole('button', { name: /Pausar la cola|Reanudar la cola/ }).count()).toBe(0);
    expect(await page.getByText(`${memberEmail} (miembro)`).isVisible()).toBe(true);
  });

  it('has no serious or critical accessibility violation at 1280 px and at 390 px', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `accesible-${Date.now()}` });
    const queueId = queue.id as string;
    await insertItem(queueId, 'pending_review', 'AX-1');
    await insertItem(queueId, 'dead_letter', 'AX-2');
    const found: Record<string, unknown> = {};
    for (const [label, viewport] of [['1280', DESKTOP], ['390', PHONE]] as const) {
      await page.setViewportSize(viewport);
      await page.goto(`${base}/console/sign-in`);
      await page.getByRole('heading', { name: 'Iniciar sesión' }).waitFor();
      found[`sign-in@${label}`] = await seriousViolations();
      await signIn();
      await page.locator(`[data-queue="${queue.name}"] [data-count="pending_review"]`).waitFor();
      await page.getByText('Ningún trabajo ha fallado. ¡Todo en orden!').waitFor();
      await page.getByText('No hay máquinas registradas.').waitFor();
      found[`overview@${label}`] = await seriousViolations();
      await shot(`overview-${label}`);
      await page.goto(`${base}/console/queues/${queueId}`);
      await page.getByRole('button', { name: 'Ver detalle: AX-1' }).click();
      await page.getByRole('button', { name: 'Aprobar' }).waitFor();
      found[`queue@${label}`] = await seriousViolations();
      await shot(`queue-${label}`);
      await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    }
    expect(found).toEqual({
      'sign-in@1280': [], 'overview@1280': [], 'queue@1280': [],
      'sign-in@390': [], 'overview@390': [], 'queue@390': [],
    });
  });
});
