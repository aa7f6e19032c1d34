import { seedMachine, seedProcess } from '@svc/testing';
import { base, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * Triggering a job from the console in a real browser against the real API: the form is made
 * from the process's input_schema, the API's own check of the input lands on the fields, and the
 * job's page opens once the job exists.
 */
jest.setTimeout(120_000);

const WAIT = 30_000;
useConsoleBrowser('trigger.test');
const stamp = () => `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

const SCHEMA = {
  type: 'object',
  required: ['factura', 'importe'],
  properties: {
    factura: { type: 'string', title: 'Factura', minLength: 1 },
    importe: { type: 'number', title: 'Importe', minimum: 0 },
    moneda: { type: 'string', title: 'Moneda', enum: ['EUR', 'USD'] },
    urgente: { type: 'boolean', title: 'Urgente' },
  },
  additionalProperties: false,
};

describe('triggering a job from the console', () => {
  it('fills a form made from the input_schema, shows the checks on the fields, and opens the new job', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `facturas-${stamp()}`, input_schema: SCHEMA });
    const { row: machine } = await seedMachine(t.sql, tenantId, { name: `robot-${stamp()}`, status: 'online' });

    await signIn();
    await page.goto(`${base}/console/jobs`);
    await page.getByRole('link', { name: 'Lanzar un trabajo' }).click();
    await page.getByRole('heading', { name: 'Lanzar un trabajo', level: 1 }).waitFor({ timeout: WAIT });
    await page.getByLabel('Proceso', { exact: true }).selectOption({ label: process.name });
    // the machine picker names each machine's status
    const option = page.locator('#trigger-machine option', { hasText: machine.name });
    expect(await option.textContent()).toBe(`${machine.name} · En línea`);
    await page.getByLabel('Máquina', { exact: true }).selectOption(machine.id);

    await page.getByLabel('Factura', { exact: true }).fill('F-2026-7');
    await page.getByLabel('Importe', { exact: true }).fill('doce');
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await page.getByText('Debe ser un número.').waitFor({ timeout: WAIT });

    // the API's own check: below the schema's minimum
    await page.getByLabel('Importe', { exact: true }).fill('-3');
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await page.locator('#input-importe-error').waitFor({ timeout: WAIT });
    expect(await page.locator('#input-importe-error').textContent()).toMatch(/0/);
    expect(await seriousViolations()).toEqual([]);
    await shot('trigger-form');
    const [none] = await t.sql`select count(*)::int as n from jobs where process_id = ${process.id}`;
    expect(none!.n).toBe(0);

    await page.getByLabel('Importe', { exact: true }).fill('12,5');
    await page.getByLabel('Moneda (opcional)').selectOption('"EUR"');
    await page.getByLabel('Urgente (opcional)').check();
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await page.getByRole('heading', { name: `Trabajo de ${process.name}` }).waitFor({ timeout: WAIT });
    const [job] = await t.sql`select id, status, machine_id, input_data, source from jobs where process_id = ${process.id}`;
    expect(job).toMatchObject({ status: 'pending', machine_id: machine.id, source: 'console', input_data: { factura: 'F-2026-7', importe: 12.5, moneda: 'EUR', urgente: true } });
    expect(page.url()).toBe(`${base}/console/jobs/${job!.id}`);
  });

  it('takes free JSON for a process without a schema', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `libre-${stamp()}` });
    await seedMachine(t.sql, tenantId, { name: `robot-${stamp()}`, status: 'online' });
    await signIn();
    await page.goto(`${base}/console/jobs/new`);
    await page.getByLabel('Proceso', { exact: true }).selectOption({ label: process.name });
    await page.getByLabel('Datos de entrada en JSON').fill('[1, 2]');
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await page.getByText('Debe ser un objeto JSON.').waitFor({ timeout: WAIT });
    await page.getByLabel('Datos de entrada en JSON').fill('{"lote": 7}');
    await page.getByRole('button', { name: 'Lanzar' }).click();
    await page.getByRole('heading', { name: `Trabajo de ${process.name}` }).waitFor({ timeout: WAIT });
    const [job] = await t.sql`select input_data from jobs where process_id = ${process.id}`;
    expect(job!.input_data).toEqual({ lote: 7 });
  });
});
