import { seedJob, seedMachine, seedProcess, seedQueue, seedTenant, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer } from './settings-fixtures';

/** GET /settings/queues/{queue_id}/stats (docs/decisions/queue-stats.md). */
describe('GET /api/v1/settings/queues/:queue_id/stats', () => {
  let t: ApiTestContext;
  let tenantId: string;
  let admin: string;
  let member: string;
  let adminB: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    tenantId = (await seedTenant(t.sql)).id;
    admin = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    member = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
    adminB = (await seedUser(t.sql, (await seedTenant(t.sql)).id, { role: 'admin' })).token;
  });
  afterAll(() => t.close());

  const stats = (queueId: string, token = member) => t.http.get(`/api/v1/settings/queues/${queueId}/stats`).set(bearer(token));
  /** A read as the console makes it, through the typed client (@svc/client). */
  const read = (queueId: string, token = member) => apiClient(t, { token }).request('getQueueStats', { path: { queue_id: queueId } });
  const add = async (queueId: string, rows: Array<Record<string, unknown>>) => {
    const ids: string[] = [];
    for (const r of rows) {
      const [row] = await t.sql`
        insert into queue_item_records (tenant_id, queue_id, data, postpone, deadline, created_at)
        values (${tenantId}, ${queueId}, '{}', ${(r.postpone as Date) ?? null}, ${(r.deadline as Date) ?? null}, ${(r.created_at as Date) ?? new Date()})
        returning id`;
      ids.push(row!.id as string);
    }
    return ids;
  };
  const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

  it('answers an empty queue with zeros and nulls, every field present', async () => {
    const q = await seedQueue(t.sql, tenantId);
    expect(await read(q.id as string)).toEqual({
      success: true,
      data: {
        counts: { new: 0, in_progress: 0, pending_review: 0, completed: 0, failed: 0, dead_letter: 0 },
        business_failed: 0,
        ready: 0, postponed: 0, oldest_ready_at: null, deadline_at_risk: 0,
        completed_last_hour: 0, failed_last_hour: 0, business_failed_last_hour: 0, avg_processing_ms_last_hour: null, consumers_running: 0, is_paused: false,
        forecast: { handling_seconds_p50: null, consumers: 0, ready_items: 0, examined_items: 0, drain_at: null, late_items: null, machines_needed: null },
      },
    });
  });

  it('reports each figure of a queue at work, field by field', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const queueId = q.id as string;
    // ready: three, the oldest 30 minutes old; postponed: two (one postponed to the past is ready)
    const oldest = minutesAgo(30);
    const [oldestId] = await add(queueId, [{ created_at: oldest }, { created_at: minutesAgo(10) }, { postpone: minutesAgo(1) }]);
    // an item postponed to the future is not ready, even if it is older than every ready one
    await add(queueId, [{ postpone: new Date(Date.now() + 3_600_000), created_at: minutesAgo(90) }, { postpone: new Date(Date.now() + 60_000) }]);
    // deadlines: one past, one in 30 minutes (both at risk), one in 3 hours (not)
    const [late, soon] = await add(queueId, [{ deadline: minutesAgo(5) }, { deadline: new Date(Date.now() + 30 * 60_000) }, { deadline: new Date(Date.now() + 3 * 3_600_000) }]);
    // a robot takes five items; completes three after 2 s, 4 s and 6 s; one fails, one fails as a business exception
    const taken = await add(queueId, [{}, {}, {}, {}, {}]);
    await t.sql`update queue_items set status = 'in_progress', started_at = now() - interval '10 seconds' where id = any(${taken}::uuid[])`;
    await t.sql`update queue_items set status = 'completed', processed_at = started_at + interval '2 seconds' where id = ${taken[0]!}`;
    await t.sql`update queue_items set status = 'completed', processed_at = started_at + make_interval(secs => case when id = ${taken[1]!}::uuid then 4 else 6 end)
                where id = any(${[taken[1]!, taken[2]!]}::uuid[])`;
    await t.sql`update queue_items set status = 'failed', processed_at = now(), error_message = 'x', exception_type = 'application' where id = ${taken[3]!}`;
    await t.sql`update queue_items set status = 'failed', processed_at = now(), error_message = 'y', exception_type = 'business' where id = ${taken[4]!}`;
    // a late item taken but not finished stays at risk; an item under review, one dead-lettered
    await t.sql`update queue_items set status = 'in_progress', started_at = now() where id = ${late!}`;
    const [review, dead] = await add(queueId, [{}, {}]);
    await t.sql`update queue_items set status = 'pending_review' where id = ${review!}`;
    await t.sql`update queue_items set status = 'dead_letter' where id = ${dead!}`;
    // an item completed two hours ago does not count in the last hour
    await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                values (${queueId}, date_trunc('minute', now()) - interval '2 hours', 0, 50, 5, 999999, 50)`;
    // consumers: one running, one pending (not running yet), one finished
    const process = await seedProcess(t.sql, tenantId);
    const machine = (await seedMachine(t.sql, tenantId)).row;
    for (const status of ['running', 'pending', 'completed']) {
      const job = await seedJob(t.sql, tenantId, { process_id: process.id, machine_id: machine.id, status });
      await t.sql`update jobs set queue_id = ${queueId} where id = ${job.id}`;
    }

    const d = (await read(queueId)).data;
    expect(d.counts).toEqual({ new: 7, in_progress: 1, pending_review: 1, completed: 3, failed: 2, dead_letter: 1 });
    expect(d.business_failed).toBe(1);
    expect(d.postponed).toBe(2);
    expect(d.ready).toBe(5);
    expect(Date.parse(d.oldest_ready_at!)).toBe(oldest.getTime());
    expect(oldestId).toBeDefined();
    expect(d.deadline_at_risk).toBe(2);
    expect(soon).toBeDefined();
    expect(d.completed_last_hour).toBe(3);
    expect(d.failed_last_hour).toBe(2);
    expect(d.business_failed_last_hour).toBe(1);
    expect(d.avg_processing_ms_last_hour).toBe(4000);
    expect(d.consumers_running).toBe(1);
    // the counts are the settings list's counts
    const record = await apiClient(t, { token: member }).call('getQueue', { path: { id: queueId } });
    expect(record.item_counts).toMatchObject(d.counts);
  });

  it('counts a transition into failed each time it happens, and nothing for rows that did not change status', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const [id] = await add(q.id as string, [{}]);
    for (let i = 0; i < 2; i++) {
      await t.sql`update queue_items set status = 'in_progress', started_at = now() where id = ${id!}`;
      await t.sql`update queue_items set status = 'failed', processed_at = now() where id = ${id!}`;
      await t.sql`update queue_items set status = 'new' where id = ${id!}`;
    }
    await t.sql`update queue_items set error_message = 'touched' where id = ${id!}`;
    const d = (await read(q.id as string)).data;
    expect([d.failed_last_hour, d.completed_last_hour, d.avg_processing_ms_last_hour]).toEqual([2, 0, null]);
  });

  it('answers another workspace\'s queue with 404, a malformed id with 422, no token with 401', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const foreign = await stats(q.id as string, adminB);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
    for (const bad of ['12', 'not-a-uuid', '%00', '00000000-0000-4000-8000-00000000000g']) {
      const res = await t.http.get(`/api/v1/settings/queues/${bad}/stats`).set(bearer(admin));
      expect([bad, res.status, res.body.error.details?.[0]?.field]).toEqual([bad, 422, 'path → queue_id']);
    }
    expect((await t.http.get(`/api/v1/settings/queues/${q.id}/stats`)).status).toBe(401);
    expect((await t.http.get(`/api/v1/settings/queues/${q.id}/stats?x=1`).set(bearer(admin))).status).toBe(200);
  });

  it('allows 120 requests a minute per access token, then answers 429', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const token = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
    for (let i = 0; i < 120; i++) expect((await stats(q.id as string, token)).status).toBe(200);
    const res = await stats(q.id as string, token);
    expect([res.status, res.body.error.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
  });
});
