import { seedQueue } from '@svc/testing';
import { DESKTOP, PHONE, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser } from './browser-harness';

/**
 * The queues page's retention settings (docs/decisions/retention.md) in a real browser against the
 * real API over real Postgres and Redis: an admin sets them (a decimal comma, the API's message by
 * a wrong field), edits them; a member sees no form.
 */
jest.setTimeout(180_000);

useConsoleBrowser('console-retention.test');
const nav = (name: string) => page.getByRole('navigation', { name: 'Navegación principal' }).getByRole('link', { name, exact: true });

async function axeBoth(label: string, found: Record<string, unknown>): Promise<void> {
  for (const [size, viewport] of [['1280', DESKTOP], ['390', PHONE]] as const) {
    await page.setViewportSize(viewport);
    found[`${label}@${size}`] = await seriousViolations();
  }
  await page.setViewportSize(DESKTOP);
}
const noViolations = (found: Record<string, unknown[]>) => Object.fromEntries(Object.keys(found).map((k) => [k, []]));

describe('queue retention in the console', () => {
  it('an admin sets and changes a queue\'s retention; a wrong value gets the API\'s message by its field', async () => {
    const found: Record<string, unknown[]> = {};
    await signIn();
    await nav('Colas').click();
    await page.getByRole('button', { name: 'Nueva cola' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('retencion-cobros');
    await page.getByLabel('Días que se conservan los completados').fill('-1');
    await page.getByLabel('Días que se conservan los fallidos y sin reintentos').fill('0,5');
    await page.getByLabel('Al vencer').selectOption({ label: 'Archivar y borrar' });
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.locator('#retention_completed_days-error').waitFor();
    expect(await t.sql`select 1 from queues where tenant_id = ${tenantId} and name = 'retencion-cobros'`).toHaveLength(0);
    await axeBoth('queue-retention-form', found);
    await page.getByLabel('Días que se conservan los completados').fill('7');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Cola «retencion-cobros» guardada.').waitFor();
    const [q] = await t.sql`select id, retention_completed_days, retention_failed_days, retention_action from queues where tenant_id = ${tenantId} and name = 'retencion-cobros'`;
    expect(q).toMatchObject({ retention_completed_days: 7, retention_failed_days: 0.5, retention_action: 'archive' });

    await page.getByRole('button', { name: 'Editar la cola retencion-cobros' }).click();
    expect(await page.getByLabel('Días que se conservan los completados').inputValue()).toBe('7');
    expect(await page.getByLabel('Al vencer').inputValue()).toBe('archive');
    await page.getByLabel('Al vencer').selectOption({ label: 'Borrar' });
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Cola «retencion-cobros» guardada.').waitFor();
    const [after] = await t.sql`select retention_action from queues where id = ${q!.id}`;
    expect(after!.retention_action).toBe('delete');
    const [audit] = await t.sql`select count(*)::int as n from audit_log where resource_id = ${q!.id} and details::text like '%retention_action%'`;
    expect(audit!.n).toBeGreaterThanOrEqual(1);
    await shot('queue-retention');
    expect(found).toEqual(noViolations(found));
  });

  it('an admin turns on unique references; over items that share one, the API\'s 409 is shown and nothing changes', async () => {
    await signIn();
    await nav('Colas').click();
    await page.getByRole('button', { name: 'Nueva cola' }).click();
    await page.getByLabel('Nombre', { exact: true }).fill('referencias-unicas');
    await page.getByLabel(/^Referencias únicas/).check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Cola «referencias-unicas» guardada.').waitFor();
    const [on] = await t.sql`select unique_references from queues where tenant_id = ${tenantId} and name = 'referencias-unicas'`;
    expect(on!.unique_references).toBe(true);

    const dup = await seedQueue(t.sql, tenantId, { name: 'referencias-repetidas' });
    for (let i = 0; i < 2; i++) {
      await t.sql`insert into queue_item_records (tenant_id, queue_id, reference, data) values (${tenantId}, ${dup.id as string}, 'R-1', '{}')`;
    }
    await page.reload();
    await page.getByRole('button', { name: 'Editar la cola referencias-repetidas' }).click();
    expect(await page.getByLabel(/^Referencias únicas/).isChecked()).toBe(false);
    await page.getByLabel(/^Referencias únicas/).check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('La cola ya tiene 2 elementos que comparten 1 referencia; no se pueden exigir referencias únicas').waitFor();
    const [off] = await t.sql`select unique_references from queues where id = ${dup.id as string}`;
    expect(off!.unique_references).toBe(false);
    await shot('queue-unique-references-refused');
  });

  it('a member sees the queues without the retention form', async () => {
    const found: Record<string, unknown[]> = {};
    await seedQueue(t.sql, tenantId, { name: 'retencion-miembro' });
    await signIn(memberEmail);
    await nav('Colas').click();
    await page.locator('tr[data-queue="retencion-miembro"]').waitFor();
    expect(await page.getByRole('button', { name: 'Nueva cola' }).count()).toBe(0);
    expect(await page.getByLabel('Al vencer').count()).toBe(0);
    await axeBoth('member-queues', found);
    expect(found).toEqual(noViolations(found));
  });
});
