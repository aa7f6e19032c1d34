import { percentileOf } from '@svc/core/internals';
import { seedMachine, seedQueue, seedTenant, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer } from './settings-fixtures';

/**
 * GET /settings/queues/{queue_id}/series and GET /settings/machines/series
 * (docs/decisions/queue-series.md): the series answer what was written, bucket by bucket.
 */
describe('queue and machine series', () => {
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

  const series = (queueId: string, query = '', token = member) => t.http.get(`/api/v1/settings/queues/${queueId}/series${query}`).set(bearer(token));
  /** the database's current minute: the buckets are written and read against its clock */
  const dbMinute = async () => ((await t.sql`select date_trunc('minute', now()) as m`)[0]!.m as Date);
  const minus = (d: Date, minutes: number) => new Date(d.getTime() - minutes * 60_000);
  type Point = { at: string; completed: number; failed: number; backlog: number | null; in_progress: number | null; p50_ms: number | null; p95_ms: number | null };
  const at = (points: Point[], d: Date) => points.find((p) => Date.parse(p.at) === d.getTime());

  it('answers, minute by minute over the hour, the items completed and failed, the backlog and the percentiles written', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const queueId = q.id as string;
    const now = await dbMinute();
    // buckets of past minutes, in two shards (a reader sums them), and one past the hour
    const written = [
      { minute: minus(now, 5), shard: 0, completed: 4, failed: 1 },
      { minute: minus(now, 5), shard: 3, completed: 2, failed: 0 },
      { minute: minus(now, 30), shard: 1, completed: 7, failed: 2 },
      { minute: minus(now, 57), shard: 0, completed: 1, failed: 0 },
      { minute: minus(now, 61), shard: 0, completed: 50, failed: 5 },
    ];
    for (const w of written) {
      await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                  values (${queueId}, ${w.minute}, ${w.shard}, ${w.completed}, ${w.failed}, 0, 0)`;
    }
    await t.sql`insert into queue_minute_samples (queue_id, minute, backlog, in_progress) values (${queueId}, ${minus(now, 5)}, 40, 3), (${queueId}, ${minus(now, 30)}, 12, 1)`;
    // items finished now through the trigger: three completed after 2, 4 and 6 s, one failed
    const ids = (await t.sql`
      insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${queueId}, '{}' from generate_series(1, 4) returning id`).map((r) => r.id as string);
    await t.sql`update queue_items set status = 'in_progress', started_at = now() - interval '10 seconds' where id = any(${ids}::uuid[])`;
    await t.sql`update queue_items set status = 'completed',
                  processed_at = started_at + make_interval(secs => case id when ${ids[0]!}::uuid then 2 when ${ids[1]!}::uuid then 4 else 6 end)
                where id = any(${ids.slice(0, 3)}::uuid[])`;
    await t.sql`update queue_items set status = 'failed', processed_at = now() where id = ${ids[3]!}`;
    const [live] = await t.sql`select minute, sum(completed)::int as completed, sum(failed)::int as failed from queue_item_minutes
                               where queue_id = ${queueId} and minute >= ${minus(now, 1)} group by minute`;

    const res = await series(queueId);
    expect(res.status).toBe(200);
    const d = res.body.data as { window: string; step_seconds: number; points: Point[] };
    expect([d.window, d.step_seconds, d.points.length]).toEqual(['hour', 60, 60]);
    // every minute once, oldest first, a minute apart
    for (let i = 1; i < d.points.length; i++) expect(Date.parse(d.points[i]!.at) - Date.parse(d.points[i - 1]!.at)).toBe(60_000);
    expect(at(d.points, minus(now, 5))).toEqual({ at: minus(now, 5).toISOString(), completed: 6, failed: 1, backlog: 40, in_progress: 3, p50_ms: null, p95_ms: null });
    expect(at(d.points, minus(now, 30))).toMatchObject({ completed: 7, failed: 2, backlog: 12, in_progress: 1 });
    expect(at(d.points, minus(now, 57))).toMatchObject({ completed: 1, failed: 0, backlog: null });
    expect(at(d.points, minus(now, 61))).toBeUndefined();
    const current = at(d.points, live!.minute as Date)!;
    expect([current.completed, current.failed]).toEqual([3, 1]);
    // the histogram's middle bucket for 4 s and 6 s, each within ±9% of the exact time
    expect(current.p50_ms).toBe(percentileOf([{ bucket: Math.floor(4 * Math.log2(4000)), n: 1 }], 50));
    expect(Math.abs(current.p50_ms! - 4000) / 4000).toBeLessThan(0.09);
    expect(Math.abs(current.p95_ms! - 6000) / 6000).toBeLessThan(0.09);
    // the minutes nothing happened in answer zeros, not gaps
    expect(d.points.filter((p) => p.completed === 0 && p.failed === 0).length).toBe(60 - 4);
    // the series and the stats read the same minutes
    const stats = (await t.http.get(`/api/v1/settings/queues/${queueId}/stats`).set(bearer(member))).body.data;
    const sum = (k: 'completed' | 'failed') => d.points.reduce((s, p) => s + p[k], 0);
    expect([sum('completed'), sum('failed')]).toEqual([stats.completed_last_hour, stats.failed_last_hour]);
  });

  it('answers the day by five minutes, each bucket the sum of its minutes and the highest backlog sampled', async () => {
    const q = await seedQueue(t.sql, tenantId);
    const queueId = q.id as string;
    const now = await dbMinute();
    const [{ bin }] = await t.sql`select date_bin(interval '5 minutes', ${minus(now, 180)}::timestamptz, timestamptz '2000-01-01') as bin` as unknown as [{ bin: Date }];
    for (const [offset, completed] of [[0, 3], [1, 4], [4, 5]] as const) {
      await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                  values (${queueId}, ${new Date(bin.getTime() + offset * 60_000)}, 0, ${completed}, 0, 0, 0)`;
    }
    await t.sql`insert into queue_minute_samples (queue_id, minute, backlog, in_progress)
                values (${queueId}, ${bin}, 9, 0), (${queueId}, ${new Date(bin.getTime() + 120_000)}, 15, 2)`;
    // histogram: 90 items near 100 ms and 10 near 10 s
    await t.sql`insert into queue_item_minute_times (queue_id, minute, shard, bucket, n)
                values (${queueId}, ${bin}, 0, ${Math.floor(4 * Math.log2(100))}, 90), (${queueId}, ${bin}, 0, ${Math.floor(4 * Math.log2(10_000))}, 10)`;
    // a bucket older than the day is not read
    await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                values (${queueId}, ${minus(now, 25 * 60)}, 0, 99, 0, 0, 0)`;
    const d = (await series(queueId, '?window=day')).body.data as { window: string; step_seconds: number; points: Point[] };
    expect([d.window, d.step_seconds, d.points.length]).toEqual(['day', 300, 288]);
    expect(at(d.points, bin)).toMatchObject({ completed: 12, failed: 0, backlog: 15, in_progress: 2 });
    const p = at(d.points, bin)!;
    expect(Math.abs(p.p50_ms! - 100) / 100).toBeLessThan(0.09);
    expect(Math.abs(p.p95_ms! - 10_000) / 10_000).toBeLessThan(0.09);
    expect(d.points.reduce((s, x) => s + x.completed, 0)).toBe(12);
  });

  it('samples each active queue\'s backlog and each machine\'s busy slots once a minute, whoever asks first, and the purge keeps a day', async () => {
    const tenant = (await seedTenant(t.sql)).id;
    const token = (await seedUser(t.sql, tenant, { role: 'member' })).token;
    const q = await seedQueue(t.sql, tenant);
    await t.sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenant}, ${q.id as string}, '{}' from generate_series(1, 5)`;
    const busy = (await seedMachine(t.sql, tenant, { name: 'a-busy' })).row;
    const idle = (await seedMachine(t.sql, tenant, { name: 'b-idle' })).row;
    await t.sql`update machines set slots = 4, running_jobs = 3 where id = ${busy.id}`;
    await t.sql`update machines set slots = 2, running_jobs = 0 where id = ${idle.id}`;
    // start from a minute no other test of this database claimed
    await t.sql`delete from stat_sample_minutes`;
    const sweeps = t.deps.engine.sweeps;
    const [first, second] = await Promise.all([sweeps.sampleMinute(), sweeps.sampleMinute()]);
    // two replicas at once: one claims and writes, the other finds the minute taken
    expect([first.claimed, second.claimed].sort()).toEqual([false, true]);
    const [sample] = await t.sql`select minute, backlog, in_progress from queue_minute_samples where queue_id = ${q.id as string}`;
    expect([Number(sample!.backlog), Number(sample!.in_progress)]).toEqual([5, 0]);

    const queueSeries = (await series(q.id as string, '', token)).body.data as { points: Point[] };
    expect(at(queueSeries.points, sample!.minute as Date)).toMatchObject({ backlog: 5, in_progress: 0 });

    const res = await t.http.get('/api/v1/settings/machines/series').set(bearer(token));
    expect(res.status).toBe(200);
    type MPoint = { at: string; busy: number | null; slots: number | null };
    const m = res.body.data as { window: string; total: MPoint[]; machines: Array<{ id: string; name: string; points: MPoint[] }> };
    expect(m.machines.map((x) => x.name)).toEqual(['a-busy', 'b-idle']);
    const when = (points: MPoint[]) => points.find((p) => Date.parse(p.at) === (sample!.minute as Date).getTime());
    expect(when(m.total)).toMatchObject({ busy: 3, slots: 6 });
    expect(when(m.machines[0]!.points)).toMatchObject({ busy: 3, slots: 4 });
    expect(when(m.machines[1]!.points)).toMatchObject({ busy: 0, slots: 2 });
    expect(m.total.length).toBe(60);
    // another workspace sees none of these machines
    const other = (await t.http.get('/api/v1/settings/machines/series?window=day').set(bearer(adminB))).body.data;
    expect([other.window, other.machines, other.total.length]).toEqual(['day', [], 288]);

    // the purge drops what is past the day and keeps the rest
    await t.sql`insert into queue_minute_samples (queue_id, minute, backlog, in_progress) values (${q.id as string}, now() - interval '26 hours', 1, 0)`;
    await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed) values (${q.id as string}, date_trunc('minute', now()) - interval '23 hours', 0, 1, 0, 0, 0)`;
    await sweeps.oldQueueStatBuckets();
    const [left] = await t.sql`select (select count(*) from queue_minute_samples where queue_id = ${q.id as string})::int as samples,
                                      (select count(*) from queue_item_minutes where queue_id = ${q.id as string})::int as buckets`;
    expect([left!.samples, left!.buckets]).toEqual([1, 1]);
  });

  it('refuses a bad window, answers another workspace\'s queue with 404, a malformed id with 422, no token with 401; members read', async () => {
    const q = await seedQueue(t.sql, tenantId);
    for (const bad of ['?window=week', '?window=', '?window=hour%00', '?window[a]=1', `?window=${'h'.repeat(5000)}`, '?other=1']) {
      const res = await series(q.id as string, bad, admin);
      expect([bad, res.status, res.body.error?.code]).toEqual([bad, 422, 'VALIDATION_ERROR']);
      expect(res.body.error.message).toMatch(/[áéíóúñ]|solicitud|válid/i);
      const machines = await t.http.get(`/api/v1/settings/machines/series${bad}`).set(bearer(admin));
      expect([bad, machines.status]).toEqual([bad, 422]);
    }
    const foreign = await series(q.id as string, '', adminB);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'NOT_FOUND']);
    for (const bad of ['12', 'not-a-uuid', '%00']) {
      const res = await t.http.get(`/api/v1/settings/queues/${bad}/series`).set(bearer(admin));
      expect([bad, res.status]).toEqual([bad, 422]);
    }
    expect((await t.http.get(`/api/v1/settings/queues/${q.id}/series`)).status).toBe(401);
    expect((await t.http.get('/api/v1/settings/machines/series')).status).toBe(401);
    expect((await t.http.get('/api/v1/settings/machines/series').set({ Authorization: 'Bearer nope' })).status).toBe(401);
    expect((await series(q.id as string, '?window=day', member)).status).toBe(200);
    expect((await t.http.get('/api/v1/settings/machines/series?window=hour').set(bearer(member))).status).toBe(200);
  });
});
