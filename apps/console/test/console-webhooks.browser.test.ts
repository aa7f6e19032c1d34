import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhookSignature } from '@svc/core/internals';
import { seedApiKey, seedQueue, seedUser, waitFor } from '@svc/testing';
import { DESKTOP, PHONE, base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitUntil } from './browser-harness';

/**
 * The console's webhooks and events pages in a real browser against the real API (set up as
 * console.browser.test.ts is), with the engine's webhook deliverer running in this process and a
 * real HTTP receiver on loopback: a subscription created with its secret shown once, a test
 * delivery that reaches the receiver signed with that secret and shows in the delivery log, a
 * redelivery, rotation, disabling, editing and deletion; the events page showing an item added
 * through the public API while it is open, paused and resumed. Screenshots in test-output/console/.
 */
jest.setTimeout(180_000);

useConsoleBrowser('console-webhooks.test', { permissions: ['clipboard-read', 'clipboard-write'] });
const nav = (name: string) => page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link', { name, exact: true });

interface Received {
  type: string;
  id: string;
  body: string;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** A webhook receiver on loopback that answers 204 and keeps what it got. */
const received: Received[] = [];
let receiver: http.Server;
let hookUrl: string;
let deliverer: { start(): void; close(): Promise<void> };
let apiKey: string;
let queueName: string;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const event = JSON.parse(body) as { id: string; type: string };
      received.push({
        type: event.type, id: event.id, body,
        timestamp: req.headers['svc-timestamp'] as string | undefined, signature: req.headers['svc-signature'] as string | undefined,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // what a deliverer process (DISPATCHER_ROLE=deliver) runs, here in the test's process
  deliverer = t.deps.engine.events.deliverer({ pollMs: 100 });
  deliverer.start();
  apiKey = (await seedApiKey(t.sql, tenantId, { scopes: ['queues:read', 'queues:write'] })).key;
  queueName = (await seedQueue(t.sql, tenantId, { name: `eventos-${Date.now()}` })).name as string;
});

afterAll(async () => {
  await deliverer?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

const signedWith = (secret: string, r: Received) => verifyWebhookSignature(secret, { timestamp: r.timestamp, signature: r.signature }, r.body);
const tests = () => received.filter((r) => r.type === 'webhook.test');

async function expectAccessible(name: string): Promise<void> {
  for (const viewport of [DESKTOP, PHONE]) {
    await page.setViewportSize(viewport);
    expect([name, viewport.width, await seriousViolations()]).toEqual([name, viewport.width, []]);
  }
  await page.setViewportSize(DESKTOP);
}

async function hookRow() {
  const [row] = await t.sql`select id, url, event_types, description, is_active from webhook_subscriptions where tenant_id = ${tenantId} and url = ${hookUrl}`;
  return row;
}

describe('the console\'s webhooks and events pages in a browser', () => {
  it('creates a subscription with its secret shown once, sends a test that arrives signed and shows in the log, redelivers it', async () => {
    await signIn();
    await nav('Webhooks').click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('Aún no hay suscripciones.', { exact: false }).waitFor();
    await expectAccessible('webhooks-empty');

    // a URL the API refuses: its Spanish message next to the field
    await page.getByRole('button', { name: 'Nueva suscripción' }).click();
    await page.getByLabel('URL de destino').fill('ftp://example.com/x');
    await page.getByRole('checkbox', { name: /Todos los eventos/ }).uncheck();
    await page.getByRole('checkbox', { name: /item\.added/ }).check();
    await page.getByRole('button', { name: 'Crear suscripción' }).click();
    await page.locator('#url-error').waitFor();
    expect(await page.getByLabel('URL de destino').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible('webhooks-form-error');

    await page.getByLabel('URL de destino').fill(hookUrl);
    await page.getByLabel('Descripción (opcional)').fill('ERP de pedidos');
    await page.getByRole('button', { name: 'Crear suscripción' }).click();
    await page.getByRole('heading', { name: `Secreto de firma de ${hookUrl}` }).waitFor();
    expect(await page.getByText('no se volverá a mostrar', { exact: false }).isVisible()).toBe(true);
    const secret = await page.getByRole('textbox', { name: 'Secreto de firma' }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(await hookRow()).toMatchObject({ event_types: ['item.added'], description: 'ERP de pedidos', is_active: true });
    const row = page.locator(`tr[data-webhook="${hookUrl}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('item.added');
    await page.getByRole('button', { name: 'Copiar el secreto' }).click();
    await page.getByText('Secreto copiado al portapapeles.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await expectAccessible('webhooks-secret');
    await shot('webhook-secret');
    await page.getByRole('button', { name: 'Ya lo he guardado' }).click();
    expect(await page.getByRole('textbox', { name: 'Secreto de firma' }).count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    expect(await page.evaluate('JSON.stringify(sessionStorage) + JSON.stringify(localStorage)')).not.toContain(secret);

    // a test delivery: the receiver gets it signed with the secret shown; the log shows it delivered
    await page.getByRole('button', { name: `Enviar prueba a ${hookUrl}` }).click();
    await page.getByText(`Prueba en cola para ${hookUrl}`, { exact: false }).waitFor();
    const first = await waitFor('the test delivery at the receiver', async () => tests()[0] ?? null);
    expect(signedWith(secret, first)).toBe(true);
    // its result on the page, followed until delivered
    const result = page.getByRole('region', { name: `Prueba a ${hookUrl}` });
    await page.locator('[data-test-result="delivered"]').waitFor();
    expect(await result.getByRole('status').textContent()).toContain('Entregada (HTTP 204');
    await expectAccessible('webhook-test-result');
    await page.getByRole('link', { name: `Entregas de ${hookUrl}` }).click();
    await page.getByRole('heading', { name: `Entregas a ${hookUrl}` }).waitFor();
    const delivered = page.locator(`tr[data-event-type="webhook.test"][data-status="delivered"]`);
    await delivered.waitFor();
    expect(await delivered.textContent()).toContain(first.id);
    expect(await delivered.textContent()).toContain('204');
    await expectAccessible('webhook-deliveries');

    // redelivery: the same event again, as a new delivery, signed the same way
    await page.getByRole('button', { name: `Reenviar el evento ${first.id}` }).click();
    await page.getByText(`Evento ${first.id} en cola para reenviarse.`).waitFor();
    const again = await waitFor('the redelivery at the receiver', async () => tests()[1] ?? null);
    expect(again.id).toBe(first.id);
    expect(again.body).toBe(first.body);
    expect(signedWith(secret, again)).toBe(true);
    await waitUntil('document.querySelectorAll(\'tr[data-event-type="webhook.test"][data-status="delivered"]\').length === 2');
    await shot('webhook-deliveries');

    // the status filter lives in the address: none failed
    await page.getByLabel('Estado', { exact: true }).selectOption('failed');
    await page.getByText('No hay entregas con estos filtros.').waitFor();
    expect(page.url()).toContain('status=failed');
    await page.getByLabel('Estado', { exact: true }).selectOption('delivered');
    await waitUntil('document.querySelectorAll(\'tr[data-status="delivered"]\').length === 2');
    expect(await page.locator('tr[data-delivery]:not([data-status="delivered"])').count()).toBe(0);

    // paging: 20 a page, the page in the address
    const hookId = (await hookRow())!.id as string;
    const admin = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    for (let i = 0; i < 20; i++) {
      expect((await t.http.post(`/api/v1/settings/webhooks/${hookId}/test`).set('Authorization', `Bearer ${admin}`)).status).toBe(202);
    }
    await page.getByLabel('Estado', { exact: true }).selectOption('');
    const pager = page.getByRole('navigation', { name: 'Paginación' });
    await pager.getByText('Página 1 de 2').waitFor();
    expect(await page.locator('tr[data-delivery]').count()).toBe(20);
    await pager.getByRole('button', { name: 'Siguiente' }).click();
    await pager.getByText('Página 2 de 2').waitFor();
    expect(page.url()).toContain('page=2');
    // the oldest, the first test, is last
    await page.locator(`tr[data-delivery]`, { hasText: first.id }).first().waitFor();
    expect(await page.locator('tr[data-delivery]').count()).toBe(2);
    // every one reaches the receiver before the next test rotates the secret
    await waitFor('the 22 tests at the receiver', async () => (tests().length >= 22 ? true : null));
  });

  it('rotates the secret (shown once, signing what follows), disables and enables, edits and deletes through a confirmation', async () => {
    await signIn();
    await page.goto(`${base}/console/webhooks`);
    const row = page.locator(`tr[data-webhook="${hookUrl}"]`);
    await row.waitFor();

    await page.getByRole('button', { name: `Rotar el secreto de ${hookUrl}` }).click();
    const rotateDialog = page.getByRole('dialog', { name: `¿Rotar el secreto de ${hookUrl}?` });
    await rotateDialog.waitFor();
    await expectAccessible('webhook-rotate-dialog');
    await rotateDialog.getByRole('button', { name: 'Rotar el secreto' }).click();
    await page.getByRole('heading', { name: `Nuevo secreto de firma de ${hookUrl}` }).waitFor();
    const rotated = await page.getByRole('textbox', { name: 'Secreto de firma' }).inputValue();
    expect(rotated).toMatch(/^whsec_/);
    await waitUntil(`document.querySelector('tr[data-webhook="${hookUrl}"]').textContent.includes(${JSON.stringify(rotated.slice(0, 12))})`);
    await page.getByRole('button', { name: 'Ya lo he guardado' }).click();

    const before = tests().length;
    await page.getByRole('button', { name: `Enviar prueba a ${hookUrl}` }).click();
    const signed = await waitFor('a test after the rotation', async () => tests()[before] ?? null);
    expect(signedWith(rotated, signed)).toBe(true);

    // disable and enable: the API's record follows
    await page.getByRole('button', { name: `Desactivar la suscripción ${hookUrl}` }).click();
    await page.getByText(`Suscripción ${hookUrl} desactivada`, { exact: false }).waitFor();
    await row.locator('[data-state="disabled"]').waitFor();
    expect((await hookRow())!.is_active).toBe(false);
    await page.getByRole('button', { name: `Activar la suscripción ${hookUrl}` }).click();
    await row.locator('[data-state="active"]').waitFor();
    expect((await hookRow())!.is_active).toBe(true);

    // edit: every event type, another description
    await page.getByRole('button', { name: `Editar la suscripción ${hookUrl}` }).click();
    await page.getByRole('heading', { name: 'Editar la suscripción' }).waitFor();
    await page.getByRole('checkbox', { name: /Todos los eventos/ }).check();
    await page.getByLabel('Descripción (opcional)').fill('Todo para el ERP');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Suscripción guardada.').waitFor();
    expect(await hookRow()).toMatchObject({ event_types: ['*'], description: 'Todo para el ERP' });

    // delete: Escape keeps it; confirming removes it with its log
    await page.getByRole('button', { name: `Eliminar la suscripción ${hookUrl}` }).click();
    const removeDialog = page.getByRole('dialog', { name: `¿Eliminar la suscripción ${hookUrl}?` });
    await removeDialog.waitFor();
    await page.keyboard.press('Escape');
    await removeDialog.waitFor({ state: 'hidden' });
    expect(await hookRow()).toBeDefined();
    await page.getByRole('button', { name: `Eliminar la suscripción ${hookUrl}` }).click();
    await removeDialog.getByRole('button', { name: 'Eliminar' }).click();
    await page.getByText(`Suscripción ${hookUrl} eliminada.`).waitFor();
    await row.waitFor({ state: 'detached' });
    expect(await hookRow()).toBeUndefined();

    // the audit log has each change
    const actions = await t.sql<Array<{ action: string }>>`
      select action from audit_log where tenant_id = ${tenantId} and resource_type = 'webhook' order by id`;
    expect(actions.map((a) => a.action)).toEqual(expect.arrayContaining(['create_webhook', 'redeliver_webhook', 'rotate_webhook_secret', 'update_webhook', 'delete_webhook']));
  });

  it('shows an item added through the public API while the events page is open; pausing holds new ones until asked for', async () => {
    await signIn();
    // the stream is read within the console's CSP: nothing refused
    const refused: string[] = [];
    page.on('console', (m) => { if (m.text().includes('Content Security Policy')) refused.push(m.text()); });
    await nav('Eventos').click();
    await page.getByRole('heading', { name: 'Eventos', level: 1 }).waitFor();
    await page.locator('.live-state[data-state="live"]').waitFor();

    const add = async (reference: string) => {
      const res = await t.http.post(`/api/v1/queues/by-name/${queueName}/items`).set('X-API-Key', apiKey).send({ reference, data: { pedido: reference } });
      expect(res.status).toBe(200);
      return res.body.data.id as string;
    };
    // an item.added event names its items by id
    const row = (itemId: string) => page.locator('tr[data-type="item.added"]', { hasText: itemId });
    const live = row(await add('pedido-en-directo'));
    await live.waitFor();
    // one sparse, polite announcement of how many arrived
    await waitUntil('document.querySelector("[data-announcement]").textContent.includes("evento")', 30_000);
    expect(await page.locator('[data-announcement]').getAttribute('aria-live')).toBe('polite');
    expect(await page.locator('[data-announcement]').textContent()).toMatch(/^Ha(n)? llegado \d+ eventos? nuevos?\.$/);
    await expectAccessible('events-live');
    await shot('events-live');

    // paused: a new item does not appear until "Cargar los eventos más recientes"
    await page.getByRole('button', { name: 'Pausar el directo' }).click();
    await page.locator('.live-state[data-state="paused"]').waitFor();
    expect(await page.getByRole('button', { name: 'Reanudar el directo' }).getAttribute('aria-pressed')).toBe('true');
    const reader = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    const heldId = await add('pedido-en-pausa');
    const held = row(heldId);
    // the feed has it (seen through the API) while the paused page does not
    // read at a person's pace: the feed's reads are rate-limited like any other
    await waitFor('the paused item in the feed', async () => {
      const res = await t.http.get('/api/v1/settings/events').query({ newest: true, types: 'item.added', limit: 5 }).set('Authorization', `Bearer ${reader}`);
      return res.status === 200 && JSON.stringify(res.body.data).includes(heldId) ? true : null;
    }, 30_000, 500);
    expect(await held.count()).toBe(0);
    await page.getByRole('button', { name: 'Cargar los eventos más recientes' }).click();
    await held.waitFor();
    await page.getByRole('button', { name: 'Reanudar el directo' }).click();
    await page.locator('.live-state[data-state="live"]').waitFor();
    await row(await add('pedido-reanudado')).waitFor();
    // each event once
    expect(await held.count()).toBe(1);

    // the type filter lives in the address and goes to the feed and the stream
    await page.getByLabel('Tipo de evento').selectOption('job.failed');
    await page.getByText('No hay eventos con este filtro todavía.').waitFor();
    expect(page.url()).toContain('type=job.failed');
    await page.locator('.live-state[data-state="live"]').waitFor();
    const filteredId = await add('pedido-filtrado');
    await page.getByLabel('Tipo de evento').selectOption('item.added');
    await row(filteredId).waitFor();
    expect(refused).toEqual([]);
  });

  it('offers members neither page: no nav entries, and "Sin permiso" without a request', async () => {
    await signIn(memberEmail);
    const navLinks = await page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link').allTextContents();
    expect(navLinks).not.toContain('Webhooks');
    expect(navLinks).not.toContain('Eventos');
    const calls: string[] = [];
    // only the two pages' own reads count: the landing page may still be polling its queue's stats
    page.on('request', (r) => { if (/\/api\/v1\/settings\/(webhooks|events)/.test(r.url())) calls.push(r.url()); });
    for (const path of ['webhooks', 'events', 'webhooks/00000000-0000-4000-8000-000000000000/deliveries']) {
      await page.goto(`${base}/console/${path}`);
      await page.getByRole('heading', { name: 'Sin permiso' }).waitFor();
    }
    expect(calls).toEqual([]);
    await expectAccessible('webhooks-member');
  });
});
