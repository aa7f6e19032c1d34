import { seedApiKey, seedJob, seedMachine, seedProcess, seedQueue, seedUser } from '@svc/testing';
import type { QueryOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { CONTRACT_JOB_FIELDS, CONTRACT_STOP_FIELDS, seedWorkspace, type Workspace } from './jobs-support';
import { QUEUE_ITEM_FIELDS, itemsPath } from './queue-items-support';
import { bearer } from './settings-fixtures';

/**
 * What operators and integrators read: items by business reference, the jobs list (public and
 * settings), a queue's items through settings, and who may do what there (docs/decisions/operator-reads.md).
 */
describe('operator reads', () => {
  let t: ApiTestContext;
  let a: Workspace;
  let b: Workspace;
  let admin: string;
  let member: string;
  let adminB: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    a = await seedWorkspace(t.sql);
    b = await seedWorkspace(t.sql);
    admin = (await seedUser(t.sql, a.tenant.id, { role: 'admin' })).token;
    member = (await seedUser(t.sql, a.tenant.id, { role: 'member' })).token;
    adminB = (await seedUser(t.sql, b.tenant.id, { role: 'admin' })).token;
  });
  afterAll(() => t.close());

  /** The ids of a page: of a body read through the typed client, or of a raw response. */
  const ids = (page: { data: Array<{ id: string }> } | { body: { data: Array<{ id: string }> } }) => ('body' in page ? page.body : page).data.map((r) => r.id);

  describe('items by reference', () => {
    let queue: { id: string; name: string };
    const added: Record<string, string[]> = {};
    beforeAll(async () => {
      queue = (await seedQueue(t.sql, a.tenant.id)) as { id: string; name: string };
      // interleaved, so a reference's items are not adjacent in the queue
      for (const [i, ref] of ['INV-1', 'INV-2', 'INV-1', null, 'inv-1', 'INV-1', 'INV-10'].entries()) {
        const res = await t.http.post(itemsPath(queue.name)).set('X-API-Key', a.key).send({ data: { i }, reference: ref });
        expect(res.status).toBe(200);
        (added[String(ref)] ??= []).push(res.body.data.id);
      }
      // the second INV-1 item is taken by a robot: status and reference combine
      await t.sql`update queue_items set status = 'in_progress' where id = ${added['INV-1']![1]!}`;
    });
    const publicList = (query: Record<string, unknown>, key = a.key, name = queue.name) =>
      t.http.get(itemsPath(name)).query(query).set('X-API-Key', key);
    /** A read as an integrator makes it, through the typed client (@svc/client). */
    const publicRead = (query: QueryOf<'listQueueItems'>, key = a.key, name = queue.name) =>
      apiClient(t, { apiKey: key }).request('listQueueItems', { path: { name }, query });

    it('finds exactly the items with that reference, newest first, with exact meta', async () => {
      const res = await publicRead({ reference: 'INV-1' });
      expect(ids(res)).toEqual([...added['INV-1']!].reverse());
      expect(res.meta).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });
      expect(Object.keys(res.data[0]!)).toEqual(QUEUE_ITEM_FIELDS);
      expect(res.data.every((i) => i.reference === 'INV-1')).toBe(true);
    });

    it('matches exactly: case and prefixes count, an unknown reference is an empty page', async () => {
      expect(ids(await publicRead({ reference: 'inv-1' }))).toEqual(added['inv-1']);
      expect(ids(await publicRead({ reference: 'INV-10' }))).toEqual(added['INV-10']);
      const none = await publicRead({ reference: 'INV-999' });
      expect(none).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, pages: 0 } });
    });

    it('combines with status, page and limit', async () => {
      const taken = await publicRead({ reference: 'INV-1', status: 'in_progress' });
      expect(ids(taken)).toEqual([added['INV-1']![1]]);
      expect(taken.meta.total).toBe(1);
      const fresh = await publicRead({ reference: 'INV-1', status: 'new' });
      expect(ids(fresh)).toEqual([added['INV-1']![2], added['INV-1']![0]]);
      const p2 = await publicRead({ reference: 'INV-1', page: 2, limit: 2 });
      expect(ids(p2)).toEqual([added['INV-1']![0]]);
      expect(p2.meta).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });
    });

    it('refuses empty, overlong, repeated and unstorable references with 422 naming the field', async () => {
      for (const query of [{ reference: '' }, { reference: 'x'.repeat(256) }, { reference: ['a', 'b'] }, { reference: 'a\u0000b' }]) {
        const res = await publicList(query);
        expect([JSON.stringify(query).slice(0, 40), res.status]).toEqual([JSON.stringify(query).slice(0, 40), 422]);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
        expect(res.body.error.details[0].field).toBe('query → reference');
      }
      expect((await publicList({ reference: 'x'.repeat(255) })).status).toBe(200);
    });

    it('never finds another workspace\'s items by their reference', async () => {
      const other = (await seedQueue(t.sql, b.tenant.id)) as { id: string; name: string };
      expect((await t.http.post(itemsPath(other.name)).set('X-API-Key', b.key).send({ data: {}, reference: 'SHARED' })).status).toBe(200);
      // a's key cannot even name b's queue; a's own queue has no SHARED item
      expect((await publicList({ reference: 'SHARED' }, a.key, other.name)).status).toBe(404);
      expect((await publicRead({ reference: 'SHARED' })).data).toEqual([]);
    });

    it('answers the same through settings, by queue id, to any member of the workspace', async () => {
      const settingsRead = (token: string, query: QueryOf<'listWorkspaceQueueItems'>) =>
        apiClient(t, { token }).request('listWorkspaceQueueItems', { path: { queue_id: queue.id }, query });
      for (const token of [admin, member]) {
        expect(await settingsRead(token, { reference: 'INV-1', status: 'new' })).toEqual(await publicRead({ reference: 'INV-1', status: 'new' }));
      }
      expect((await settingsRead(member, { limit: 100 })).meta.total).toBe(7);
    });

    it('answers another workspace\'s queue with 404, a malformed id and bad filters with 422, no token with 401', async () => {
      const other = (await seedQueue(t.sql, b.tenant.id)) as { id: string };
      const foreign = await t.http.get(`/api/v1/settings/queues/${other.id}/items`).set(bearer(admin));
      expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
      const bad = await t.http.get('/api/v1/settings/queues/12/items').set(bearer(admin));
      expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'path → queue_id']);
      for (const query of [{ status: 'done' }, { limit: 0 }, { page: 501 }, { bogus: 1 }, { reference: 'a\u0000' }]) {
        const res = await t.http.get(`/api/v1/settings/queues/${queue.id}/items`).query(query).set(bearer(member));
        expect([JSON.stringify(query), res.status]).toEqual([JSON.stringify(query), 422]);
      }
      expect((await t.http.get(`/api/v1/settings/queues/${queue.id}/items`)).status).toBe(401);
    });
  });

  describe('jobs list', () => {
    let w: Workspace;
    let otherProcess: Record<string, any>;
    let otherMachine: Record<string, any>;
    let jobs: Array<Record<string, any>>;
    beforeAll(async () => {
      w = await seedWorkspace(t.sql);
      otherProcess = await seedProcess(t.sql, w.tenant.id);
      otherMachine = (await seedMachine(t.sql, w.tenant.id)).row;
      const plan = [
        { process_id: w.process.id, machine_id: w.machine.id, status: 'completed' },
        { process_id: otherProcess.id, machine_id: w.machine.id, status: 'failed' },
        { process_id: w.process.id, machine_id: otherMachine.id, status: 'pending' },
        { process_id: otherProcess.id, machine_id: otherMachine.id, status: 'completed' },
        { process_id: w.process.id, machine_id: w.machine.id, status: 'running' },
      ];
      jobs = [];
      for (const [i, fields] of plan.entries()) {
        const job = await seedJob(t.sql, w.tenant.id, { ...fields, input_data: { i } });
        // distinct, increasing creation times: the order is created_at desc, id desc
        await t.sql`update jobs set created_at = now() - make_interval(secs => ${100 - i}) where id = ${job.id}`;
        jobs.push(job);
      }
      await seedJob(t.sql, b.tenant.id, { process_id: b.process.id, machine_id: b.machine.id, status: 'completed' });
    });
    const list = (query: Record<string, unknown> = {}, key = w.key) => t.http.get('/api/v1/jobs/list').query(query).set('X-API-Key', key);
    const client = () => apiClient(t, { apiKey: w.key });
    const newestFirst = (pick: (j: Record<string, any>) => boolean = () => true) => jobs.filter(pick).map((j) => j.id).reverse();

    it('lists the workspace\'s jobs newest first, each exactly as GET /jobs/{job_id} answers it', async () => {
      const res = await client().request('listJobs');
      expect(ids(res)).toEqual(newestFirst());
      expect(res.meta).toEqual({ page: 1, limit: 20, total: 5, pages: 1 });
      for (const job of res.data) {
        expect(Object.keys(job).sort()).toEqual(CONTRACT_JOB_FIELDS);
        expect(job).toEqual(await client().call('getJob', { path: { job_id: job.id } }));
      }
      expect(res.data[0]).toMatchObject({ status: 'running', input_data: { i: 4 }, process_name: w.process.name, machine_name: w.machine.name });
    });

    it('filters by status, process and machine, alone and together', async () => {
      expect(ids(await list({ status: 'completed' }))).toEqual(newestFirst((j) => j.status === 'completed'));
      expect(ids(await list({ process_id: otherProcess.id }))).toEqual(newestFirst((j) => j.process_id === otherProcess.id));
      expect(ids(await list({ machine_id: otherMachine.id }))).toEqual(newestFirst((j) => j.machine_id === otherMachine.id));
      const both = await list({ process_id: w.process.id, machine_id: w.machine.id, status: 'completed' });
      expect(ids(both)).toEqual([jobs[0]!.id]);
      expect(both.body.meta).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });
      const none = await list({ status: 'timed_out' });
      expect(none.body).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, pages: 0 } });
    });

    it('filters by input_data (JSON containment), with the other filters and paging; bad filters answer 422', async () => {
      const odd = (j: Record<string, any>) => (j.input_data as { i: number }).i % 2 === 1;
      await t.sql`update jobs set input_data = input_data || jsonb_build_object('odd', (input_data->>'i')::int % 2 = 1, 'tags', jsonb_build_array('x', input_data->>'i'))
                   where tenant_id = ${w.tenant.id}`;
      // the other workspace's job carries the same input
      await seedJob(t.sql, b.tenant.id, { process_id: b.process.id, machine_id: b.machine.id, status: 'completed', input_data: { i: 1, odd: true } });
      const res = await list({ input_data: JSON.stringify({ odd: true }) });
      expect(ids(res)).toEqual(newestFirst(odd));
      expect(res.body.meta.total).toBe(2);
      expect(ids(await list({ input_data: JSON.stringify({ i: 3, odd: true }) }))).toEqual([jobs[3]!.id]);
      expect(ids(await list({ input_data: JSON.stringify({ tags: ['2'] }) }))).toEqual([jobs[2]!.id]);
      expect(ids(await list({ input_data: JSON.stringify({ odd: false }), machine_id: w.machine.id }))).toEqual([jobs[4]!.id, jobs[0]!.id]);
      const paged = await list({ input_data: JSON.stringify({ tags: ['x'] }), status: 'completed', limit: 1, page: 2 });
      expect([ids(paged), paged.body.meta]).toEqual([[jobs[0]!.id], { page: 2, limit: 1, total: 2, pages: 2 }]);
      const settings = await t.http.get('/api/v1/settings/jobs').query({ input_data: JSON.stringify({ odd: true }) })
        .set(bearer((await seedUser(t.sql, w.tenant.id, { role: 'member' })).token));
      expect(ids(settings)).toEqual(newestFirst(odd));
      for (const bad of ['{"odd":tru', '[true]', '{"a":"\\u0000"}', '{"__proto__":{}}', JSON.stringify({ s: 'x'.repeat(2100) })]) {
        const r = await list({ input_data: bad });
        expect([bad, r.status, r.body.error?.details?.[0]?.field]).toEqual([bad, 422, expect.stringMatching(/^query → input_data/)]);
      }
    });

    it('pages without gaps or repeats', async () => {
      const seen: string[] = [];
      for (const page of [1, 2, 3]) {
        const res = await client().request('listJobs', { query: { page, limit: 2 } });
        expect(res.meta).toEqual({ page, limit: 2, total: 5, pages: 3 });
        seen.push(...ids(res));
      }
      expect(seen).toEqual(newestFirst());
      // the client's own iterator walks the same pages
      const walked: string[] = [];
      for await (const job of client().list('listJobs', { query: { limit: 2 } })) walked.push(job.id);
      expect(walked).toEqual(newestFirst());
    });

    it('answers 422 to unknown statuses, malformed ids, ids the workspace does not have, and bad paging', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ status: 'done' }, 'query → status'],
        [{ process_id: 'abc' }, 'query → process_id'],
        [{ machine_id: '12' }, 'query → machine_id'],
        [{ process_id: '00000000-0000-4000-8000-000000000000' }, 'query → process_id'],
        [{ process_id: b.process.id }, 'query → process_id'],
        [{ machine_id: b.machine.id }, 'query → machine_id'],
        [{ page: 0 }, 'query → page'],
        [{ page: 501 }, 'query → page'],
        [{ limit: 101 }, 'query → limit'],
        [{ status: ['pending', 'running'] }, 'query → status'],
        [{ status: 'pend\u0000ing' }, 'query → status'],
      ];
      for (const [query, field] of cases) {
        const res = await list(query);
        expect([field, res.status, res.body.error?.code]).toEqual([field, 422, 'VALIDATION_ERROR']);
        expect(res.body.error.details[0].field).toBe(field);
      }
      const unknown = await list({ bogus: 1 });
      expect(unknown.status).toBe(422);
    });

    it('never shows another workspace\'s jobs', async () => {
      const res = await list({ limit: 100 }, b.key);
      expect(res.body.data.every((j: { tenant_id: string }) => j.tenant_id === b.tenant.id)).toBe(true);
      expect(ids(res)).not.toContain(jobs[0]!.id);
    });

    it('needs the jobs:read scope', async () => {
      const k = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:write'] });
      const res = await list({}, k.key);
      expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
      expect((await t.http.get('/api/v1/jobs/list')).status).toBe(401);
    });

    it('allows 60 requests a minute per key, then answers 429', async () => {
      const k = await seedApiKey(t.sql, w.tenant.id, { scopes: ['jobs:read'] });
      for (let i = 0; i < 60; i++) expect((await list({ limit: 1 }, k.key)).status).toBe(200);
      const res = await list({ limit: 1 }, k.key);
      expect([res.status, res.body.error.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
    });

    describe('through settings', () => {
      let wAdmin: string;
      let wMember: string;
      beforeAll(async () => {
        wAdmin = (await seedUser(t.sql, w.tenant.id, { role: 'admin' })).token;
        wMember = (await seedUser(t.sql, w.tenant.id, { role: 'member' })).token;
      });

      it('lists and reads exactly what the public routes answer, for any member', async () => {
        for (const token of [wAdmin, wMember]) {
          const res = await t.http.get('/api/v1/settings/jobs').query({ machine_id: w.machine.id, limit: 2 }).set(bearer(token));
          expect(res.status).toBe(200);
          expect(res.body).toEqual((await list({ machine_id: w.machine.id, limit: 2 })).body);
          const one = await t.http.get(`/api/v1/settings/jobs/${jobs[1]!.id}`).set(bearer(token));
          expect(one.body).toEqual((await t.http.get(`/api/v1/jobs/${jobs[1]!.id}`).set('X-API-Key', w.key)).body);
        }
      });

      it('answers another workspace\'s job with 404 and bad input with 422', async () => {
        const foreign = await t.http.get(`/api/v1/settings/jobs/${jobs[0]!.id}`).set(bearer(adminB));
        expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
        const stopForeign = await t.http.post(`/api/v1/settings/jobs/${jobs[2]!.id}/stop`).set(bearer(adminB));
        expect(stopForeign.status).toBe(404);
        expect((await t.http.get('/api/v1/settings/jobs/nope').set(bearer(wMember))).status).toBe(422);
        const badFilter = await t.http.get('/api/v1/settings/jobs').query({ process_id: b.process.id }).set(bearer(wMember));
        expect([badFilter.status, badFilter.body.error.details[0].field]).toEqual([422, 'query → process_id']);
      });

      it('lets only an admin stop a job: pending → stopped, audited; a finished job → 409', async () => {
        const pending = jobs[2]!;
        const denied = await t.http.post(`/api/v1/settings/jobs/${pending.id}/stop`).set(bearer(wMember));
        expect([denied.status, denied.body.error.code]).toEqual([403, 'FORBIDDEN']);
        expect((await t.http.get(`/api/v1/settings/jobs/${pending.id}`).set(bearer(wMember))).body.data.status).toBe('pending');

        const res = await t.http.post(`/api/v1/settings/jobs/${pending.id}/stop`).set(bearer(wAdmin));
        expect(res.status).toBe(200);
        expect(Object.keys(res.body.data).sort()).toEqual(CONTRACT_STOP_FIELDS);
        expect(res.body.data).toMatchObject({ id: pending.id, status: 'stopped', stop_requested: true });
        const [audit] = await t.sql`select * from audit_log where resource_id = ${pending.id} and action = 'stop_job'`;
        expect(audit).toMatchObject({ tenant_id: w.tenant.id, actor_type: 'user', source: 'api', resource_type: 'job', details: { from: 'pending', to: 'stopped' } });

        const again = await t.http.post(`/api/v1/settings/jobs/${pending.id}/stop`).set(bearer(wAdmin));
        expect([again.status, again.body.error.code]).toEqual([409, 'CONFLICT']);
      });

      it('stops a running job as the public route does: stop_requested, still running, audited', async () => {
        const running = jobs[4]!;
        const res = await t.http.post(`/api/v1/settings/jobs/${running.id}/stop`).set(bearer(wAdmin));
        expect(res.status).toBe(200);
        expect(res.body.data).toMatchObject({ status: 'running', stop_requested: true });
        const [audit] = await t.sql`select details from audit_log where resource_id = ${running.id} and action = 'stop_job'`;
        expect(audit!.details).toEqual({ from: 'running', to: 'running' });
      });
    });
  });

  describe('member access to the catalogue', () => {
    it('lets a member read queues and machines but write nothing, and keeps keys and assets admin-only', async () => {
      expect((await t.http.get('/api/v1/settings/queues').set(bearer(member))).status).toBe(200);
      expect((await t.http.get('/api/v1/settings/machines').set(bearer(member))).status).toBe(200);
      const machine = await t.http.get(`/api/v1/settings/machines/${a.machine.id}`).set(bearer(member));
      expect(machine.status).toBe(200);
      expect(JSON.stringify(machine.body)).not.toMatch(/machine_key|key_hash/);
      for (const res of [
        await t.http.get('/api/v1/settings/api-keys').set(bearer(member)),
        await t.http.get('/api/v1/settings/assets').set(bearer(member)),
        await t.http.get('/api/v1/settings/processes').set(bearer(member)),
        await t.http.post('/api/v1/settings/queues').set(bearer(member)).send({ name: 'nueva' }),
        await t.http.post(`/api/v1/settings/machines/${a.machine.id}/rotate-key`).set(bearer(member)),
      ]) {
        expect([res.status, res.body.error?.code]).toEqual([403, 'FORBIDDEN']);
      }
    });
  });
});
