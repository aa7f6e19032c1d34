import { noopDispatch } from '@svc/core/internals';
import { seedJob, seedMachine, seedProcess, seedQueue, seedTenant, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer } from './settings-fixtures';

/** POST /settings/queues/{queue_id}/pause and /resume (docs/decisions/queue-pause.md). */
describe('pausing and resuming a queue', () => {
  let t: ApiTestContext;
  let tenantId: string;
  let admin: string;
  let member: string;
  let adminB: string;
  let process: Record<string, any>;
  let machine: Record<string, any>;
  const nudged: string[] = [];
  beforeAll(async () => {
    t = await createApiTestContext();
    t.deps.dispatch = { ...noopDispatch, queueItemsReady: async (q) => void nudged.push(q.id) };
    tenantId = (await seedTenant(t.sql)).id;
    admin = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    member = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
    adminB = (await seedUser(t.sql, (await seedTenant(t.sql)).id, { role: 'admin' })).token;
    process = await seedProcess(t.sql, tenantId);
    machine = (await seedMachine(t.sql, tenantId, { status: 'online', slots: 4 })).row;
  });
  afterAll(() => t.close());

  const consumerQueue = async () => (await seedQueue(t.sql, tenantId, { consumer_process_id: process.id, max_consumers: 2 })) as { id: string; name: string };
  const pause = (id: string, token = admin) => t.http.post(`/api/v1/settings/queues/${id}/pause`).set(bearer(token));
  const resume = (id: string, token = admin) => t.http.post(`/api/v1/settings/queues/${id}/resume`).set(bearer(token));
  /** Well-formed calls whose answers a test reads: through the typed client, as the console makes them. */
  const api = (token = admin) => apiClient(t, { token });
  const paused = (id: string) => api().call('pauseQueue', { path: { queue_id: id } });
  const resumed = (id: string) => api().call('resumeQueue', { path: { queue_id: id } });
  const addItems = async (queueId: string, n: number) => {
    for (let i = 0; i < n; i++) await t.sql`insert into queue_item_records (tenant_id, queue_id, data) values (${tenantId}, ${queueId}, ${t.sql.json({ i })})`;
  };

  it('pauses and resumes: the record says so, each change is audited, repeating one answers the record as it is', async () => {
    const q = await consumerQueue();
    expect(await paused(q.id)).toMatchObject({ id: q.id, is_paused: true, is_active: true });
    expect((await paused(q.id)).is_paused).toBe(true);
    expect((await api(member).call('getQueue', { path: { id: q.id } })).is_paused).toBe(true);
    expect((await api(member).call('getQueueStats', { path: { queue_id: q.id } })).is_paused).toBe(true);

    nudged.length = 0;
    expect((await resumed(q.id)).is_paused).toBe(false);
    // resuming nudges the queue, as a new item does: consumers start at once
    expect(nudged).toEqual([q.id]);
    const audit = await t.sql`select action, actor_type, source from audit_log where resource_id = ${q.id} order by id`;
    expect(audit.map((a) => a.action)).toEqual(['pause_queue', 'pause_queue', 'resume_queue']);
    expect(audit.every((a) => a.actor_type === 'user' && a.source === 'api')).toBe(true);
  });

  it('keeps accepting items while paused, and starts no consumer until resumed', async () => {
    const q = await consumerQueue();
    expect((await paused(q.id)).is_paused).toBe(true);
    nudged.length = 0;
    const { key } = await api().call('createApiKey', { body: { name: `k-${q.name}`, scopes: ['queues:write'] } });
    const added = await apiClient(t, { apiKey: key }).call('addQueueItem', { path: { name: q.name }, body: { data: { n: 1 } } });
    expect(added.status).toBe('new');
    await addItems(q.id, 3);

    expect(await t.deps.engine.sweeps.startConsumers(q.id)).toEqual([]);
    expect(await t.deps.engine.sweeps.queuesNeedingConsumers(tenantId)).not.toContain(q.id);
    const [{ n: jobs }] = await t.sql`select count(*)::int as n from jobs where queue_id = ${q.id}`;
    expect(jobs).toBe(0);

    expect((await resumed(q.id)).is_paused).toBe(false);
    const started = await t.deps.engine.sweeps.startConsumers(q.id);
    expect(started.length).toBe(2);
    expect(await t.deps.engine.sweeps.queuesNeedingConsumers(tenantId)).not.toContain(q.id);
  });

  it('lets a running consumer settle what it holds but take nothing more, so nothing stays in progress', async () => {
    const q = await consumerQueue();
    await addItems(q.id, 5);
    const job = await seedJob(t.sql, tenantId, { process_id: process.id, machine_id: machine.id, status: 'running', attempt: 1 });
    await t.sql`update jobs set queue_id = ${q.id} where id = ${job.id}`;
    const base = { queueId: q.id, jobId: job.id as string, jobAttempt: 1, machineId: machine.id as string };
    const first = await t.deps.engine.machines.takeItems({ ...base, outcomes: [], take: 2 });
    expect(first.claimed.length).toBe(2);

    expect((await paused(q.id)).is_paused).toBe(true);
    const outcomes = first.claimed.map((c) => ({ id: c.id, attempt: c.attempt, status: 'completed' as const, result: { ok: true } }));
    const next = await t.deps.engine.machines.takeItems({ ...base, outcomes, take: 2 });
    expect(next.settled.map((s) => s.id).sort()).toEqual(first.claimed.map((c) => c.id).sort());
    expect(next.claimed).toEqual([]);
    const counts = await t.sql`select status, count(*)::int as n from queue_items where queue_id = ${q.id} group by status order by status`;
    expect(counts).toEqual([{ status: 'completed', n: 2 }, { status: 'new', n: 3 }]);

    expect((await resumed(q.id)).is_paused).toBe(false);
    expect((await t.deps.engine.machines.takeItems({ ...base, outcomes: [], take: 2 })).claimed.length).toBe(2);
  });

  it('is for admins: 403 for a member, 404 for another workspace\'s queue, 422 for a malformed id, 401 without a token', async () => {
    const q = await consumerQueue();
    for (const call of [pause, resume]) {
      const denied = await call(q.id, member);
      expect([denied.status, denied.body.error.code]).toEqual([403, 'FORBIDDEN']);
      const foreign = await call(q.id, adminB);
      expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
      const bad = await call('nope');
      expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'path → queue_id']);
      expect((await t.http.post(`/api/v1/settings/queues/${q.id}/pause`)).status).toBe(401);
    }
    const [row] = await t.sql`select is_paused from queues where id = ${q.id}`;
    expect(row!.is_paused).toBe(false);
  });

  it('can be set by PATCH and svc apply\'s field too, and refuses a non-boolean', async () => {
    const q = await consumerQueue();
    expect((await api().call('updateQueue', { path: { id: q.id }, body: { is_paused: true } })).is_paused).toBe(true);
    const bad = await t.http.patch(`/api/v1/settings/queues/${q.id}`).set(bearer(admin)).send({ is_paused: 'yes' });
    expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'body → is_paused']);
  });
});
