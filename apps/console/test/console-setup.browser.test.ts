import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Locator } from 'playwright-core';
import { verifyWebhookSignature } from '@svc/core/internals';
import { Children, waitFor } from '@svc/testing';
import { base, createApiKeyInPage, nav, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitForText } from './browser-harness';

/**
 * The console's promise end to end: from a workspace with nothing but its seeded users, an admin
 * sets up everything a robot needs through the console alone — a user (who signs in with the
 * one-time password and chooses their own), a folder, a process with an input_schema, a machine
 * whose key the page shows once, a queue consuming with that process, an asset, a webhook, an API
 * key — and a robot started with the key copied from the page runs a job launched from the
 * schema's form and the items an integrator adds, which the queue's page shows completed and the
 * webhook receiver gets as signed `item.completed` events.
 *
 * The platform around the console is the real one: the in-process API the browser uses (which
 * serves /console), an API process the robot connects to over the agent WebSocket (as a replica
 * behind a load balancer would be), a dispatcher (DISPATCHER_ROLE=all: dispatch and webhook
 * delivery) and an agent-sim robot holding only the platform's URL and the key. Nothing reaches
 * the database but reads that check what the page said.
 */
jest.setTimeout(180_000);

useConsoleBrowser('console-setup.test');
const children = new Children();

