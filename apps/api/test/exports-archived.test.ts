import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedMachine, seedProcess, seedQueue, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { QUEUE_ITEM_FIELDS, itemsPath, queueWorld, type QueueWorld } from './queue-items-support';
import { bearer } from './settings-fixtures';

/**
 * The exports with `include_archived=true` (docs/decisions/export.md): the rows a real retention
 * pass archived into a temporary ARCHIVE_DIR and deleted come back after the live ones, filtered
 * like them and marked, as NDJSON and CSV; the flag is strict, and an API without an archive refuses
 * to give a partial export.
 */
jest.setTimeout(60_000);

interface Download {
  status: number;
  headers: Record<string, string>;
  text: string;
}

type Item = Record<string, unknown> & { id: string };

describe('exports with archived rows', () => {
  let t: ApiTestContext;
  let w: QueueWorld;
  let dir: string;
  let q: { id: string; name: string };
  let sibling: { id: string; name: string };
  /** the items as the list showed them before the pass: a, b, c are archived; d, e stay */
  const before: Record<string, Item> = {};
  let process: { id: string; name: string };
  let machine: { id: string; name: string };
  const jobIds: string[] = [];
  let liveJobs: Item[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-export-archive-'));
    t = await createApiTestContext({ archive: { kind: 'directory', dir } });
    w = await queueWorld(t);
    q = (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
    sibling = (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
    const writer = await w.key(['queues:write']);
    const adds: Array<[string, { id: string; name: string }, Record<string, unknown>]> = [
      ['a', q, { data: { customer: 'ACME', n: 1, tags: ['x', 'y'] }, reference: 'INV-1', priority: 5 }],
      ['b', q, { data: { customer: 'Globex', n: 2 }, reference: '=HYPERLINK("http://x")' }],
      ['c', q, { data: { customer: 'ACME', n: 3 }, reference: 'INV-1', deadline: '2030-01-02T03:04:05.000Z' }],
      ['d', q, { data: { customer: 'ACME', n: 4 }, reference: 'INV-1' }],
      ['e', q, { data: { customer: 'Initech', n: 5 } }],
      ['s', sibling, { data: { customer: 'ACME', n: 6 } }],
    ];
    const ids: Record<string, string> = {};
    for (const [name, queue, body] of adds) {
      const res = await t.http.post(itemsPath(queue.name)).set('X-API-Key', writer).send(body);
      expect(res.status).toBe(200);
      ids[name] = res.body.data.id;
    }
    // a, b and c ended hours ago (in that order), e just now; d is still new
    await t.sql`
      update queue_items set status = x.status, result = ${t.sql.json({ ok: true })}, processed_at = now() - x.ago, updated_at = now() - x.ago
      from (values (${ids.a!}::uuid, 'completed', interval '3 hours'), (${ids.b!}::uuid, 'dead_letter', interval '2 hours'),
                   (${ids.c!}::uuid, 'completed', interval '90 minutes'), (${ids.e!}::uuid, 'completed', interval '0'),
                   (${ids.s!}::uuid, 'completed', interval '3 hours')) as x(id, status, ago)
      where queue_items.id = x.id`;
    const reader = await w.key(['queues:read']);
    const listed: Item[] = [];
    for (const queue of [q, sibling]) listed.push(...(await t.http.get(itemsPath(queue.name)).set('X-API-Key', reader)).body.data);
    for (const [name, id] of Object.entries(ids)) before[name] = listed.find((i) => i.id === id)!;

    process = (await seedProcess(t.sql, w.tenantId)) as { id: string; name: string };
    machine = (await seedMachine(t.sql, w.tenantId)).row as { id: string; name: string };
    for (const [i, status] of ['pending', 'completed', 'failed', 'completed'].entries()) {
      const job = await seedJob(i, status);
      jobIds.push(job);
    }
    // the last one ended just now: it stays
    await t.sql`update jobs set finished_at = now() where id = ${jobIds[3]!}`;
    liveJobs = ndjson(await jobsExport()).filter((j) => j.id !== jobIds[0] && j.id !== jobIds[3]);

    await t.sql`update queues set retention_completed_days = ${1 / 24}, retention_failed_days = ${1 / 24}, retention_action = 'archive'
                where id in (${q.id}, ${sibling.id})`;
    await t.sql`update tenants set job_retention_days = ${1 / 24}, job_retention_action = 'archive' where id = ${w.tenantId}`;
    await t.deps.engine.sweeps.retention();
    const left = await t.sql<Array<{ id: string }>>`select id from queue_items where queue_id in (${q.id}, ${sibling.id}) order by created_at`;
    expect(left.map((r) => r.id)).toEqual([ids.d, ids.e]);
    const jobsLeft = await t.sql<Array<{ id: string }>>`select id from jobs where tenant_id = ${w.tenantId} order by created_at`;
    expect(jobsLeft.map((r) => r.id)).toEqual([jobIds[0], jobIds[3]]);
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function seedJob(i: number, status: string): Promise<string> {
    const ended = status === 'pending' ? null : new Date(Date.now() - (4 - i) * 3600_000);
    const [row] = await t.sql<Array<{ id: string }>>`
      insert into jobs (tenant_id, process_id, machine_id, status, priority, input_data, attempt, started_at, finished_at, source)
      values (${w.tenantId}, ${process.id}, ${machine.id}, ${status}, 3, ${t.sql.json({ i, region: i % 2 ? 'eu' : 'us' })}, 1, ${ended}, ${ended}, 'api')
      returning id`;
    return row!.id;
  }

  const download = async (path: string, query: Record<string, string | string[]> = {}, headers: Record<string, string> = {}, http = t.http): Promise<Download> => {
    const res = await http.get(path).query(query).set(headers).buffer(true).parse((r, done) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => done(null, text));
    });
    return { status: res.status, headers: res.headers as Record<string, string>, text: res.body as string };
  };
  const ndjson = (d: Download): Item[] => d.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  const errorOf = (d: Download) => JSON.parse(d.text) as { success: false; error: { code: string; message: string; details?: Array<{ field: string; message: string }> } };
  const exportPath = (name: string) => `${itemsPath(name)}/export`;
  const key = () => w.key(['queues:read']).then((k) => ({ 'X-API-Key': k }));
  const fresh = async (tenantId = w.tenantId) => bearer((await seedUser(t.sql, tenantId, { role: 'member' })).token);
  const jobsExport = async (query: Record<string, string> = {}) => download('/api/v1/settings/jobs/export', query, await fresh());
  const marked = (item: Item | undefined, archived: boolean) => ({ ...item!, archived });

  describe('queue items', () => {
    it('leaves the export as it was without the flag, or with include_archived=false: live rows, unmarked', async () => {
      for (const query of [{}, { include_archived: 'false' }] as Array<Record<string, string>>) {
        const rows = ndjson(await download(exportPath(q.name), query, await key()));
        expect(rows).toEqual([before.e, before.d]);
        for (const r of rows) expect(Object.keys(r)).toEqual(QUEUE_ITEM_FIELDS);
      }
    });

    it('follows the live rows with the queue\'s archived ones in the order they ended, each marked, the very records the list showed', async () => {
      const res = await download(exportPath(q.name), { include_archived: 'true' }, await key());
      expect(res.status).toBe(200);
      const rows = ndjson(res);
      expect(rows).toEqual([marked(before.e, false), marked(before.d, false), marked(before.a, true), marked(before.b, true), marked(before.c, true)]);
      for (const r of rows) expect(Object.keys(r)).toEqual([...QUEUE_ITEM_FIELDS, 'archived']);
      // the sibling queue's archived item is its own
      const other = ndjson(await download(exportPath(sibling.name), { include_archived: 'true' }, await key()));
      expect(other).toEqual([marked(before.s, true)]);
    });

    it('applies status, reference and data containment (with jsonb\'s rules) to the archived rows too', async () => {
      const k = await key();
      const idsOf = async (query: Record<string, string>) =>
        ndjson(await download(exportPath(q.name), { ...query, include_archived: 'true' }, k)).map((r) => `${r.id === before.a!.id ? 'a' : r.id === before.b!.id ? 'b' : r.id === before.c!.id ? 'c' : r.id === before.d!.id ? 'd' : 'e'}${r.archived ? '*' : ''}`);
      expect(await idsOf({ status: 'completed' })).toEqual(['e', 'a*', 'c*']);
      expect(await idsOf({ status: 'dead_letter' })).toEqual(['b*']);
      expect(await idsOf({ status: 'new' })).toEqual(['d']);
      expect(await idsOf({ reference: 'INV-1' })).toEqual(['d', 'a*', 'c*']);
      expect(await idsOf({ data: JSON.stringify({ customer: 'ACME' }) })).toEqual(['d', 'a*', 'c*']);
      expect(await idsOf({ data: JSON.stringify({ tags: ['y'] }) })).toEqual(['a*']);
      // an array does not contain a bare scalar below the top, in the archive as in Postgres
      expect(await idsOf({ data: JSON.stringify({ tags: 'y' }) })).toEqual([]);
      expect(await idsOf({ status: 'completed', reference: 'INV-1', data: JSON.stringify({ n: 3 }) })).toEqual(['c*']);
    });

    it('writes CSV with a last column archived, formulas of archived rows neutralised too', async () => {
      const res = await download(exportPath(q.name), { format: 'csv', include_archived: 'true' }, await key());
      expect(res.status).toBe(200);
      const [header, ...lines] = res.text.split('\r\n');
      expect(header).toBe([...QUEUE_ITEM_FIELDS, 'archived'].join(','));
      expect(lines.pop()).toBe('');
      expect(lines.map((l) => l.slice(0, 36))).toEqual([before.e!.id, before.d!.id, before.a!.id, before.b!.id, before.c!.id]);
      expect(lines.map((l) => l.split(',').pop())).toEqual(['false', 'false', 'true', 'true', 'true']);
      expect(lines[3]).toContain(`,"'=HYPERLINK(""http://x"")",`);
      expect(lines[4]).toContain(',2030-01-02T03:04:05.000Z,');
    });

    it('serves the settings twin alike, and answers another workspace\'s queue as missing (404)', async () => {
      const twin = await download(`/api/v1/settings/queues/${q.id}/items/export`, { include_archived: 'true' }, await fresh());
      expect(twin.status).toBe(200);
      expect(twin.text).toBe((await download(exportPath(q.name), { include_archived: 'true' }, await key())).text);
      const otherKey = { 'X-API-Key': await w.otherKey(['queues:read']) };
      expect((await download(exportPath(q.name), { include_archived: 'true' }, otherKey)).status).toBe(404);
      expect((await download(`/api/v1/settings/queues/${q.id}/items/export`, { include_archived: 'true' }, await fresh(w.otherTenantId))).status).toBe(404);
      const otherTwin = await download(`/api/v1/settings/queues/${w.otherQueue.id}/items/export`, { include_archived: 'true' }, await fresh());
      expect(otherTwin.status).toBe(404);
      expect(errorOf(otherTwin).error.code).toBe('NOT_FOUND');
    });

    it('refuses any flag but true or false with a 422 on query → include_archived, in Spanish', async () => {
      const values: Array<string | string[]> = ['TRUE', 'True', '1', '0', 'yes', '', ' true', 'true ', 'null', '{}', 'x'.repeat(5000), 'true\u0000', ['true', 'true']];
      for (const value of values) {
        for (const [path, headers] of [[exportPath(q.name), await key()], [`/api/v1/settings/queues/${q.id}/items/export`, await fresh()]] as const) {
          const res = await download(path, { include_archived: value }, headers);
          expect(res.status).toBe(422);
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          const body = errorOf(res);
          expect(body.error.code).toBe('VALIDATION_ERROR');
          expect(body.error.details![0]!.field).toBe('query → include_archived');
          expect(body.error.details![0]!.message).toMatch(/true o false|debe ser|no puede/);
        }
      }
      const plain = errorOf(await download(exportPath(q.name), { include_archived: 'yes' }, await key()));
      expect(plain.error.details).toEqual([{ field: 'query → include_archived', message: 'debe ser true o false' }]);
    });

    it('never ends a download as complete when a listed archive file is gone: an error answer, or a transfer cut short', async () => {
      const files = await t.sql<Array<{ key: string }>>`select key from archive_files where queue_id = ${sibling.id}`;
      expect(files).toHaveLength(1);
      await unlink(join(dir, files[0]!.key));
      // no live row: the archive is read before the first byte, so the failure is an error answer
      const res = await download(exportPath(sibling.name), { include_archived: 'true' }, await key());
      expect(res.status).toBe(500);
      expect(errorOf(res).error.code).toBe('INTERNAL_ERROR');
      // without the flag the export does not read the archive
      expect((await download(exportPath(sibling.name), {}, await key())).status).toBe(200);

      // with a live row sent first, the status is already 200: the transfer ends without its final chunk
      await t.http.post(itemsPath(sibling.name)).set('X-API-Key', await w.key(['queues:write'])).send({ data: { live: true } }).expect(200);
      const server: Server = createServer(t.app.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const headers = await key();
      try {
        const outcome = await new Promise<{ status: number; ended: boolean; text: string }>((resolve, reject) => {
          const req = get({
            host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: `${exportPath(sibling.name)}?include_archived=true`, headers,
          }, (r) => {
            let text = '';
            r.setEncoding('utf8');
            r.on('data', (c: string) => (text += c));
            r.on('end', () => resolve({ status: r.statusCode!, ended: true, text }));
            r.on('error', () => resolve({ status: r.statusCode!, ended: false, text }));
            r.on('aborted', () => resolve({ status: r.statusCode!, ended: false, text }));
          });
          req.on('error', reject);
        });
        expect(outcome).toMatchObject({ status: 200, ended: false });
        expect(outcome.text).toContain('"live":true');
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });

  describe('jobs', () => {
    it('follows the live jobs with the workspace\'s archived ones, marked, as the list showed them', async () => {
      const live = ndjson(await jobsExport());
      expect(live.map((j) => j.id)).toEqual([jobIds[3], jobIds[0]]);
      const rows = ndjson(await jobsExport({ include_archived: 'true' }));
      expect(rows.map((j) => [j.id, j.archived])).toEqual([[jobIds[3], false], [jobIds[0], false], [jobIds[1], true], [jobIds[2], true]]);
      const archived = rows.filter((j) => j.archived);
      expect(archived).toEqual([...liveJobs].reverse().map((j) => ({ ...j, archived: true })));
      expect(archived[0]).toMatchObject({ process_name: process.name, machine_name: machine.name, status: 'completed' });
      expect(archived[0]).not.toHaveProperty('logs');
    });

    it('applies status, process_id, input_data to the archived jobs, and writes CSV', async () => {
      const idsOf = async (query: Record<string, string>) => ndjson(await jobsExport({ ...query, include_archived: 'true' })).map((j) => j.id);
      expect(await idsOf({ status: 'completed' })).toEqual([jobIds[3], jobIds[1]]);
      expect(await idsOf({ status: 'pending' })).toEqual([jobIds[0]]);
      expect(await idsOf({ input_data: '{"region":"eu"}' })).toEqual([jobIds[3], jobIds[1]]);
      expect(await idsOf({ process_id: process.id, machine_id: machine.id, status: 'failed' })).toEqual([jobIds[2]]);
      // ids in capitals name the same process and machine, for the archived rows as for the live ones
      expect(await idsOf({ process_id: process.id.toUpperCase(), machine_id: machine.id.toUpperCase() }))
        .toEqual(await idsOf({ process_id: process.id, machine_id: machine.id }));
      expect(await idsOf({ process_id: process.id.toUpperCase(), status: 'failed' })).toEqual([jobIds[2]]);
      const otherProcess = await seedProcess(t.sql, w.tenantId);
      expect(await idsOf({ process_id: otherProcess.id as string })).toEqual([]);
      const csv = await jobsExport({ format: 'csv', include_archived: 'true', status: 'failed' });
      const [header, row] = csv.text.split('\r\n');
      expect(header!.endsWith(',archived')).toBe(true);
      expect(row!.startsWith(`${jobIds[2]},${w.tenantId},${process.id},${machine.id},failed,`)).toBe(true);
      expect(row!.endsWith(',true')).toBe(true);
    });

    it('keeps each workspace to its own archive, and refuses a bad flag', async () => {
      const other = await download('/api/v1/settings/jobs/export', { include_archived: 'true' }, await fresh(w.otherTenantId));
      expect(other.status).toBe(200);
      expect(ndjson(other)).toEqual([]);
      const bad = await jobsExport({ include_archived: 'on' });
      expect(bad.status).toBe(422);
      expect(errorOf(bad).error.details).toEqual([{ field: 'query → include_archived', message: 'debe ser true o false' }]);
    });
  });

  describe('an API without an archive', () => {
    let bare: ApiTestContext;
    beforeAll(async () => {
      bare = await createApiTestContext();
    });
    afterAll(() => bare.close());

    it('answers 409 in the envelope, in Spanish, when asked for archived rows; exports live rows without the flag', async () => {
      const bw = await queueWorld(bare);
      const token = bearer((await seedUser(bare.sql, bw.tenantId, { role: 'member' })).token);
      const cases: Array<[string, Record<string, string>]> = [
        [exportPath(bw.queue.name), { 'X-API-Key': await bw.key(['queues:read']) }],
        [`/api/v1/settings/queues/${bw.queue.id}/items/export`, token],
        ['/api/v1/settings/jobs/export', token],
      ];
      for (const [path, headers] of cases) {
        const res = await download(path, { include_archived: 'true', format: 'csv' }, headers, bare.http);
        expect(res.status).toBe(409);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(errorOf(res).error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('ARCHIVE_DIR') });
        expect(errorOf(res).error.message).toMatch(/archivo configurado/);
        expect((await download(path, { include_archived: 'false' }, headers, bare.http)).status).toBe(200);
      }
      // another workspace's queue is still missing first
      const missing = await download(exportPath(bw.otherQueue.name), { include_archived: 'true' }, { 'X-API-Key': await bw.key(['queues:read']) }, bare.http);
      expect(missing.status).toBe(404);
    });
  });
});
