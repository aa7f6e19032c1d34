import { seedJob, seedMachine, seedProcess, seedQueue, waitFor } from '@svc/testing';
import { base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitUntil } from './browser-harness';

/**
 * Bulk actions in the console, in a real browser against the real API: an admin picks an action
 * for everything the page's filters match, reads the count in a confirmation, then follows the
 * progress of an action that runs in the background (its chunks are run here by the engine's
 * bulk pass, what the dispatcher runs every second) and stops it half-way.
 */
jest.setTimeout(120_000);

const WAIT = 30_000;
useConsoleBrowser('bulk.test');
const stamp = () => `${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

describe('bulk actions in the console', () => {
  it('counts the dead letters a filter matches, re-drives them in the background with progress, and stops half-way', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `cobros-${stamp()}` });
    const n = 1200;
    await t.sql`
      insert into queue_item_records (tenant_id, queue_id, status, data, retry_count)
      select ${tenantId}, ${queue.id}, 'dead_letter', jsonb_build_object('n', g), 3 from generate_series(1, ${n}) g`;
    await t.sql`insert into queue_item_records (tenant_id, queue_id, status, data) values (${tenantId}, ${queue.id}, 'completed', '{}')`;

    await signIn();
    await page.goto(`${base}/console/queues/${queue.id}?status=dead_letter`);
    await page.getByRole('heading', { name: 'Acciones masivas' }).waitFor({ timeout: WAIT });
    await page.getByLabel('Acción', { exact: true }).selectOption('redrive');
    await page.getByRole('button', { name: 'Contar y aplicar…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirmar la acción masiva' });
    await dialog.getByText('se aplicará a 1200 elemento(s)').or(dialog.getByText('se aplicará a 1.200 elemento(s)')).waitFor({ timeout: WAIT });
    expect(await seriousViolations()).toEqual([]);
    await shot('bulk-confirm');
    await dialog.getByRole('button', { name: 'Aplicar' }).click();

    // more than one chunk: it runs in the background, and the page follows it
    const bar = page.getByRole('progressbar', { name: 'Progreso de la acción masiva' });
    await bar.waitFor({ timeout: WAIT });
    const [action] = await t.sql`select id, status, total from bulk_actions where queue_id = ${queue.id}`;
    expect(action).toMatchObject({ status: 'pending', total: n });
    expect(await t.deps.engine.bulk.run({ budgetMs: 0 })).toBe(1);
    await waitUntil(`document.querySelector('[aria-label="Progreso de la acción masiva"]')?.value === 500`, WAIT);
    await shot('bulk-progress');

    await page.getByRole('button', { name: 'Detener la acción' }).click();
    await waitFor('the cancel to reach the API', async () => {
      const [asked] = await t.sql`select cancel_requested from bulk_actions where id = ${action!.id}`;
      return asked!.cancel_requested;
    }, WAIT);
    await t.deps.engine.bulk.run();
    await page.getByText('Acción masiva detenida: 500 cambiado(s) antes de detenerla.').waitFor({ timeout: WAIT });
    const counts = await t.sql`select status, count(*)::int as n from queue_items where queue_id = ${queue.id} group by status order by status`;
    expect(counts.map((r) => [r.status, r.n])).toEqual([['completed', 1], ['dead_letter', n - 500], ['new', 500]]);
  });

  it('retries business failures only when the admin ticks the box, offered when the filter can match them', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `negocio-${stamp()}` });
    const item = (status: string, reference: string, kind: string | null, retries: number) => t.sql`
      insert into queue_item_records (tenant_id, queue_id, status, data, reference, retry_count, error_message, exception_type)
      values (${tenantId}, ${queue.id}, ${status}, '{}', ${reference}, ${retries}, 'Fallo', ${kind})`;
    await item('failed', 'NEG-1', 'business', 1);
    await item('failed', 'NEG-2', 'business', 0);
    await item('failed', 'APP-1', 'application', 1);
    await item('dead_letter', 'DL-1', 'application', 3);

    await signIn();
    // dead letters only: no business failure can match, nothing to offer
    await page.goto(`${base}/console/queues/${queue.id}?status=dead_letter`);
    await page.getByRole('heading', { name: 'Acciones masivas' }).waitFor({ timeout: WAIT });
    await page.getByLabel('Acción', { exact: true }).selectOption('retry');
    const box = page.getByRole('checkbox', { name: 'Reintentar también las excepciones de negocio' });
    expect(await box.count()).toBe(0);

    // every item: offered, off; without it only the dead letter is retried
    await page.goto(`${base}/console/queues/${queue.id}`);
    await page.getByLabel('Acción', { exact: true }).selectOption('retry');
    await box.waitFor({ timeout: WAIT });
    expect(await box.isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Contar y aplicar…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirmar la acción masiva' });
    await dialog.getByText('Reintentar dead letter una vez más: se aplicará a 1 elemento(s) que coinciden ahora con los filtros.', { exact: true }).waitFor({ timeout: WAIT });
    await dialog.getByRole('button', { name: 'Cancelar' }).click();

    // the business failures only (the filter in the address): the box is needed, and ticked they are retried too
    await page.goto(`${base}/console/queues/${queue.id}?exception_type=business`);
    await page.getByLabel('Acción', { exact: true }).selectOption('retry');
    await page.getByText('El filtro solo incluye excepciones de negocio: marque la casilla para reintentarlas.').waitFor({ timeout: WAIT });
    await box.check();
    expect(await seriousViolations()).toEqual([]);
    await page.getByRole('button', { name: 'Contar y aplicar…' }).click();
    await dialog.getByText('Reintentar dead letter una vez más: se aplicará a 2 elemento(s) que coinciden ahora con los filtros. Incluye las excepciones de negocio.')
      .waitFor({ timeout: WAIT });
    await shot('bulk-include-business');
    await dialog.getByRole('button', { name: 'Aplicar' }).click();
    await page.getByText('Acción masiva terminada: 2 cambiado(s).').waitFor({ timeout: WAIT });
    const rows = await t.sql`select reference, status, retry_count from queue_items where queue_id = ${queue.id} order by reference`;
    expect(rows.map((r) => [r.reference, r.status, r.retry_count])).toEqual([
      ['APP-1', 'failed', 1], ['DL-1', 'dead_letter', 3], ['NEG-1', 'new', 1], ['NEG-2', 'new', 0],
    ]);
    const [action] = await t.sql`select params from bulk_actions where queue_id = ${queue.id}`;
    expect(action!.params).toEqual({ include_business: true });
  });

  it('stops every pending job of a process from the jobs page, the count first', async () => {
    const process = await seedProcess(t.sql, tenantId, { name: `conciliacion-${stamp()}` });
    const { row: machine } = await seedMachine(t.sql, tenantId, { name: `robot-${stamp()}` });
    for (let i = 0; i < 3; i++) await seedJob(t.sql, tenantId, { process_id: process.id, machine_id: machine.id });
    await seedJob(t.sql, tenantId, { process_id: process.id, machine_id: machine.id, status: 'completed' });

    await signIn();
    await page.goto(`${base}/console/jobs?process_id=${process.id}`);
    await page.getByLabel('Acción', { exact: true }).selectOption('stop');
    await page.getByRole('button', { name: 'Contar y aplicar…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirmar la acción masiva' });
    await dialog.getByText('Detener los activos: se aplicará a 3 trabajo(s) que coinciden ahora con los filtros.').waitFor({ timeout: WAIT });
    await dialog.getByRole('button', { name: 'Aplicar' }).click();
    await page.getByText('Acción masiva terminada: 3 cambiado(s).').waitFor({ timeout: WAIT });
    const rows = await t.sql`select status, count(*)::int as n from jobs where process_id = ${process.id} group by status order by status`;
    expect(rows.map((r) => [r.status, r.n])).toEqual([['completed', 1], ['stopped', 3]]);
  });

  it('shows no bulk actions to a member', async () => {
    const queue = await seedQueue(t.sql, tenantId, { name: `solo-lectura-${stamp()}` });
    await signIn(memberEmail);
    await page.goto(`${base}/console/queues/${queue.id}`);
    await page.getByRole('heading', { name: `Cola ${queue.name}` }).waitFor({ timeout: WAIT });
    await page.getByRole('heading', { name: 'Elementos' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Acciones masivas' }).count()).toBe(0);
  });
});
