import { freePort, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, seedUser, startApiProcess, testSuite, type ApiProcess } from '@svc/testing';

/**
 * The stats' deadline forecast (docs/decisions/deadline-forecast.md) through a real API process on
 * a real Postgres: queues whose handling times are controlled (items completed with exact start and
 * end times), ready items with deadlines, machines of every kind and state; each field is checked
 * against the formula computed here, and the late items against the state gauge.
 */
describe('GET /api/v1/settings/queues/:queue_id/stats → forecast', () => {
  const suite = testSuite();
  jest.setTimeout(60_000);
  let api: ApiProcess;
  let metricsPort: number;
  let tenantId: string;
  let tenantName: string;
  let member: string;
  let adminB: string;
  let processId: string;

  /** Each test has a workspace of its own: the machines of a workspace serve every queue of it. */
  beforeEach(async () => {
    const sql = suite.ctx.sql;
    const tenant = await seedTenant(sql);
    tenantId = tenant.id as string;
    tenantName = tenant.name as string;
    member = (await seedUser(sql, tenantId, { role: 'member' })).token;
    processId = (await seedProcess(sql, tenantId)).id as string;
  });
  beforeAll(async () => {
    adminB = (await seedUser(suite.ctx.sql, (await seedTenant(suite.ctx.sql)).id, { role: 'admin' })).token;
    metricsPort = await freePort();
    api = await startApiProcess(suite.ctx.childEnv, { METRICS_PORT: String(metricsPort), METRICS_STATE_TTL_MS: '0' });
  });
  afterAll(async () => {
    await api?.stop();
  });

  const get = (queueId: string, token = member) =>
    fetch(`${api.url}/api/v1/settings/queues/${queueId}/stats`, { headers: { Authorization: `Bearer ${token}` } });
  const forecastOf = async (queueId: string) => {
    const res = await get(queueId);
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { ready: number; forecast: Forecast } }).data;
  };
  interface Forecast {
    handling_seconds_p50: number | null; consumers: number; ready_items: number; examined_items: number;
    drain_at: string | null; late_items: number | null; machines_needed: number | null;
  }
  interface Ready { priority: number; deadline: Date | null; created_at: Date }

  const addReady = async (queueId: string, items: Ready[]) => {
    for (const r of items) {
      await suite.ctx.sql`insert into queue_item_records (tenant_id, queue_id, data, priority, deadline, created_at)
                          values (${tenantId}, ${queueId}, '{}', ${r.priority}, ${r.deadline}, ${r.created_at})`;
    }
  };
  /** Items taken at a known time and completed exactly `seconds` later (the item trigger sees them complete). */
  const complete = async (queueId: string, seconds: number[], endedMinutesAgo = 10) => {
    for (const s of seconds) {
      const [row] = await suite.ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) values (${tenantId}, ${queueId}, '{}') returning id`;
      await suite.ctx.sql`update queue_items set status = 'in_progress', started_at = now() - make_interval(mins => ${endedMinutesAgo}) - make_interval(secs => ${s})
                          where id = ${row!.id}`;
      await suite.ctx.sql`update queue_items set status = 'completed', processed_at = started_at + make_interval(secs => ${s}),
                            updated_at = started_at + make_interval(secs => ${s}) where id = ${row!.id}`;
    }
  };

  /** The model, written again: take order, then item k ends at now + ceil((k + 1) / c) × p50. */
  const takeOrder = (items: Ready[]) => [...items].sort((a, b) =>
    b.priority - a.priority
    || (a.deadline?.getTime() ?? Infinity) - (b.deadline?.getTime() ?? Infinity)
    || a.created_at.getTime() - b.created_at.getTime());
  const lateWith = (ordered: Ready[], now: number, p50Ms: number, c: number) =>
    ordered.filter((r, k) => r.deadline !== null && now + Math.ceil((k + 1) / c) * p50Ms > r.deadline.getTime()).length;

  it('forecasts a queue at work: p50, consumers, drain time, late items and machines needed, each by its formula', async () => {
    const sql = suite.ctx.sql;
    // machines: the unattended ones that are online or busy lend their slots not held by other work
    const online = (await seedMachine(sql, tenantId, { slots: 2 })).row;
    const busy = (await seedMachine(sql, tenantId, { slots: 1, status: 'busy' })).row;
    const shared = (await seedMachine(sql, tenantId, { slots: 2 })).row;
    const attended = (await seedMachine(sql, tenantId, { slots: 1 })).row;
    await sql`update machines set kind = 'attended' where id = ${attended.id}`;
    await seedMachine(sql, tenantId, { slots: 5, status: 'offline' });
    await seedMachine(sql, tenantId, { slots: 5, is_active: false });
    const other = await seedProcess(sql, tenantId);
    await seedJob(sql, tenantId, { process_id: other.id as string, machine_id: shared.id as string, status: 'running' });

    const q = await seedQueue(sql, tenantId, { consumer_process_id: processId, max_consumers: 5 });
    const queueId = q.id as string;
    // the busy machine's slot is held by this queue's own consumer: it still counts
    const consumer = await seedJob(sql, tenantId, { process_id: processId, machine_id: busy.id as string, status: 'running' });
    await sql`update jobs set queue_id = ${queueId}, source = 'queue' where id = ${consumer.id}`;
    // a second trigger restricted to the attended machine (2 jobs at most, 1 slot there)
    await sql`insert into triggers (tenant_id, queue_id, process_id, machine_id, max_concurrent_jobs)
              values (${tenantId}, ${queueId}, ${processId}, ${attended.id}, 2)`;
    // unattended: online 2 + busy 1 + shared 2 − 1 other job = 4 (under the default trigger's 5); attended: 1
    const consumers = 5;

    // history: six items of 3.25, 5, 8.5, 11.5, 13 and 21 s → the median is (8.5 + 11.5) / 2 = 10 s;
    // one of 100 s ended two hours ago does not count, nor a failure
    await complete(queueId, [3.25, 5, 8.5, 11.5, 13, 21]);
    await complete(queueId, [100], 120);
    const [failed] = await sql`insert into queue_item_records (tenant_id, queue_id, data) values (${tenantId}, ${queueId}, '{}') returning id`;
    await sql`update queue_items set status = 'in_progress', started_at = now() - interval '1 second' where id = ${failed!.id}`;
    await sql`update queue_items set status = 'failed', processed_at = now(), error_message = 'x' where id = ${failed!.id}`;
    const p50Ms = 10_000;

    // ready: 23 items over three priorities; deadlines fall 5 s off every multiple of the p50, so the
    // few seconds between this clock and the database's move none across; one deadline has passed
    const base = Date.now();
    const at = (s: number) => new Date(base + s * 1000);
    const ready: Ready[] = [];
    const deadlines = [15, 25, null, 35, 5, -60, null, 45, 25, 55, 15, null, 65, 35, 25, 95, null, 45, 15, 75, null, 35, 105];
    deadlines.forEach((d, i) => ready.push({ priority: [3, 5, 3, 1][i % 4]!, deadline: d === null ? null : at(d), created_at: new Date(base - 600_000 + i * 1000) }));
    await addReady(queueId, ready);
    // neither a postponed item nor one in progress is ready
    await sql`insert into queue_item_records (tenant_id, queue_id, data, deadline, postpone) values (${tenantId}, ${queueId}, '{}', ${at(1)}, ${at(3600)})`;
    const [held] = await sql`insert into queue_item_records (tenant_id, queue_id, data, deadline) values (${tenantId}, ${queueId}, '{}', ${at(1)}) returning id`;
    await sql`update queue_items set status = 'in_progress', started_at = now() where id = ${held!.id}`;

    const d = await forecastOf(queueId);
    const f = d.forecast;
    expect(f).toMatchObject({ handling_seconds_p50: 10, consumers, ready_items: 23, examined_items: 23 });
    expect(d.ready).toBe(23);
    // drain_at = now + ceil(23 / 5) × 10 s: the database's now, read back from it
    const now = Date.parse(f.drain_at!) - Math.ceil(23 / consumers) * p50Ms;
    expect(Math.abs(now - Date.now())).toBeLessThan(5_000);
    const ordered = takeOrder(ready);
    const late = lateWith(ordered, now, p50Ms, consumers);
    expect(late).toBeGreaterThan(1);
    expect(f.late_items).toBe(late);
    // the fewest consumers with which only the items that cannot make it (less than a p50 away) are late
    const hopeless = ordered.filter((r) => r.deadline !== null && r.deadline.getTime() - now < p50Ms).length;
    let needed = 1;
    while (lateWith(ordered, now, p50Ms, needed) > hopeless) needed += 1;
    expect(needed).toBeGreaterThan(consumers);
    expect(f.machines_needed).toBe(needed);

    // the state gauge reports the same late items for the queue
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain(`svc_queue_late_items{tenant="${tenantName}",queue="${q.name}"} ${late}`);

    // a paused queue has no consumers: nothing drains, every item with a deadline is late
    await sql`update queues set is_paused = true where id = ${queueId}`;
    const paused = (await forecastOf(queueId)).forecast;
    expect(paused).toMatchObject({ consumers: 0, drain_at: null, late_items: ready.filter((r) => r.deadline).length, machines_needed: needed });
  });

  it('knows nothing but the counts without history, and answers nulls where the formula needs a pace', async () => {
    const sql = suite.ctx.sql;
    await seedMachine(sql, tenantId, { slots: 3 });
    const q = await seedQueue(sql, tenantId, { consumer_process_id: processId, max_consumers: 1 });
    await addReady(q.id as string, [{ priority: 3, deadline: new Date(Date.now() + 60_000), created_at: new Date() }, { priority: 3, deadline: null, created_at: new Date() }]);
    // an item completed an hour and a half ago is not history
    await complete(q.id as string, [4], 90);
    expect((await forecastOf(q.id as string)).forecast).toEqual({
      handling_seconds_p50: null, consumers: 1, ready_items: 2, examined_items: 2, drain_at: null, late_items: null, machines_needed: null,
    });
  });

  it('without consumers drains nothing, counts every deadline late and says how many would make them', async () => {
    const sql = suite.ctx.sql;
    // a machine waits, but no trigger of the queue names a process to consume it
    await seedMachine(sql, tenantId, { slots: 3 });
    const q = await seedQueue(sql, tenantId);
    await complete(q.id as string, [4, 4, 4]);
    const now = Date.now();
    await addReady(q.id as string, [
      { priority: 3, deadline: new Date(now + 30_000), created_at: new Date(now - 3000) },
      { priority: 3, deadline: new Date(now + 3_600_000), created_at: new Date(now - 2000) },
      { priority: 3, deadline: null, created_at: new Date(now - 1000) },
    ]);
    expect((await forecastOf(q.id as string)).forecast).toEqual({
      handling_seconds_p50: 4, consumers: 0, ready_items: 3, examined_items: 3, drain_at: null, late_items: 2, machines_needed: 1,
    });
    // nothing has a deadline: nothing is late and no number of machines is asked for
    const plain = await seedQueue(sql, tenantId);
    await complete(plain.id as string, [2]);
    await addReady(plain.id as string, [{ priority: 3, deadline: null, created_at: new Date() }]);
    expect((await forecastOf(plain.id as string)).forecast).toMatchObject({ handling_seconds_p50: 2, late_items: 0, machines_needed: null });
  });

  it('answers another workspace\'s queue with 404 and hostile ids with 422 or 404, in the contract\'s envelope', async () => {
    const q = await seedQueue(suite.ctx.sql, tenantId);
    const foreign = await get(q.id as string, adminB);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    const unknown = await get('00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    for (const bad of ['12', 'not-a-uuid', '%00', `${q.id}'%20or%201=1`, '..%2F..%2Fmachines', 'x'.repeat(5000)]) {
      const res = await get(bad);
      expect([404, 422]).toContain(res.status);
      expect(await res.json()).toMatchObject({ success: false, error: { code: res.status === 404 ? 'NOT_FOUND' : 'VALIDATION_ERROR' } });
    }
  });
});
