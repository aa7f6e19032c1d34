import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { seedApiKey, seedJob, seedMachine, seedProcess, seedQueue, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { QUEUE_ITEM_FIELDS, itemsPath, queueWorld, type QueueWorld } from './queue-items-support';
import { bearer } from './settings-fixtures';

/**
 * The streaming exports (docs/decisions/export.md): a queue's items (public and settings), the
 * jobs and the audit log, as NDJSON and CSV, through the real API over this file's own Postgres.
 */
jest.setTimeout(60_000);

interface Download {
  status: number;
  headers: Record<string, string>;
  text: string;
}

describe('exports', () => {
  let t: ApiTestContext;
  let w: QueueWorld;
  let admin: string;
  let member: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await queueWorld(t);
    admin = (await seedUser(t.sql, w.tenantId, { role: 'admin' })).token;
    member = (await seedUser(t.sql, w.tenantId, { role: 'member' })).token;
  });
  afterAll(() => t.close());

  /** GET `path`, the body kept as text whatever its type (supertest buffers only types it knows). */
  const download = async (path: string, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Download> => {
    const res = await t.http.get(path).query(query).set(headers).buffer(true).parse((r, done) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => done(null, text));
    });
    return { status: res.status, headers: res.headers as Record<string, string>, text: res.body as string };
  };
  const ndjson = (d: Download) => d.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  const errorOf = (d: Download) => JSON.parse(d.text) as { success: false; error: { code: string; message: string; details?: Array<{ field: string; message: string }> } };
  const exportPath = (name: string) => `${itemsPath(name)}/export`;
  // an export route allows few requests a minute per credential: most requests take a fresh one
  const fresh = async (role: 'admin' | 'member', tenantId = w.tenantId) => bearer((await seedUser(t.sql, tenantId, { role })).token);
  const key = (headers = {}) => w.key(['queues:read']).then((k) => ({ 'X-API-Key': k, ...headers }));

  describe('queue items', () => {
    let q: { id: string; name: string };
    const ids: Record<string, string> = {};
    beforeAll(async () => {
      q = (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
      const writer = await w.key(['queues:write']);
      const adds: Array<[string, Record<string, unknown>]> = [
        ['a', { data: { customer: 'ACME', n: 1 }, reference: 'INV-1', priority: 5 }],
        ['b', { data: { customer: 'Globex', n: 2 }, reference: '=HYPERLINK("http://x")' }],
        ['c', { data: { customer: 'ACME', n: 3, note: 'comma, "quote"\nnewline' }, reference: 'INV-1', deadline: '2030-01-02T03:04:05.000Z' }],
        ['d', { data: { customer: 'Initech', nested: { deep: [1, 2] } }, postpone: '2031-05-06T07:08:09.000Z' }],
      ];
      for (const [name, body] of adds) {
        const res = await t.http.post(itemsPath(q.name)).set('X-API-Key', writer).send(body);
        expect(res.status).toBe(200);
        ids[name] = res.body.data.id;
      }
      await t.sql`update queue_items set status = 'completed', result = ${t.sql.json({ ok: true })}, processed_at = now() where id = ${ids.c!}`;
    });

    it('streams every item as NDJSON by default, newest first, each the QueueItemResponse', async () => {
      const res = await download(exportPath(q.name), {}, await key());
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      expect(res.headers['content-disposition']).toBe(`attachment; filename="items-${q.name}.ndjson"`);
      const rows = ndjson(res);
      expect(rows.map((r) => r.id)).toEqual([ids.d, ids.c, ids.b, ids.a]);
      for (const r of rows) expect(Object.keys(r)).toEqual(QUEUE_ITEM_FIELDS);
      // the very records the list answers
      const list = await t.http.get(itemsPath(q.name)).set(await key());
      expect(rows).toEqual(list.body.data);
      expect(rows[1]).toMatchObject({ status: 'completed', result: { ok: true }, deadline: '2030-01-02T03:04:05.000Z', reference: 'INV-1' });
    });

    it('applies the list\'s filters: status, reference and data containment, alone and together', async () => {
      const k = await key();
      const idsOf = async (query: Record<string, string>) => ndjson(await download(exportPath(q.name), query, k)).map((r) => r.id);
      expect(await idsOf({ status: 'completed' })).toEqual([ids.c]);
      expect(await idsOf({ status: 'new' })).toEqual([ids.d, ids.b, ids.a]);
      expect(await idsOf({ reference: 'INV-1' })).toEqual([ids.c, ids.a]);
      expect(await idsOf({ data: JSON.stringify({ customer: 'ACME' }) })).toEqual([ids.c, ids.a]);
      expect(await idsOf({ data: JSON.stringify({ nested: { deep: [2] } }) })).toEqual([ids.d]);
      expect(await idsOf({ data: JSON.stringify({ customer: 'ACME' }), status: 'new', reference: 'INV-1' })).toEqual([ids.a]);
      expect(await idsOf({ reference: 'INV-404' })).toEqual([]);
    });

    it('writes CSV on ?format=csv: a header of the fields, objects as JSON text, null empty, formulas neutralised', async () => {
      const res = await download(exportPath(q.name), { format: 'csv', data: JSON.stringify({ customer: 'Globex' }) }, await key());
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toBe(`attachment; filename="items-${q.name}.csv"`);
      const [header, row, end] = res.text.split('\r\n');
      expect(header).toBe(QUEUE_ITEM_FIELDS.join(','));
      expect(end).toBe('');
      const item = (await t.sql`select created_at from queue_items where id = ${ids.b!}`)[0]!;
      expect(row).toBe([
        ids.b, q.id, 'new', '3', `"'=HYPERLINK(""http://x"")"`, '', '', '"{""n"":2,""customer"":""Globex""}"', '', '0', '', '',
        (item.created_at as Date).toISOString(), '', '', '', '',
      ].join(','));
    });

    it('quotes commas, quotes and newlines inside a cell', async () => {
      const res = await download(exportPath(q.name), { format: 'csv', status: 'completed' }, await key());
      // jsonb orders keys by length, then bytes
      expect(res.text).toContain('"{""n"":3,""note"":""comma, \\""quote\\""\\nnewline"",""customer"":""ACME""}"');
      expect(res.text).toContain(',"{""ok"":true}",');
    });

    it('takes the format from Accept when ?format is absent, and ?format wins over Accept', async () => {
      const csv = await download(exportPath(q.name), {}, await key({ Accept: 'text/csv' }));
      expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(csv.text.startsWith('id,queue_id,status,')).toBe(true);
      const both = await download(exportPath(q.name), { format: 'ndjson' }, await key({ Accept: 'text/csv' }));
      expect(both.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
      expect(ndjson(both)).toHaveLength(4);
      // what generic clients send with every request falls back to NDJSON instead of a refusal
      const json = await download(exportPath(q.name), {}, await key({ Accept: 'application/json' }));
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    });

    it('exports an empty selection as an empty NDJSON body, or a CSV header alone', async () => {
      const empty = (await seedQueue(t.sql, w.tenantId)) as { name: string };
      const nd = await download(exportPath(empty.name), {}, await key());
      expect([nd.status, nd.text]).toEqual([200, '']);
      const csv = await download(exportPath(empty.name), { format: 'csv' }, await key());
      expect([csv.status, csv.text]).toEqual([200, `${QUEUE_ITEM_FIELDS.join(',')}\r\n`]);
    });

    it('serves the settings twin by queue id for any member, alike', async () => {
      const pub = await download(exportPath(q.name), { reference: 'INV-1', format: 'csv' }, await key());
      const twin = await download(`/api/v1/settings/queues/${q.id}/items/export`, { reference: 'INV-1', format: 'csv' }, await fresh('member'));
      expect(twin.status).toBe(200);
      expect(twin.text).toBe(pub.text);
      expect(twin.headers['content-disposition']).toBe(pub.headers['content-disposition']);
    });

    describe('hostile input', () => {
      it('refuses a format that is neither csv nor ndjson with a 422 naming it', async () => {
        for (const format of ['xml', 'CSV', '']) {
          const res = await download(exportPath(q.name), { format }, await key());
          expect(res.status).toBe(422);
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          const body = errorOf(res);
          expect(body.error.code).toBe('VALIDATION_ERROR');
          expect(body.error.details![0]!.field).toBe('query → format');
        }
      });

      it('refuses bad filters, unknown and paging parameters with a 422 in Spanish', async () => {
        const cases: Array<[Record<string, string>, string]> = [
          [{ status: 'done' }, 'query → status'],
          [{ data: '[1]' }, 'query → data'],
          [{ data: '{"a":' }, 'query → data'],
          [{ data: `{"a":${'['.repeat(200)}${']'.repeat(200)}}` }, 'query → data'],
          [{ reference: 'x'.repeat(256) }, 'query → reference'],
          [{ page: '2' }, 'query → page'],
          [{ reference: 'a\u0000b' }, 'query → reference'],
        ];
        for (const [query, field] of cases) {
          const res = await download(exportPath(q.name), query, await key());
          expect(res.status).toBe(422);
          const body = errorOf(res);
          expect(body.error.code).toBe('VALIDATION_ERROR');
          expect(body.error.details!.some((d) => d.field.startsWith(field))).toBe(true);
          expect(body.error.message).toMatch(/[áéíóúñ]|inválid|datos/i);
        }
      });

      it('answers another workspace\'s queue, an inactive one and a NUL in the name as missing (404)', async () => {
        for (const name of [w.otherQueue.name, w.inactiveQueue.name, 'nope\u0000']) {
          const res = await download(exportPath(name), {}, await key());
          expect(res.status).toBe(404);
          expect(errorOf(res).error.code).toBe('NOT_FOUND');
        }
        const twin = await download(`/api/v1/settings/queues/${w.otherQueue.id}/items/export`, {}, await fresh('member'));
        expect(twin.status).toBe(404);
        const otherSide = await download(`/api/v1/settings/queues/${q.id}/items/export`, {}, await fresh('admin', w.otherTenantId));
        expect(otherSide.status).toBe(404);
      });

      it('checks the key and its scope as the list does: 401 without or with a revoked key, 403 without queues:read', async () => {
        expect((await download(exportPath(q.name))).status).toBe(401);
        const revoked = await seedApiKey(t.sql, w.tenantId, { is_active: false });
        const r401 = await download(exportPath(q.name), {}, { 'X-API-Key': revoked.key });
        expect(r401.status).toBe(401);
        expect(errorOf(r401).error.message).toBe('Credenciales inválidas');
        const r403 = await download(exportPath(q.name), {}, { 'X-API-Key': await w.key(['queues:write']) });
        expect(r403.status).toBe(403);
        expect(errorOf(r403).error.code).toBe('FORBIDDEN');
        expect((await download(`/api/v1/settings/queues/${q.id}/items/export`)).status).toBe(401);
      });
    });

    it('allows 10 exports a minute per key, then answers 429 in the envelope', async () => {
      const k = await key();
      const small = (await seedQueue(t.sql, w.tenantId)) as { name: string };
      for (let i = 0; i < 10; i++) expect((await download(exportPath(small.name), {}, k)).status).toBe(200);
      const refused = await download(exportPath(small.name), {}, k);
      expect(refused.status).toBe(429);
      expect(refused.headers['x-ratelimit-limit']).toBe('10');
      expect(errorOf(refused).error.code).toBe('RATE_LIMIT_EXCEEDED');
    });

    it('streams 20,000 items complete and in order, ties of created_at broken by id', async () => {
      const big = (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
      // one statement: every row shares one created_at, so the chunks' keyset must break ties by id
      await t.sql`
        insert into queue_item_records (tenant_id, queue_id, data, reference)
        select ${w.tenantId}, ${big.id}, jsonb_build_object('i', g), 'R' || (g % 7)
        from generate_series(1, 20000) g`;
      await t.sql`
        insert into queue_item_records (tenant_id, queue_id, data, created_at)
        select ${w.tenantId}, ${big.id}, jsonb_build_object('i', 20000 + g), now() + g * interval '1 microsecond'
        from generate_series(1, 2500) g`;
      const expected = (await t.sql<Array<{ id: string }>>`
        select id from queue_items where queue_id = ${big.id} order by created_at desc, id desc`).map((r) => r.id);
      expect(expected).toHaveLength(22_500);
      const res = await download(exportPath(big.name), {}, await key());
      expect(res.status).toBe(200);
      expect(ndjson(res).map((r) => r.id)).toEqual(expected);
      const csv = await download(exportPath(big.name), { format: 'csv', reference: 'R3' }, await key());
      const lines = csv.text.split('\r\n').filter(Boolean);
      expect(lines).toHaveLength(1 + (await t.sql`select count(*)::int as n from queue_items where queue_id = ${big.id} and reference = 'R3'`)[0]!.n);
    });
  });

  it('cuts the transfer short when a read fails once the download has begun: the client never sees a clean end', async () => {
    const big = (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
    // far more than the sockets' buffers hold, so the reads are still going when one fails
    // the items and their payloads in one statement (the view takes a row at a time)
    await t.sql`
      with src as materialized (select gen_random_uuid() as id, g from generate_series(1, 60000) g),
      ins as (insert into queue_items (id, tenant_id, queue_id) select id, ${w.tenantId}, ${big.id} from src)
      insert into queue_item_payloads (id, queue_id, data) select id, ${big.id}, jsonb_build_object('i', g, 'pad', repeat('x', 1000)) from src`;
    const server: Server = createServer(t.app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const k = await w.key(['queues:read']);
    try {
      const outcome = await new Promise<{ ended: boolean; failed: boolean; bytes: number; status: number }>((resolve, reject) => {
        const req = get({
          host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: exportPath(big.name), headers: { 'X-API-Key': k },
        }, (res) => {
          let bytes = 0;
          let broken = false;
          res.once('data', (first: Buffer) => {
            bytes += first.length;
            res.pause();
            // every later chunk's statement now fails (the test's own database)
            t.sql`alter table queue_items rename column reviewed_at to reviewed_at_gone`.then(() => {
              broken = true;
              res.on('data', (c: Buffer) => (bytes += c.length));
              res.resume();
            }, reject);
          });
          res.on('end', () => resolve({ ended: true, failed: false, bytes, status: res.statusCode! }));
          res.on('error', () => resolve({ ended: false, failed: broken, bytes, status: res.statusCode! }));
          res.on('aborted', () => resolve({ ended: false, failed: broken, bytes, status: res.statusCode! }));
        });
        req.on('error', reject);
      });
      expect(outcome).toMatchObject({ status: 200, ended: false, failed: true });
      expect(outcome.bytes).toBeGreaterThan(0);
      expect(outcome.bytes).toBeLessThan(60_000 * 1000);
    } finally {
      await t.sql`alter table queue_items rename column reviewed_at_gone to reviewed_at`.catch(() => undefined);
      await new Promise((resolve) => server.close(resolve));
    }
    // the API answers exports again once its reads do
    const again = await download(exportPath(w.queue.name), {}, await key());
    expect(again.status).toBe(200);
  });

  describe('jobs', () => {
    let process: { id: string };
    let machine: { id: string };
    const jobIds: string[] = [];
    beforeAll(async () => {
      process = (await seedProcess(t.sql, w.tenantId)) as { id: string };
      machine = (await seedMachine(t.sql, w.tenantId)).row as { id: string };
      for (const [i, status] of ['pending', 'completed', 'failed', 'completed'].entries()) {
        const job = await seedJob(t.sql, w.tenantId, { process_id: process.id, machine_id: machine.id, status, input_data: { i, region: i % 2 ? 'eu' : 'us' } });
        jobIds.push(job.id as string);
      }
      await t.sql`update jobs set logs = 'a long log line' where tenant_id = ${w.tenantId}`;
      const otherProcess = await seedProcess(t.sql, w.otherTenantId);
      const otherMachine = (await seedMachine(t.sql, w.otherTenantId)).row;
      await seedJob(t.sql, w.otherTenantId, { process_id: otherProcess.id, machine_id: otherMachine.id });
    });
    const jobsExport = async (query: Record<string, string> = {}, tenantId = w.tenantId) =>
      download('/api/v1/settings/jobs/export', query, await fresh('member', tenantId));

    it('streams the workspace\'s jobs newest first, each the list\'s JobResponse without its log', async () => {
      const res = await jobsExport();
      expect(res.status).toBe(200);
      expect(res.headers['content-disposition']).toBe('attachment; filename="jobs.ndjson"');
      const rows = ndjson(res);
      const list = await t.http.get('/api/v1/settings/jobs').set(bearer(member));
      expect(rows.map((r) => r.id)).toEqual([...jobIds].reverse());
      expect(rows).toEqual(list.body.data.map(({ logs: _logs, ...job }: Record<string, unknown>) => job));
      expect(rows[0]).not.toHaveProperty('logs');
    });

    it('applies status, process_id, machine_id and input_data, and writes CSV', async () => {
      expect(ndjson(await jobsExport({ status: 'completed' })).map((r) => r.id)).toEqual([jobIds[3], jobIds[1]]);
      expect(ndjson(await jobsExport({ input_data: '{"region":"eu"}' })).map((r) => r.id)).toEqual([jobIds[3], jobIds[1]]);
      expect(ndjson(await jobsExport({ process_id: process.id, machine_id: machine.id, status: 'failed' })).map((r) => r.id)).toEqual([jobIds[2]]);
      const csv = await jobsExport({ format: 'csv', status: 'pending' });
      const [header, row] = csv.text.split('\r\n');
      expect(header!.split(',').slice(0, 8)).toEqual(['id', 'tenant_id', 'process_id', 'machine_id', 'status', 'priority', 'input_data', 'output_data']);
      expect(header).not.toContain('logs,');
      expect(row!.startsWith(`${jobIds[0]},${w.tenantId},${process.id},${machine.id},pending,3,"{""i"":0,""region"":""us""}",,`)).toBe(true);
    });

    it('refuses another workspace\'s process, a bad status, a bad format; needs a signed-in user', async () => {
      const otherProcess = await seedProcess(t.sql, w.otherTenantId);
      const cases: Array<[Record<string, string>, string]> = [
        [{ process_id: otherProcess.id as string }, 'query → process_id'],
        [{ process_id: 'not-a-uuid' }, 'query → process_id'],
        [{ status: 'nope' }, 'query → status'],
        [{ format: 'xlsx' }, 'query → format'],
        [{ input_data: 'null' }, 'query → input_data'],
        [{ limit: '5' }, 'query → limit'],
      ];
      for (const [query, field] of cases) {
        const res = await jobsExport(query);
        expect(res.status).toBe(422);
        expect(errorOf(res).error.details!.map((d) => d.field)).toContain(field);
      }
      expect((await download('/api/v1/settings/jobs/export')).status).toBe(401);
      const other = ndjson(await jobsExport({}, w.otherTenantId));
      expect(other).toHaveLength(1);
      expect(other.map((r) => r.id)).not.toContain(jobIds[0]);
    });
  });

  describe('audit log', () => {
    it('streams the entries the list shows, for admins only, with its filters', async () => {
      // entries of this workspace: a key created and revoked through the API
      const created = await t.http.post('/api/v1/settings/api-keys').set(bearer(admin)).send({ name: 'export-audit', scopes: ['queues:read'] });
      expect(created.status).toBeLessThan(300);
      const res = await download('/api/v1/settings/audit-log/export', {}, await fresh('admin'));
      expect(res.status).toBe(200);
      expect(res.headers['content-disposition']).toBe('attachment; filename="audit-log.ndjson"');
      const list = await t.http.get('/api/v1/settings/audit-log').query({ limit: 100 }).set(bearer(admin));
      expect(ndjson(res)).toEqual(list.body.data);
      expect(list.body.data.length).toBeGreaterThan(0);
      const action = list.body.data[0].action as string;
      const filtered = ndjson(await download('/api/v1/settings/audit-log/export', { action }, await fresh('admin')));
      expect(filtered.length).toBeGreaterThan(0);
      expect(filtered.every((e) => e.action === action)).toBe(true);
      const csv = await download('/api/v1/settings/audit-log/export', { format: 'csv' }, await fresh('admin'));
      expect(csv.text.split('\r\n')[0]).toBe('id,created_at,action,actor_type,actor_id,source,resource_type,resource_id,details,request_id,ip');
      // another workspace sees none of it
      const theirs = ndjson(await download('/api/v1/settings/audit-log/export', {}, await fresh('admin', w.otherTenantId)));
      expect(theirs.map((e) => e.id)).not.toEqual(expect.arrayContaining([list.body.data[0].id]));
    });

    it('is admin-only and checks its filters like the list', async () => {
      expect((await download('/api/v1/settings/audit-log/export', {}, await fresh('member'))).status).toBe(403);
      const bad = await download('/api/v1/settings/audit-log/export', { since: '2030-01-01T00:00:00Z', until: '2020-01-01T00:00:00Z' }, await fresh('admin'));
      expect(bad.status).toBe(422);
      expect(errorOf(bad).error.details![0]!.field).toBe('query → until');
      const cursor = await download('/api/v1/settings/audit-log/export', { cursor: 'abc' }, await fresh('admin'));
      expect(cursor.status).toBe(422);
      const nul = await download('/api/v1/settings/audit-log/export', { action: 'x\u0000' }, await fresh('admin'));
      expect(nul.status).toBe(422);
    });
  });
});
