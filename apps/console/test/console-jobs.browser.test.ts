import { seedApiKey, seedJob, seedMachine, seedProcess } from '@svc/testing';
import { DESKTOP, PHONE, base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitForText, waitUntil } from './browser-harness';

/**
 * The console's jobs, job detail and machines pages in a real browser (Debian's Chromium through
 * playwright-core) against the real API on a port of its own over real Postgres and Redis, as
 * console.browser.test.ts does. A job gets to `running` the way it does in production: triggered
 * through the public API, then started, reported on, asked about and ended by the machine's side
 * of the engine (`engine.machines.*`, what an agent calls). Each test leaves a screenshot in
 * test-output/console/.
 */
jest.setTimeout(120_000);

const WAIT = 30_000;
useConsoleBrowser('jobs.test');
let apiKey: string;

beforeAll(async () => {
  apiKey = (await seedApiKey(t.sql, tenantId, { scopes: ['jobs:read', 'jobs:write'] })).key;
});
const stamp = () => `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

async function signOut(): Promise<void> {
  await page.getByRole('button', { name: 'Cerrar sesión' }).click();
  await page.getByText('Ha cerrado la sesión.').waitFor({ timeout: 2 * WAIT });
}

/** Waits until an element matching `selector` exists. */
async function waitForSelector(selector: string, timeout = WAIT): Promise<void> {
  await page.locator(selector).first().waitFor({ timeout });
}

/** A process and a machine of the workspace, named for the test. */
async function processAndMachine(label: string, machine: Record<string, unknown> = {}) {
  const process = await seedProcess(t.sql, tenantId, { name: `${label}-${stamp()}` });
  const { row } = await seedMachine(t.sql, tenantId, { name: `robot-${label}-${stamp()}`, slots: 2, ...machine });
  return { processId: process.id as string, processName: process.name as string, machineId: row.id as string, machineName: row.name as string };
}

/**
 * A real running job: triggered through the public API (an API key with jobs:write), then
 * started by the machine's side of the engine, as its agent does. Returns its id and the run's
 * fencing token.
 */
async function runningJob(processId: string, machineId: string, inputData: Record<string, unknown> = { factura: 'F-1' }) {
  const res = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', apiKey).send({ process_id: processId, machine_id: machineId, input_data: inputData });
  expect(res.status).toBe(201);
  const jobId = res.body.data.id as string;
  expect(res.body.data.status).toBe('pending');
  const started = await t.deps.engine.machines.startJob(jobId, machineId);
  if (!('started' in started)) throw new Error(`the job did not start: ${JSON.stringify(started)}`);
  return { jobId, attempt: started.started.attempt as number };
}

async function jobRow(id: string) {
  const [row] = await t.sql`select status, stop_requested, input_answer, pending_input_prompt from jobs where id = ${id}`;
  return row!;
}

describe('the console\'s jobs and machines pages in a browser', () => {
  it('lists jobs, filters them by process, status and machine, pages through them, and opens a failure from the overview', async () => {
    const a = await processAndMachine('facturacion');
    const b = await processAndMachine('nominas');
    for (let i = 0; i < 22; i++) await seedJob(t.sql, tenantId, { process_id: a.processId, machine_id: a.machineId, status: 'completed' });
    const failed = await seedJob(t.sql, tenantId, { process_id: b.processId, machine_id: b.machineId, status: 'failed' });
    await t.sql`update jobs set error_message = 'El ERP no respondió', exception_type = 'business' where id = ${failed.id}`;
    const pending = await seedJob(t.sql, tenantId, { process_id: b.processId, machine_id: b.machineId, status: 'pending' });

    await signIn();
    // the overview's latest failures link to the job's page
    await page.getByRole('link', { name: b.processName }).first().click();
    await page.getByRole('heading', { name: `Trabajo de ${b.processName}` }).waitFor();
    expect(page.url()).toBe(`${base}/console/jobs/${failed.id}`);
    await page.locator('[data-error-message]').getByText('El ERP no respondió').waitFor();
    // the kind of its failure: business, final (never retried by itself)
    expect(await page.locator('[data-exception-type]').textContent()).toBe('Excepción de negocio');

    await page.getByRole('link', { name: 'Trabajos', exact: true }).click();
    await page.getByRole('heading', { name: 'Trabajos', level: 1 }).waitFor();
    await page.getByLabel('Proceso', { exact: true }).selectOption({ label: a.processName });
    await page.waitForURL(new RegExp(`process_id=${a.processId}`));
    await page.getByText('Página 1 de 2 · 22 trabajos').waitFor({ timeout: WAIT });
    expect(await page.locator('table.jobs tbody tr').count()).toBe(20);
    await page.getByRole('button', { name: 'Siguiente' }).click();
    await page.getByText('Página 2 de 2 · 22 trabajos').waitFor({ timeout: WAIT });
    await waitUntil('document.querySelectorAll("table.jobs tbody tr").length === 2', WAIT);
    await shot('jobs-list');

    // another filter starts again on page 1; the filters combine
    await page.getByLabel('Proceso', { exact: true }).selectOption({ label: b.processName });
    await page.getByLabel('Estado', { exact: true }).selectOption('failed');
    await page.waitForURL((url) => url.searchParams.get('status') === 'failed' && url.searchParams.get('process_id') === b.processId && !url.searchParams.has('page'));
    await waitForSelector(`tr[data-job="${failed.id}"]`);
    await waitUntil('document.querySelectorAll("table.jobs tbody tr").length === 1', WAIT);
    expect(await page.locator(`tr[data-job="${failed.id}"] [data-cell="status"]`).textContent()).toBe('Fallido');

    await page.getByRole('button', { name: 'Quitar filtros' }).click();
    await page.waitForURL((url) => url.search === '');
    await page.getByLabel('Máquina', { exact: true }).selectOption({ label: b.machineName });
    await page.waitForURL((url) => url.searchParams.get('machine_id') === b.machineId && !url.searchParams.has('status'));
    await waitForSelector(`tr[data-job="${pending.id}"]`);
    await waitUntil('document.querySelectorAll("table.jobs tbody tr").length === 2', WAIT);

    // a filter nothing matches: the designed empty state
    await page.getByLabel('Estado', { exact: true }).selectOption('timed_out');
    await page.getByText('No hay trabajos con estos filtros.').waitFor({ timeout: WAIT });

    // a job this workspace does not have: the designed error, with the way back
    await page.goto(`${base}/console/jobs/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('alert').filter({ hasText: 'No se pudieron cargar los datos' }).waitFor();
    await page.getByRole('link', { name: 'Volver a los trabajos' }).waitFor();
  });

  it('follows a running job\'s progress and log live, and stops it (admin)', async () => {
    const w = await processAndMachine('conciliacion');
    const { jobId, attempt } = await runningJob(w.processId, w.machineId, { banco: 'BBVA' });
    const { reportProgress, finishRun } = t.deps.engine.machines;
    await reportProgress(jobId, attempt, {
      progress_percent: 40, progress_message: 'Descargando extractos',
      logs_append: { text: 'Conectando con el banco\nExtracto 1 de 3 descargado\n', seq: 1 },
      resource_metrics: { cpu_percent_avg: 12.5, cpu_percent_peak: 40, ram_mb_avg: 210, ram_mb_peak: 260, disk_read_mb: 3, disk_write_mb: 1.5, sample_count: 8, duration_seconds: 16 },
    });

    await signIn();
    await page.goto(`${base}/console/jobs?status=running`);
    await page.getByRole('link', { name: new RegExp(`^Abrir el trabajo de ${w.processName}`) }).click();
    await page.getByRole('heading', { name: `Trabajo de ${w.processName}` }).waitFor();
    await waitForText('[data-job-status]', 'En ejecución');
    await waitForText('[data-progress]', '40 %');
    await page.getByText('Descargando extractos').waitFor();
    expect(await page.getByRole('progressbar', { name: 'Progreso del trabajo' }).getAttribute('value')).toBe('40');
    expect(await page.locator('[data-logs]').textContent()).toContain('Extracto 1 de 3 descargado');
    expect(await page.locator('[data-metrics]').textContent()).toContain('12,5 % / 40 %');
    expect(await page.locator('pre[aria-label="Datos de entrada"]').textContent()).toContain('"banco": "BBVA"');

    // the robot goes on: the page reads the job and its log again by itself
    await reportProgress(jobId, attempt, { progress_percent: 70, logs_append: { text: 'Extracto 2 de 3 descargado\n', seq: 2 } });
    await waitForText('[data-progress]', '70 %');
    await waitUntil('document.querySelector("[data-logs]")?.textContent.includes("Extracto 2 de 3")', WAIT);

    await page.getByRole('button', { name: 'Detener el trabajo' }).click();
    const confirm = page.getByRole('alertdialog');
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Detener el trabajo' }).click();
    await page.getByText('Se pidió detener el trabajo.').waitFor();
    expect(await jobRow(jobId)).toMatchObject({ status: 'running', stop_requested: true });
    await page.getByText('Se pidió detenerlo: la máquina lo interrumpirá en breve.').waitFor({ timeout: WAIT });
    expect(await page.getByRole('button', { name: 'Detener el trabajo' }).count()).toBe(0); // not offered twice

    // the agent hears it on its next report and ends the run stopped, as it does on an abort
    expect(await reportProgress(jobId, attempt, { logs_append: { text: 'Detenido a petición del operador\n', seq: 3 } })).toEqual({ stop_requested: true });
    expect(await finishRun(jobId, attempt, { to: 'stopped', error_message: 'Detenido por un operador' })).not.toBeNull();
    await waitForText('[data-job-status]', 'Detenido');
    await waitUntil('document.querySelector("[data-logs]")?.textContent.includes("Detenido a petición del operador")', WAIT);
    expect((await jobRow(jobId)).status).toBe('stopped');
    await shot('job-stopped');
  });

  it('shows a job\'s question to a member, and an admin answers it, the API\'s message next to the field', async () => {
    const w = await processAndMachine('pagos');
    const { jobId, attempt } = await runningJob(w.processId, w.machineId);
    await t.deps.engine.machines.appendLogs(jobId, attempt, { text: 'Factura F-1 leída\n', seq: 1 });
    const asked = await t.deps.engine.machines.askInput(jobId, attempt, {
      prompt: '¿Qué importe se paga de la factura F-1?',
      options: { schema: {
        type: 'object', required: ['amount', 'currency'], additionalProperties: false,
        properties: { amount: { type: 'number', minimum: 0, title: 'Importe' }, currency: { enum: ['EUR', 'USD'], title: 'Moneda' } },
      } },
    });
    expect(asked).toEqual({ waiting: true });

    // a member reads the question but is not offered the form, nor stop
    await signIn(memberEmail);
    await page.goto(`${base}/console/jobs/${jobId}`);
    await waitForText('[data-job-status]', 'Esperando respuesta');
    await page.getByText('¿Qué importe se paga de la factura F-1?').waitFor();
    await page.getByText('Solo un administrador puede responder.').waitFor();
    expect(await page.getByRole('button', { name: 'Responder' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Detener el trabajo' }).count()).toBe(0);
    await signOut();

    await signIn();
    await page.goto(`${base}/console/jobs?status=waiting_input`);
    await waitForSelector(`tr[data-job="${jobId}"]`);
    await page.goto(`${base}/console/jobs/${jobId}`);
    await page.getByText('¿Qué importe se paga de la factura F-1?').waitFor();
    expect(await page.locator('[data-logs]').textContent()).toContain('Factura F-1 leída');

    // what the form catches itself: not a number, a required field left empty
    await page.getByLabel('Importe').fill('diez');
    await page.getByRole('button', { name: 'Responder' }).click();
    await page.locator('#answer-amount-error').getByText('Debe ser un número.').waitFor();
    await page.locator('#answer-currency-error').getByText('Este campo es obligatorio.').waitFor();
    expect(await page.getByLabel('Importe').getAttribute('aria-describedby')).toBe('answer-amount-error');

    // what only the API knows (the schema's minimum): its message, next to the field it names
    await page.getByLabel('Importe').fill('-5');
    await page.getByLabel('Moneda').selectOption({ label: 'EUR' });
    await page.getByRole('button', { name: 'Responder' }).click();
    const apiError = page.locator('#answer-amount-error');
    await apiError.getByText(/no cumple el schema de la pregunta/).waitFor();
    expect(await page.locator('#answer-currency-error').count()).toBe(0);
    expect((await jobRow(jobId)).status).toBe('waiting_input');
    await shot('job-input-error');

    await page.getByLabel('Importe').fill('12,5');
    await page.getByRole('button', { name: 'Responder' }).click();
    await page.getByText('Respuesta enviada: el trabajo continúa.').waitFor();
    await waitForText('[data-job-status]', 'En ejecución');
    expect(await page.getByText('¿Qué importe se paga de la factura F-1?').count()).toBe(0);
    expect(await jobRow(jobId)).toMatchObject({ status: 'running', pending_input_prompt: null, input_answer: { value: { amount: 12.5, currency: 'EUR' } } });
    // the robot reads the answer as its agent does
    expect((await t.deps.engine.machines.readInput(jobId, attempt))?.answer).toEqual({ value: { amount: 12.5, currency: 'EUR' } });
    await shot('job-input-answered');
  });

  it('shows each machine\'s status, slots in use, last heartbeat and kind, refreshing by itself', async () => {
    const label = stamp();
    const { row: busy } = await seedMachine(t.sql, tenantId, { name: `escritorio-${label}`, slots: 2 });
    await t.sql`update machines set kind = 'attended' where id = ${busy.id}`;
    const { row: off } = await seedMachine(t.sql, tenantId, { name: `apagada-${label}`, slots: 4, status: 'offline' });
    expect(await t.deps.engine.machines.heartbeat(busy.id as string, { running: 1, agentVersion: 'agent-sim 1.0' })).toMatchObject({ status: 'online' });

    await signIn();
    await page.getByRole('link', { name: 'Máquinas', exact: true }).click();
    await page.getByRole('heading', { name: 'Máquinas', level: 1 }).waitFor();
    const row = `tr[data-machine="escritorio-${label}"]`;
    await waitForText(`${row} [data-cell="status"]`, 'En línea');
    await waitForText(`${row} [data-cell="slots"]`, '1 de 2');
    await waitForText(`${row} [data-cell="kind"]`, 'Atendida');
    await waitForText(`${row} [data-cell="active"]`, 'sí');
    expect(await page.locator(`${row} time`).textContent()).toMatch(/ahora|hace/);
    await waitForText(`tr[data-machine="apagada-${label}"] [data-cell="status"]`, 'Desconectada');
    await waitForText(`tr[data-machine="apagada-${label}"] [data-cell="kind"]`, 'Desatendida');
    expect(off.id).toBeTruthy();

    // a second run takes its last slot: the page shows it busy without a reload
    await t.deps.engine.machines.heartbeat(busy.id as string, { running: 2 });
    await waitForText(`${row} [data-cell="status"]`, 'Ocupada');
    await waitForText(`${row} [data-cell="slots"]`, '2 de 2');
    await shot('machines');
  });

  it('has no serious or critical accessibility violation on the jobs, job and machines pages at 1280 px and at 390 px', async () => {
    const w = await processAndMachine('accesible');
    const { jobId, attempt } = await runningJob(w.processId, w.machineId);
    await t.deps.engine.machines.reportProgress(jobId, attempt, {
      progress_percent: 55, progress_message: 'Paso 2', logs_append: { text: 'línea 1\nlínea 2\n', seq: 1 },
      resource_metrics: { cpu_percent_avg: 5, cpu_percent_peak: 9, ram_mb_avg: 100, ram_mb_peak: 120, disk_read_mb: 0, disk_write_mb: 0, sample_count: 2, duration_seconds: 4 },
    });
    expect(await t.deps.engine.machines.askInput(jobId, attempt, { prompt: '¿Aprobar el pago?', options: { choices: ['aprobar', 'rechazar'] } })).toEqual({ waiting: true });
    const found: Record<string, unknown> = {};
    for (const [label, viewport] of [['1280', DESKTOP], ['390', PHONE]] as const) {
      await page.setViewportSize(viewport);
      await signIn();
      await page.goto(`${base}/console/jobs`);
      await waitForSelector(`tr[data-job="${jobId}"]`);
      found[`jobs@${label}`] = await seriousViolations();
      await shot(`jobs-${label}`);
      await page.goto(`${base}/console/jobs/${jobId}`);
      await page.getByRole('radio', { name: 'aprobar' }).waitFor();
      await waitForSelector('[data-logs]');
      found[`job@${label}`] = await seriousViolations();
      await shot(`job-${label}`);
      await page.goto(`${base}/console/machines`);
      await waitForSelector(`tr[data-machine="${w.machineName}"]`);
      found[`machines@${label}`] = await seriousViolations();
      await shot(`machines-${label}`);
      await signOut();
    }
    expect(found).toEqual({
      'jobs@1280': [], 'job@1280': [], 'machines@1280': [],
      'jobs@390': [], 'job@390': [], 'machines@390': [],
    });
  });
});