interface Received {
  type: string;
  data: Record<string, unknown>;
  body: string;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** A webhook receiver on loopback that answers 204 and keeps what it got. */
const received: Received[] = [];
let receiver: http.Server;
let hookUrl: string;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const event = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      received.push({
        type: event.type, data: event.data, body,
        timestamp: req.headers['svc-timestamp'] as string | undefined, signature: req.headers['svc-signature'] as string | undefined,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await children.stopAll();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

/** Waits for a locator; a timeout says what the page showed instead. */
async function shown(locator: Locator, timeout = 30_000): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the page at ${page.url()} shows:\n${await page.locator('body').innerText()}\n--- processes:\n${children.tails()}`);
  }
}

const ITEMS = 6;
const SCHEMA = { type: 'object', required: ['invoice'], properties: { invoice: { type: 'string', title: 'Factura', minLength: 1 } }, additionalProperties: false };

describe('setting up a workspace from nothing in the console', () => {
  it('an admin sets up users, a process, a machine and its key, a queue with a consumer, an asset and a webhook; a robot with that key completes the items', async () => {
    // nothing but the seeded admin (and the member every console test gets)
    const [before] = await t.sql`select
      (select count(*)::int from processes where tenant_id = ${tenantId}) as processes,
      (select count(*)::int from machines where tenant_id = ${tenantId}) as machines,
      (select count(*)::int from queues where tenant_id = ${tenantId}) as queues,
      (select count(*)::int from webhook_subscriptions where tenant_id = ${tenantId}) as webhooks,
      (select count(*)::int from api_keys where tenant_id = ${tenantId}) as keys`;
    expect(before).toEqual({ processes: 0, machines: 0, queues: 0, webhooks: 0, keys: 0 });

    // the dispatcher runs from the start, as in production: it has nothing to do yet
    await children.watchedDispatcher(t, { DISPATCHER_ROLE: 'all', WEBHOOK_POLL_MS: '100' });

    await signIn();

    // a second user, with the one-time password shown to hand over
    const email = `operadora-${Date.now()}@console-setup.test`;
    await nav('Usuarios').click();
    await page.getByRole('button', { name: 'Nuevo usuario' }).click();
    await page.getByLabel('Correo electrónico').fill(email);
    await page.getByLabel('Nombre (opcional)').fill('Olga Operadora');
    await page.getByRole('button', { name: 'Crear usuario' }).click();
    await shown(page.getByRole('heading', { name: `Contraseña de un solo uso de ${email}` }));
    const oneTime = await page.getByLabel('Contraseña de un solo uso', { exact: true }).inputValue();
    expect(oneTime).toMatch(/^[A-Za-z0-9_-]{24}$/);
    await shot('setup-user');
    await page.getByRole('button', { name: 'Ya la he entregado' }).click();
    await page.locator(`tr[data-user="${email}"]`).waitFor();

    // they sign in with it, choose their own password, and are in; then the admin again
    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await page.getByLabel('Correo electrónico').fill(email);
    await page.getByLabel('Contraseña', { exact: true }).fill(oneTime);
    await page.getByRole('button', { name: 'Entrar' }).click();
    await shown(page.getByRole('heading', { name: 'Elija su contraseña' }));
    await page.getByLabel('Contraseña actual').fill(oneTime);
    await page.getByLabel('Contraseña nueva', { exact: true }).fill('clave-de-olga-1');
    await page.getByLabel('Repita la contraseña nueva').fill('clave-de-olga-1');
    await page.getByRole('button', { name: 'Cambiar la contraseña' }).click();
    await shown(page.getByRole('heading', { name: 'Resumen' }));
    expect(await nav('Usuarios').count()).toBe(0); // a member
    await page.getByRole('button', { name: 'Cerrar sesión' }).click();
    await signIn();

    // a folder and a process in it with an input_schema
    await nav('Carpetas').click();
    await page.getByRole('button', { name: 'Nueva carpeta' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Cobros');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByText('Carpeta «Cobros» guardada.'));
    await nav('Procesos').click();
    await page.getByRole('button', { name: 'Nuevo proceso' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('facturas');
    await page.getByLabel('Carpeta').selectOption({ label: 'Cobros' });
    await page.getByLabel('Esquema de entrada (JSON Schema)').fill(JSON.stringify(SCHEMA, null, 2));
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByText('Proceso «facturas» guardado.'));
    await page.locator('tr[data-process="facturas"]').waitFor();

    // a machine: its key is shown once, and that copy is all the robot will get
    await nav('Máquinas').click();
    await page.getByRole('button', { name: 'Nueva máquina' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('Robot-01');
    await page.getByLabel('Ranuras').fill('2');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByRole('heading', { name: 'Clave de la máquina «Robot-01»' }));
    const machineKey = await page.getByLabel('Clave secreta').inputValue();
    expect(machineKey).toMatch(/^svc_mk_/);
    await shot('setup-machine-key');
    await page.getByRole('button', { name: 'Ya la he guardado' }).click();
    expect(await page.content()).not.toContain(machineKey);

    // a queue consumed by the process; its consumer gets the queue's default trigger
    await nav('Colas').click();
    await page.getByRole('button', { name: 'Nueva cola' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('facturas-entrada');
    await page.getByLabel('Proceso consumidor').selectOption({ label: 'facturas' });
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByText('Cola «facturas-entrada» guardada.'));
    await page.locator('tr[data-queue="facturas-entrada"]').getByText('facturas', { exact: true }).waitFor();
    await shown(page.getByRole('link', { name: '1 disparador de la cola facturas-entrada' }));

    // an asset
    await nav('Activos').click();
    await page.getByRole('button', { name: 'Nuevo activo' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('erp-url');
    await page.getByLabel('Tipo').selectOption('text');
    await page.getByLabel('Valor en production').fill('https://erp.example.test');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await shown(page.getByText('Activo «erp-url» guardado.'));

    // a webhook on every event, to the test's receiver; its signing secret shown once
    await nav('Webhooks').click();
    await page.getByRole('button', { name: 'Nueva suscripción' }).click();
    await page.getByLabel('URL de destino').fill(hookUrl);
    await page.getByLabel('Descripción (opcional)').fill('ERP de cobros');
    await page.getByRole('button', { name: 'Crear suscripción' }).click();
    await shown(page.getByRole('heading', { name: `Secreto de firma de ${hookUrl}` }));
    const secret = await page.getByRole('textbox', { name: 'Secreto de firma' }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Ya lo he guardado' }).click();
    await page.locator(`tr[data-webhook="${hookUrl}"]`).waitFor();

    // the integrator's API key
    await nav('Claves API').click();
    const apiKey = await createApiKeyInPage('ERP cobros', /queues:write/, /queues:read/, /assets:read/);
    expect(apiKey).toMatch(/^svc_ak_/);
    await page.getByRole('button', { name: 'Ya la he guardado' }).click();

    // the robot: agent-sim with the key copied from the page, connecting to an API replica
    const robot = await children.agent(t, ['--machine-key', machineKey, '--duration', '200-400ms', '--item-duration', '20-60ms']);
    await nav('Máquinas').click();
    await waitFor('the robot online on the machines page', async () =>
      ['En línea', 'Ocupada'].includes(((await page.locator('tr[data-machine="Robot-01"] [data-cell="status"]').textContent()) ?? '').trim())
      || (robot.proc.exitCode !== null ? Promise.reject(new Error(`the robot exited:\n${robot.output()}`)) : false), 30_000);
    await shot('setup-machine-online');

    // a job of the process launched from the console with a form made from its input_schema,
    // which the robot runs (the machine picked automatically)
    await nav('Trabajos').click();
    await page.getByRole('link', { name: 'Lanzar un trabajo' }).click();
    await page.getByLabel('Proceso', { exact: true }).selectOption({ label: 'facturas' });
    await page.getByLabel('Factura', { exact: true }).fill('INV-0');
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await shown(page.getByRole('heading', { name: /Trabajo de facturas/ }));
    await shown(page.locator('[data-job-status="completed"]'), 60_000);
    const [job] = await t.sql`select j.input_data, j.source, j.machine_id, m.name as machine from jobs j join machines m on m.id = j.machine_id where j.tenant_id = ${tenantId} and j.queue_id is null`;
    expect(job).toMatchObject({ input_data: { invoice: 'INV-0' }, source: 'console', machine: 'Robot-01' });
    // its origin names the console among the sources the job's answer cannot tell apart
    expect(await page.locator('dl').getByText('Consola, API, webhook, cadena o reintento').count()).toBe(1);
    await shot('setup-job-completed');

    // the integrator reads the asset and adds items with the console's key, over HTTP
    const asset = await fetch(`${base}/api/v1/assets/by-name/erp-url`, { headers: { 'X-API-Key': apiKey } });
    expect(asset.status).toBe(200);
    expect(JSON.stringify(await asset.json())).toContain('https://erp.example.test');
    const added = await fetch(`${base}/api/v1/queues/by-name/facturas-entrada/items/bulk`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ items: Array.from({ length: ITEMS }, (_, i) => ({ invoice: `INV-${i + 1}` })) }),
    });
    expect([added.status, await added.json()]).toEqual([200, { success: true, data: { added: ITEMS } }]);

    // the queue's page shows them completed by the robot
    await nav('Colas').click();
    await page.getByRole('link', { name: 'Ver los elementos de la cola facturas-entrada' }).click();
    await page.getByRole('heading', { level: 1 }).filter({ hasText: 'facturas-entrada' }).waitFor();
    try {
      await waitForText('[data-count="completed"]', String(ITEMS), 60_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- the page at ${page.url()} shows:\n${await page.locator('body').innerText()}\n--- processes:\n${children.tails()}`);
    }
    expect(await page.locator('[data-count="new"]').textContent()).toBe('0');
    expect(await page.locator('[data-count="failed"]').textContent()).toBe('0');
    expect(await page.locator('[data-count="dead_letter"]').textContent()).toBe('0');
    await page.getByLabel('Estado', { exact: true }).selectOption('completed');
    await waitFor('every item listed completed', async () => (await page.locator('table.items tbody tr').count()) === ITEMS);
    expect(await seriousViolations()).toEqual([]);
    await shot('setup-queue-completed');

