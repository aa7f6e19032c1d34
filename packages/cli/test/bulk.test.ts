import { BULK_ACTION_CHUNK } from '@svc/core/schemas';
import { seedJob, seedMachine, seedProcess, seedQueue, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { runCli, type Run } from './cli-harness';

/** `svc bulk` (the real compiled CLI) against this file's own database. */
jest.setTimeout(60_000);
let t: ApiTestContext;
let baseEnv: Record<string, string>;
let tenant: { id: string; name: string };

const svc = (args: string[]): Promise<Run> => runCli(baseEnv, args);

beforeAll(async () => {
  t = await createApiTestContext();
  baseEnv = { ...t.childEnv };
  tenant = (await seedTenant(t.sql)) as { id: string; name: string };
});
afterAll(() => t.close());

async function deadItems(queueId: string, n: number, data: (i: number) => Record<string, unknown> = (i) => ({ n: i })) {
  const rows = Array.from({ length: n }, (_, i) => ({ tenant_id: tenant.id, queue_id: queueId, status: 'dead_letter', data: t.sql.json(data(i) as never) }));
  for (let i = 0; i < rows.length; i += 1000) await t.sql`insert into queue_item_records ${t.sql(rows.slice(i, i + 1000) as never)}`;
}

async function counts(queueId: string) {
  const rows = await t.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('svc bulk items', () => {
  it('counts with --dry-run, then re-drives every match chunk by chunk, printing progress', async () => {
    const q = await seedQueue(t.sql, tenant.id);
    const n = BULK_ACTION_CHUNK + 30;
    await deadItems(q.id, n, (i) => ({ customer: i % 2 ? 'ACME' : 'Other' }));
    const filter = ['--tenant', tenant.name, '--queue', q.name, '--action', 'redrive', '--data', '{"customer":"ACME"}'];
    const dry = await svc(['bulk', 'items', ...filter, '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    const matching = Math.floor(n / 2);
    expect(JSON.parse(dry.stdout)).toEqual({ dry_run: true, total: matching });

    const all = await svc(['bulk', 'items', '--tenant', tenant.name, '--queue', q.name, '--action', 'redrive']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^Bulk action [0-9a-f-]{36}: completed/);
    expect(all.stdout).toMatch(new RegExp(`changed\\s+${n}`));
    // one progress line per chunk on stderr
    expect(all.stderr.trim().split('\n')).toEqual([`${BULK_ACTION_CHUNK}/${n}`, `${n}/${n}`]);
    expect(await counts(q.id)).toEqual({ new: n });
    const [audit] = await t.sql`select actor_type, source, details from audit_log where tenant_id = ${tenant.id} and action = 'bulk_queue_items' order by created_at desc limit 1`;
    expect(audit).toMatchObject({ actor_type: 'system', source: 'cli', details: { action: 'redrive', total: n } });
  });

  it('--background leaves the action to the dispatcher; show and cancel find it', async () => {
    const q = await seedQueue(t.sql, tenant.id);
    await deadItems(q.id, 3);
    const r = await svc(['bulk', 'items', '--tenant', tenant.name, '--queue', q.name, '--action', 'delete', '--background', '--json']);
    expect(r.code).toBe(0);
    const action = JSON.parse(r.stdout);
    expect(action).toMatchObject({ status: 'pending', total: 3, done: 0 });
    const shown = await svc(['bulk', 'show', '--tenant', tenant.name, action.id, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: action.id, status: 'pending' });
    const cancelled = await svc(['bulk', 'cancel', '--tenant', tenant.name, action.id, '--json']);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ status: 'cancelled', cancel_requested: true });
    const again = await svc(['bulk', 'cancel', '--tenant', tenant.name, action.id]);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('La acción masiva ya ha finalizado (estado: cancelled)');
    expect(await counts(q.id)).toEqual({ dead_letter: 3 });
  });

  it('names the wrong flag and exits 2 on bad input; an unknown queue exits 3', async () => {
    const q = await seedQueue(t.sql, tenant.id);
    const base = ['bulk', 'items', '--tenant', tenant.name, '--queue', q.name];
    const noPriority = await svc([...base, '--action', 'set_priority']);
    expect(noPriority.code).toBe(2);
    expect(noPriority.stderr).toContain('--priority: obligatorio para la acción set_priority');
    const badStatus = await svc([...base, '--action', 'delete', '--status', 'gone']);
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain('--status');
    const badData = await svc([...base, '--action', 'delete', '--data', '{nope']);
    expect(badData.code).toBe(2);
    expect(badData.stderr).toContain('--data must be a JSON object');
    const both = await svc([...base, '--action', 'delete', '--status', 'new', '--ids', '00000000-0000-4000-8000-000000000000']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('no ambos');
    const nul = await svc([...base, '--action', 'delete', '--reference', 'a\u0001b', '--data', '{"k":"\\u0000"}']);
    expect(nul.code).toBe(2);
    const unknown = await svc(['bulk', 'items', '--tenant', tenant.name, '--queue', 'no-such-queue', '--action', 'delete']);
    expect(unknown.code).toBe(3);
    const [n] = await t.sql`select count(*)::int as n from bulk_actions where queue_id = ${q.id}`;
    expect(n!.n).toBe(0);
  });
});

describe('svc bulk items: business exceptions', () => {
  async function failures(queueId: string) {
    const rows: Array<[string, string, string, number]> = [
      ['failed', 'NEG-1', 'business', 1], ['failed', 'NEG-2', 'business', 0], ['failed', 'APP-1', 'application', 1], ['dead_letter', 'DL-1', 'application', 3],
    ];
    for (const [status, reference, kind, retries] of rows) {
      await t.sql`insert into queue_item_records (tenant_id, queue_id, status, data, reference, retry_count, error_message, exception_type)
                  values (${tenant.id}, ${queueId}, ${status}, '{}', ${reference}, ${retries}, 'Fallo', ${kind})`;
    }
  }
  const items = async (queueId: string) =>
    (await t.sql`select reference, status, retry_count from queue_items where queue_id = ${queueId} order by reference`).map((r) => [r.reference, r.status, r.retry_count]);

  it('retries business failures only with --include-business, keeping their retry_count; --exception-type filters', async () => {
    const q = await seedQueue(t.sql, tenant.id);
    await failures(q.id);
    const base = ['bulk', 'items', '--tenant', tenant.name, '--queue', q.name, '--action', 'retry', '--json'];
    expect(JSON.parse((await svc([...base, '--dry-run'])).stdout)).toEqual({ dry_run: true, total: 1 });
    expect(JSON.parse((await svc([...base, '--dry-run', '--include-business'])).stdout)).toEqual({ dry_run: true, total: 3 });
    expect(JSON.parse((await svc([...base, '--dry-run', '--exception-type', 'application'])).stdout)).toEqual({ dry_run: true, total: 1 });

    const r = await svc([...base, '--exception-type', 'business', '--include-business']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', total: 2, changed: 2, filter: { exception_type: 'business' } });
    expect(await items(q.id)).toEqual([['APP-1', 'failed', 1], ['DL-1', 'dead_letter', 3], ['NEG-1', 'new', 1], ['NEG-2', 'new', 0]]);
    const [action] = await t.sql`select params from bulk_actions where queue_id = ${q.id}`;
    expect(action!.params).toEqual({ include_business: true });
  });

  it('refuses a bad kind, a retry of business failures without --include-business, and --include-business on another action (exit 2)', async () => {
    const q = await seedQueue(t.sql, tenant.id);
    await failures(q.id);
    const base = ['bulk', 'items', '--tenant', tenant.name, '--queue', q.name];
    const cases: Array<[string[], RegExp]> = [
      [[...base, '--action', 'retry', '--exception-type', 'negocio'], /--exception-type must be business or application/],
      [[...base, '--action', 'delete', '--exception-type', 'APPLICATION'], /--exception-type must be business or application/],
      [[...base, '--action', 'retry', '--exception-type', 'business'], /--exception-type business needs --include-business/],
      [[...base, '--action', 'delete', '--include-business'], /--include-business: no se admite con la acción delete/],
      [['bulk', 'jobs', '--tenant', tenant.name, '--action', 'retry', '--exception-type', 'business'], /--exception-type filters items only/],
    ];
    for (const [args, message] of cases) {
      const r = await svc(args);
      expect([args, r.code]).toEqual([args, 2]);
      expect(r.stderr).toMatch(message);
    }
    expect(await items(q.id)).toEqual([['APP-1', 'failed', 1], ['DL-1', 'dead_letter', 3], ['NEG-1', 'failed', 1], ['NEG-2', 'failed', 0]]);
    const [n] = await t.sql`select count(*)::int as n from bulk_actions where queue_id = ${q.id}`;
    expect(n!.n).toBe(0);
  });
});

describe('svc bulk jobs', () => {
  it('retries jobs that failed with a business exception only with --include-business', async () => {
    const p = await seedProcess(t.sql, tenant.id);
    const m = (await seedMachine(t.sql, tenant.id)).row;
    const business = await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed' });
    await t.sql`update jobs set exception_type = 'business', error_message = 'Factura duplicada' where id = ${business.id}`;
    const application = await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed' });
    const args = ['bulk', 'jobs', '--tenant', tenant.name, '--action', 'retry', '--process', p.name, '--json'];
    const r = await svc(args);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', total: 1, changed: 1 });
    const parents = async () => (await t.sql`select parent_job_id from jobs where process_id = ${p.id} and source = 'retry'`).map((j) => j.parent_job_id).sort();
    expect(await parents()).toEqual([application.id]);
    const again = await svc([...args, '--include-business']);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'completed', total: 1, changed: 1 });
    expect(await parents()).toEqual([application.id, business.id].sort());
    const stop = await svc(['bulk', 'jobs', '--tenant', tenant.name, '--action', 'stop', '--include-business']);
    expect(stop.code).toBe(2);
    expect(stop.stderr).toContain('--include-business');
  });


  it('retries the failed jobs of a process named by name, once', async () => {
    const p = await seedProcess(t.sql, tenant.id);
    const m = (await seedMachine(t.sql, tenant.id)).row;
    await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: m.id, status: 'failed' });
    await seedJob(t.sql, tenant.id, { process_id: p.id, machine_id: m.id, status: 'completed' });
    const args = ['bulk', 'jobs', '--tenant', tenant.name, '--action', 'retry', '--process', p.name, '--json'];
    const r = await svc(args);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ target: 'jobs', status: 'completed', total: 1, changed: 1 });
    const again = await svc(args);
    expect(JSON.parse(again.stdout)).toMatchObject({ total: 0, changed: 0 });
    const [retries] = await t.sql`select count(*)::int as n from jobs where process_id = ${p.id} and source = 'retry'`;
    expect(retries!.n).toBe(1);
    const unknown = await svc(['bulk', 'jobs', '--tenant', tenant.name, '--action', 'stop', '--process', 'no-such-process']);
    expect(unknown.code).toBe(3);
  });
});
