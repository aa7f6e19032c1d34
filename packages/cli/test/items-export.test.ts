import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { createEngine, createLogger, validate } from '@svc/core';
import { directoryArchive } from '@svc/core/internals';
import { AddQueueItemBody } from '@svc/core/schemas';
import { createTestContext, seedQueue, seedTenant, type TestContext } from '@svc/testing';
import { main } from '../src/main';
import type { CliIo } from '../src/io';
import { runCli, type Run } from './cli-harness';

/**
 * `svc items export` in-process through `main` (the command table, argument parsing, the engine's
 * export), and once as the real compiled binary writing to its own standard output.
 */
jest.setTimeout(60_000);
const tmp = mkdtempSync(path.join(tmpdir(), 'svc-items-export-'));

/** What `svc items import` reads of a line (an add's body: it refuses any other field). */
const IMPORT_FIELDS = ['data', 'reference', 'priority', 'deadline', 'postpone'];


describe('svc items export', () => {
  let ctx: TestContext;
  let tenant: { id: string; name: string };
  let queue: { id: string; name: string };
  const ids: string[] = [];
  beforeAll(async () => {
    ctx = await createTestContext();
    tenant = (await seedTenant(ctx.sql)) as unknown as { id: string; name: string };
    queue = (await seedQueue(ctx.sql, tenant.id)) as { id: string; name: string };
    const rows: Array<[string, Record<string, unknown>, string | null, number, string | null]> = [
      ['new', { customer: 'ACME', n: 1 }, 'INV-1', 5, '2030-01-02T03:04:05.000Z'],
      ['completed', { customer: 'Globex', n: 2 }, 'INV-2', 3, null],
      ['new', { customer: 'ACME', n: 3 }, '+cmd', 1, null],
    ];
    for (const [i, [status, data, reference, priority, deadline]] of rows.entries()) {
      const [row] = await ctx.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, reference, priority, deadline, created_at)
        values (${tenant.id}, ${queue.id}, ${status}, ${ctx.sql.json(data as never)}, ${reference}, ${priority}, ${deadline},
                now() + ${i} * interval '1 millisecond')
        returning id`;
      ids.push(row!.id as string);
    }
  });
  afterAll(() => ctx.close());

  const svc = async (args: string[], env: Record<string, string> = {}): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const io: CliIo = {
      stdout: (text) => void (stdout += text),
      stderr: (text) => void (stderr += text),
      env: { DATABASE_URL: ctx.databaseUrl, ...env },
      readStdin: async () => '',
    };
    const code = await main(args, io);
    return { code, stdout, stderr };
  };
  const base = () => ['items', 'export', '--tenant', tenant.name, '--queue', queue.name];
  const lines = (text: string) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l));

  it('writes NDJSON to standard output by default, newest first, each line an add\'s body that import takes back', async () => {
    const r = await svc(base());
    expect([r.code, r.stderr]).toEqual([0, '']);
    const out = lines(r.stdout);
    expect(out.map((i) => i.data.n)).toEqual([3, 2, 1]);
    for (const item of out) {
      expect(Object.keys(item)).toEqual(IMPORT_FIELDS);
      // the very check import makes of each line (unknown fields refused)
      expect(validate(AddQueueItemBody, item)).toEqual(item);
    }
    expect(out[2]).toEqual({ data: { customer: 'ACME', n: 1 }, reference: 'INV-1', priority: 5, deadline: '2030-01-02T03:04:05.000Z', postpone: null });
    // NDJSON stays exact: no formula guard
    expect(out[0].reference).toBe('+cmd');
  });

  it('adds every field of the API\'s record on --all-fields', async () => {
    const out = lines((await svc([...base(), '--all-fields'])).stdout);
    expect(out.map((i) => i.id)).toEqual([...ids].reverse());
    expect(out[1]).toMatchObject({ id: ids[1], queue_id: queue.id, status: 'completed', data: { customer: 'Globex', n: 2 }, retry_count: 0 });
  });

  it('applies --status, --reference and --data as the API\'s filters do, by tenant id too', async () => {
    const all = [...base(), '--all-fields'];
    expect(lines((await svc([...all, '--status', 'completed'])).stdout).map((i) => i.id)).toEqual([ids[1]]);
    expect(lines((await svc([...all, '--reference', 'INV-1'])).stdout).map((i) => i.id)).toEqual([ids[0]]);
    expect(lines((await svc([...all, '--data', '{"customer":"ACME"}'])).stdout).map((i) => i.id)).toEqual([ids[2], ids[0]]);
    const byId = await svc(['items', 'export', '--tenant', tenant.id, '--queue', queue.name, '--data', '{"customer":"ACME"}', '--status', 'new', '--all-fields', '-']);
    expect(lines(byId.stdout).map((i) => i.id)).toEqual([ids[2], ids[0]]);
  });

  it('applies --exception-type (the kind of the last failure) with the other filters', async () => {
    const q = (await seedQueue(ctx.sql, tenant.id)) as { id: string; name: string };
    const rows: Array<[string, string, string | null]> = [
      ['failed', 'NEG-1', 'business'], ['failed', 'APP-1', 'application'], ['completed', 'OK-1', 'application'], ['new', 'NEW-1', null],
    ];
    for (const [i, [status, reference, kind]] of rows.entries()) {
      await ctx.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, reference, error_message, exception_type, created_at)
        values (${tenant.id}, ${q.id}, ${status}, '{}', ${reference}, ${kind ? 'Fallo' : null}, ${kind}, now() + ${i} * interval '1 millisecond')`;
    }
    const refs = async (...args: string[]) => {
      const r = await svc(['items', 'export', '--tenant', tenant.name, '--queue', q.name, '--all-fields', ...args]);
      expect([r.code, r.stderr]).toEqual([0, '']);
      return lines(r.stdout).map((i) => [i.reference, i.exception_type]);
    };
    expect(await refs('--exception-type', 'business')).toEqual([['NEG-1', 'business']]);
    expect(await refs('--exception-type', 'application')).toEqual([['OK-1', 'application'], ['APP-1', 'application']]);
    expect(await refs('--exception-type', 'application', '--status', 'failed')).toEqual([['APP-1', 'application']]);
    expect(await refs('--exception-type', 'business', '--reference', 'APP-1')).toEqual([]);
    // CSV: the kind is a column of every row, empty for an item that never failed
    const csv = await svc(['items', 'export', '--tenant', tenant.name, '--queue', q.name, '--format', 'csv', '--exception-type', 'business']);
    const [header, row] = csv.stdout.split('\r\n');
    const column = header!.split(',').indexOf('exception_type');
    expect(column).toBeGreaterThan(0);
    expect(row!.split(',')[column]).toBe('business');
  });

  it('writes CSV to a file: a header, data as JSON text, a formula-like text guarded', async () => {
    const file = path.join(tmp, 'items.csv');
    const r = await svc([...base(), '--format', 'csv', '--data', '{"customer":"ACME"}', file]);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    const [header, first, second, end] = readFileSync(file, 'utf8').split('\r\n');
    expect(header!.split(',').slice(0, 8)).toEqual(['id', 'queue_id', 'status', 'priority', 'reference', 'deadline', 'postpone', 'data']);
    expect(first!.startsWith(`${ids[2]},${queue.id},new,1,'+cmd,,,"{""n"":3,""customer"":""ACME""}",`)).toBe(true);
    expect(second!.startsWith(`${ids[0]},${queue.id},new,5,INV-1,2030-01-02T03:04:05.000Z,,`)).toBe(true);
    expect(end).toBe('');
  });

  it('refuses bad flags and filters with exit 2 naming the flag, unknown tenants and queues with exit 3', async () => {
    const cases: Array<[string[], number, RegExp]> = [
      [['items', 'export', '--queue', queue.name], 2, /--tenant is required/],
      [['items', 'export', '--tenant', tenant.name], 2, /--queue is required/],
      [[...base(), '--format', 'xml'], 2, /--format must be ndjson or csv/],
      [[...base(), '--status', 'done'], 2, /--status/],
      [[...base(), '--exception-type', 'negocio'], 2, /--exception-type must be business or application/],
      [[...base(), '--exception-type', 'Business'], 2, /--exception-type must be business or application/],
      [[...base(), '--exception-type'], 2, /--exception-type/],
      [[...base(), '--data', '[1]'], 2, /--data/],
      [[...base(), '--reference', 'a\u0000b'], 2, /--reference/],
      [[...base(), '--page', '2'], 2, /Unknown option '--page'/],
      [[...base(), 'a.csv', 'b.csv'], 2, /unexpected argument "b.csv"/],
      [['items', 'explode'], 2, /unknown items command "explode"/],
      [['items', 'export', '--tenant', 'no-such-tenant', '--queue', queue.name], 3, /.+/],
      [['items', 'export', '--tenant', tenant.name, '--queue', 'no-such-queue'], 3, /Cola no encontrada/],
    ];
    for (const [args, code, message] of cases) {
      const r = await svc(args);
      expect([args, r.code]).toEqual([args, code]);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  it('does not reach another tenant\'s queue of the same name', async () => {
    const other = await seedTenant(ctx.sql);
    await seedQueue(ctx.sql, other.id, { name: `${queue.name}-x` });
    const r = await svc(['items', 'export', '--tenant', tenant.name, '--queue', `${queue.name}-x`]);
    expect(r.code).toBe(3);
    const theirs = await svc(['items', 'export', '--tenant', other.name, '--queue', queue.name]);
    expect(theirs.code).toBe(3);
  });

  it('exports several chunks complete and in order through the real binary\'s standard output', async () => {
    const big = await seedQueue(ctx.sql, tenant.id);
    await ctx.sql`
      insert into queue_item_records (tenant_id, queue_id, data)
      select ${tenant.id}, ${big.id}, jsonb_build_object('i', g) from generate_series(1, 4500) g`;
    const expected = (await ctx.sql`select id from queue_items where queue_id = ${big.id} order by created_at desc, id desc`).map((r) => r.id);
    const r = await runCli({ DATABASE_URL: ctx.databaseUrl }, ['items', 'export', '--tenant', tenant.id, '--queue', big.name as string, '--all-fields']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(lines(r.stdout).map((i) => i.id)).toEqual(expected);
  });

  describe('--include-archived', () => {
    const dir = path.join(tmp, 'archive');
    let archived: { id: string; name: string };
    const kept: string[] = [];
    beforeAll(async () => {
      archived = (await seedQueue(ctx.sql, tenant.id)) as { id: string; name: string };
      await ctx.sql`update queues set retention_completed_days = ${1 / 24}, retention_action = 'archive' where id = ${archived.id}`;
      // four items ended hours ago, oldest first, then two live ones (one ended just now)
      await ctx.sql`
        insert into queue_item_records (tenant_id, queue_id, status, data, reference, updated_at, created_at)
        select ${tenant.id}, ${archived.id}, case when g <= 5 then 'completed' else 'new' end,
               jsonb_build_object('n', g, 'customer', case when g % 2 = 0 then 'ACME' else 'Globex' end), 'R' || g,
               case when g <= 4 then now() - (10 - g) * interval '1 hour' else now() end, now() - (10 - g) * interval '1 hour'
        from generate_series(1, 6) g`;
      const engine = createEngine({ sql: ctx.sql, logger: createLogger({ service: 'cli-test', level: 'error' }), recordArchive: directoryArchive(dir) });
      await engine.sweeps.retention();
      kept.push(...(await ctx.sql<Array<{ id: string }>>`select id from queue_items where queue_id = ${archived.id} order by created_at desc`).map((r) => r.id));
      expect(kept).toHaveLength(2);
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));
    const args = () => ['items', 'export', '--tenant', tenant.name, '--queue', archived.name, '--include-archived'];

    it('needs ARCHIVE_DIR: exit 2 naming it, nothing written', async () => {
      const r = await svc(args());
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/no archive is configured \(ARCHIVE_DIR or ARCHIVE_S3_BUCKET\)/);
      expect(r.stdout).toBe('');
    });

    it('writes the live items, then the archived ones in the order they ended, every line marked archived', async () => {
      const r = await svc(args(), { ARCHIVE_DIR: dir });
      expect([r.code, r.stderr]).toEqual([0, '']);
      const out = lines(r.stdout);
      expect(out.map((i) => [i.data.n, i.archived])).toEqual([[6, false], [5, false], [1, true], [2, true], [3, true], [4, true]]);
      for (const item of out) expect(Object.keys(item)).toEqual([...IMPORT_FIELDS, 'archived']);
      expect(out[2]).toEqual({ data: { n: 1, customer: 'Globex' }, reference: 'R1', priority: 3, deadline: null, postpone: null, archived: true });
      // without the flag, the archived items are not there and the lines stay re-importable
      const plain = lines((await svc(args().slice(0, -1), { ARCHIVE_DIR: dir })).stdout);
      expect(plain.map((i) => i.data.n)).toEqual([6, 5]);
      for (const item of plain) expect(Object.keys(item)).toEqual(IMPORT_FIELDS);
    });

    it('applies --status and --data to the archived items, and writes CSV with the archived column', async () => {
      const n = async (extra: string[]) => lines((await svc([...args(), '--all-fields', ...extra], { ARCHIVE_DIR: dir })).stdout).map((i) => `${i.data.n}${i.archived ? '*' : ''}`);
      expect(await n(['--status', 'completed'])).toEqual(['5', '1*', '2*', '3*', '4*']);
      expect(await n(['--status', 'new'])).toEqual(['6']);
      expect(await n(['--data', '{"customer":"ACME"}'])).toEqual(['6', '2*', '4*']);
      expect(await n(['--reference', 'R3'])).toEqual(['3*']);
      const file = path.join(tmp, 'archived.csv');
      const r = await svc([...args(), '--format', 'csv', '--data', '{"customer":"ACME"}', file], { ARCHIVE_DIR: dir });
      expect([r.code, r.stderr]).toEqual([0, '']);
      const [header, ...rows] = readFileSync(file, 'utf8').split('\r\n');
      expect(header!.endsWith(',reviewed_at,exception_type,archived')).toBe(true);
      expect(rows.filter(Boolean).map((l) => l.split(',').pop())).toEqual(['false', 'true', 'true']);
      expect(rows[0]!.startsWith(`${kept[0]},`)).toBe(true);
    });

    it('works through the real binary', async () => {
      const r = await runCli({ DATABASE_URL: ctx.databaseUrl, ARCHIVE_DIR: dir }, [...args(), '--status', 'completed']);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(lines(r.stdout).map((i) => i.archived)).toEqual([false, true, true, true, true]);
    });
  });
});