    // processed by that machine, by consumer jobs of the process started by the queue's trigger
    const [machine] = await t.sql`select id from machines where tenant_id = ${tenantId} and name = 'Robot-01'`;
    const items = await t.sql`select i.processed_by, i.status from queue_items i join queues q on q.id = i.queue_id where q.tenant_id = ${tenantId} and q.name = 'facturas-entrada'`;
    expect(items).toEqual(Array.from({ length: ITEMS }, () => ({ processed_by: machine!.id, status: 'completed' })));
    const jobs = await t.sql`select j.trigger_id is not null as by_trigger from jobs j join processes p on p.id = j.process_id where p.tenant_id = ${tenantId} and p.name = 'facturas' and j.queue_id is not null`;
    expect(jobs.length).toBeGreaterThan(0);
    for (const j of jobs) expect(j.by_trigger).toBe(true);

    // the webhook receiver got one signed item.completed per item
    const completed = await waitFor('an item.completed event per item at the receiver', async () => {
      const got = received.filter((r) => r.type === 'item.completed');
      return got.length >= ITEMS ? got : null;
    }, 60_000);
    expect(completed.map((r) => (r.data.data as { invoice: string }).invoice).sort()).toEqual(Array.from({ length: ITEMS }, (_, i) => `INV-${i + 1}`).sort());
    for (const r of completed) {
      expect(r.data).toMatchObject({ status: 'completed', processed_by: machine!.id });
      expect(verifyWebhookSignature(secret, { timestamp: r.timestamp, signature: r.signature }, r.body)).toBe(true);
    }
    expect(received.some((r) => r.type === 'item.added')).toBe(true);

    // the webhook's delivery log in the console says the same
    await nav('Webhooks').click();
    await page.getByRole('link', { name: `Entregas de ${hookUrl}` }).click();
    await shown(page.locator('tr[data-event-type="item.completed"][data-status="delivered"]').first());
    await shot('setup-webhook-deliveries');
  });
});
