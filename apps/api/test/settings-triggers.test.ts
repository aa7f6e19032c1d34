import type { BodyOf } from '@svc/client';
import { seedMachine, seedProcess, seedQueue } from '@svc/testing';
import type { ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, ISO, settingsSuite, UUID, type SettingsWorld } from './settings-fixtures';

/** /settings/triggers (docs/decisions/triggers.md): the record, its checks, who may do what, and the queue's default trigger. */
const TRIGGER_FIELDS = [
  'created_at', 'id', 'is_active', 'is_queue_default', 'machine_id', 'max_concurrent_jobs', 'min_items_to_start', 'process_id',
  'queue_id', 'tenant_id', 'type', 'updated_at',
];
const MISSING = '00000000-0000-4000-8000-000000000000';

describe('settings: triggers', () => {
  const suite = settingsSuite('triggers');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, patch, api } = suite;
  const base = '/api/v1/settings/triggers';
  const create = (body: BodyOf<'createQueueTrigger'>) => api().call('createQueueTrigger', { body });
  const update = (id: string, body: BodyOf<'updateQueueTrigger'>) => api().call('updateQueueTrigger', { path: { id }, body });

  /** A queue and a process of workspace A (the queue without consumer settings unless told). */
  const world = async (queueFields: Record<string, unknown> = {}) => {
    const proc = await seedProcess(t.sql, w.tenantA);
    const queue = await seedQueue(t.sql, w.tenantA, queueFields);
    return { proc, queue };
  };

  it('creates a queue trigger with its defaults, every field in the record, and reads it back', async () => {
    const { proc, queue } = await world();
    const res = await post({ type: 'queue', queue_id: queue.id, process_id: proc.id });
    expect(res.status).toBe(201);
    const tr = res.body.data;
    expect(Object.keys(tr).sort()).toEqual(TRIGGER_FIELDS);
    expect(tr).toMatchObject({
      tenant_id: w.tenantA, type: 'queue', queue_id: queue.id, process_id: proc.id, machine_id: null, max_concurrent_jobs: 1,
      min_items_to_start: 1, is_active: true, is_queue_default: false,
    });
    expect(tr.id).toMatch(UUID);
    expect(tr.created_at).toMatch(ISO);
    expect(tr.updated_at).toMatch(ISO);
    expect(await api().call('getQueueTrigger', { path: { id: tr.id } })).toEqual(tr);

    // a new trigger is not the queue's default: the queue's consumer settings stay as they were
    const [q] = await t.sql`select consumer_process_id from queues where id = ${queue.id}`;
    expect(q!.consumer_process_id).toBeNull();
    const [audit] = await t.sql`select action, actor_type, source, details from audit_log where resource_id = ${tr.id}`;
    expect(audit).toMatchObject({ action: 'create_trigger', actor_type: 'user', source: 'api', details: { name: `queue:${queue.id}` } });
  });

  it('stores every field given, an attended machine of the workspace included', async () => {
    const { proc, queue } = await world();
    const { row: machine } = await seedMachine(t.sql, w.tenantA);
    await t.sql`update machines set kind = 'attended' where id = ${machine.id}`;
    const made = await create({
      type: 'queue', queue_id: queue.id, process_id: proc.id, machine_id: machine.id, max_concurrent_jobs: 100,
      min_items_to_start: 10000, is_active: false,
    });
    expect(made).toMatchObject({ machine_id: machine.id, max_concurrent_jobs: 100, min_items_to_start: 10000, is_active: false });
  });

  it.each([
    ['a missing type', { queue_id: MISSING, process_id: MISSING }, 'body → type'],
    ['a type other than queue', { type: 'time', queue_id: MISSING, process_id: MISSING }, 'body → type'],
    ['a missing queue_id', { type: 'queue', process_id: MISSING }, 'body → queue_id'],
    ['a non-UUID queue_id', { type: 'queue', queue_id: 'cola', process_id: MISSING }, 'body → queue_id'],
    ['a missing process_id', { type: 'queue', queue_id: MISSING }, 'body → process_id'],
    ['a null process_id', { type: 'queue', queue_id: MISSING, process_id: null }, 'body → process_id'],
    ['max_concurrent_jobs 0', { type: 'queue', queue_id: MISSING, process_id: MISSING, max_concurrent_jobs: 0 }, 'body → max_concurrent_jobs'],
    ['max_concurrent_jobs 101', { type: 'queue', queue_id: MISSING, process_id: MISSING, max_concurrent_jobs: 101 }, 'body → max_concurrent_jobs'],
    ['a fractional max_concurrent_jobs', { type: 'queue', queue_id: MISSING, process_id: MISSING, max_concurrent_jobs: 1.5 }, 'body → max_concurrent_jobs'],
    ['min_items_to_start 0', { type: 'queue', queue_id: MISSING, process_id: MISSING, min_items_to_start: 0 }, 'body → min_items_to_start'],
    ['min_items_to_start 10001', { type: 'queue', queue_id: MISSING, process_id: MISSING, min_items_to_start: 10001 }, 'body → min_items_to_start'],
    ['a string min_items_to_start', { type: 'queue', queue_id: MISSING, process_id: MISSING, min_items_to_start: '5' }, 'body → min_items_to_start'],
    ['a non-UUID machine_id', { type: 'queue', queue_id: MISSING, process_id: MISSING, machine_id: 'robot' }, 'body → machine_id'],
    ['a string is_active', { type: 'queue', queue_id: MISSING, process_id: MISSING, is_active: 'yes' }, 'body → is_active'],
    ['is_queue_default (set by the queue)', { type: 'queue', queue_id: MISSING, process_id: MISSING, is_queue_default: true }, 'body → is_queue_default'],
    ['an unknown field', { type: 'queue', queue_id: MISSING, process_id: MISSING, cron: '* * * * *' }, 'body → cron'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res.body)).toContain(field);
  });

  it.each([
    ['queue_id', 'La cola no existe en este workspace'],
    ['process_id', 'El proceso no existe en este workspace'],
    ['machine_id', 'La máquina no existe en este workspace'],
  ])('refuses another workspace\'s or a missing %s with 422 naming it', async (field, message) => {
    const { proc, queue } = await world();
    const foreign = {
      queue_id: (await seedQueue(t.sql, w.tenantB)).id,
      process_id: (await seedProcess(t.sql, w.tenantB)).id,
      machine_id: (await seedMachine(t.sql, w.tenantB)).row.id,
    }[field]!;
    for (const id of [foreign, MISSING]) {
      const res = await post({ type: 'queue', queue_id: queue.id, process_id: proc.id, [field]: id });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: `body → ${field}`, message }]);
    }
    if (field !== 'queue_id') {
      const own = await create({ type: 'queue', queue_id: queue.id, process_id: proc.id });
      const res = await patch(own.id, { [field]: foreign });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: `body → ${field}`, message }]);
    }
    const [{ n }] = await t.sql`select count(*)::int as n from triggers where ${t.sql(field)} = ${foreign}`;
    expect(n).toBe(0);
  });

  it('changes only the fields sent; type and queue_id are fixed; an empty body is refused', async () => {
    const { proc, queue } = await world();
    const other = await seedProcess(t.sql, w.tenantA);
    const { row: machine } = await seedMachine(t.sql, w.tenantA);
    const tr = await create({ type: 'queue', queue_id: queue.id, process_id: proc.id });
    const updated = await update(tr.id, { process_id: other.id, machine_id: machine.id, max_concurrent_jobs: 4, min_items_to_start: 20 });
    expect(updated).toMatchObject({ ...tr, process_id: other.id, machine_id: machine.id, max_concurrent_jobs: 4, min_items_to_start: 20, updated_at: expect.any(String) });
    expect((await update(tr.id, { machine_id: null })).machine_id).toBeNull();
    for (const [body, field] of [[{ queue_id: queue.id }, 'body → queue_id'], [{ type: 'queue' }, 'body → type'], [{ max_concurrent_jobs: 0 }, 'body → max_concurrent_jobs']] as const) {
      const bad = await patch(tr.id, body);
      expect(bad.status).toBe(422);
      expect(fieldsOf(bad.body)).toContain(field);
    }
    expect((await patch(tr.id, {})).status).toBe(422);
    const [audit] = await t.sql`select details from audit_log where resource_id = ${tr.id} and action = 'update_trigger' order by id limit 1`;
    expect(audit!.details).toEqual({ fields: ['process_id', 'machine_id', 'max_concurrent_jobs', 'min_items_to_start'] });
  });

  it('deactivates with DELETE (the record stays) and filters the list by queue and activity, oldest first', async () => {
    const { proc, queue } = await world();
    const a = await create({ type: 'queue', queue_id: queue.id, process_id: proc.id });
    const b = await create({ type: 'queue', queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 2 });
    expect((await api().call('deactivateQueueTrigger', { path: { id: a.id } })).is_active).toBe(false);
    const all = await api().request('listWorkspaceQueueTriggers', { query: { queue_id: queue.id } });
    expect(all.data.map((x) => x.id)).toEqual([a.id, b.id]);
    expect(all.meta).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });
    const active = await api().call('listWorkspaceQueueTriggers', { query: { queue_id: queue.id, is_active: true } });
    expect(active.map((x) => x.id)).toEqual([b.id]);
    const bad = await t.http.get(`${base}?queue_id=cola`).set(bearer(w.admin));
    expect([bad.status, fieldsOf(bad.body)]).toEqual([422, ['query → queue_id']]);
  });

  it('lets members read but not write, and answers another workspace\'s trigger with 404', async () => {
    const { proc, queue } = await world();
    const tr = await create({ type: 'queue', queue_id: queue.id, process_id: proc.id });
    expect((await api(w.member).call('listWorkspaceQueueTriggers', { query: { queue_id: queue.id } })).map((x) => x.id)).toEqual([tr.id]);
    expect(await api(w.member).call('getQueueTrigger', { path: { id: tr.id } })).toEqual(tr);
    const refused = [
      await post({ type: 'queue', queue_id: queue.id, process_id: proc.id }, w.member),
      await patch(tr.id, { max_concurrent_jobs: 3 }, w.member),
      await t.http.delete(`${base}/${tr.id}`).set(bearer(w.member)),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403]);
    expect((await t.http.get(base)).status).toBe(401);

    const foreign = [
      await t.http.get(`${base}/${tr.id}`).set(bearer(w.adminB)),
      await patch(tr.id, { max_concurrent_jobs: 3 }, w.adminB),
      await t.http.delete(`${base}/${tr.id}`).set(bearer(w.adminB)),
    ];
    expect(foreign.map((r) => [r.status, r.body.error.code])).toEqual([[404, 'NOT_FOUND'], [404, 'NOT_FOUND'], [404, 'NOT_FOUND']]);
    const listB = await api(w.adminB).call('listWorkspaceQueueTriggers');
    expect(listB.map((x) => x.id)).not.toContain(tr.id);
    const [still] = await t.sql`select max_concurrent_jobs, is_active from triggers where id = ${tr.id}`;
    expect(still).toEqual({ max_concurrent_jobs: 1, is_active: true });
  });

  describe("a queue's consumer settings are its default trigger", () => {
    const defaultOf = async (queueId: string) =>
      (await api().call('listWorkspaceQueueTriggers', { query: { queue_id: queueId } })).filter((x) => x.is_queue_default);
    const queueOf = (id: string) => api().call('getQueue', { path: { id } });
    const createQueue = (body: BodyOf<'createQueue'>) => api().call('createQueue', { body });
    const updateQueue = (id: string, body: BodyOf<'updateQueue'>) => api().call('updateQueue', { path: { id }, body });

    it('a queue created with a consumer has one, shown by the triggers routes', async () => {
      const proc = await seedProcess(t.sql, w.tenantA);
      const q = await createQueue({ name: 'con-consumidor', consumer_process_id: proc.id, max_consumers: 3 });
      expect(await defaultOf(q.id)).toEqual([expect.objectContaining({
        type: 'queue', queue_id: q.id, process_id: proc.id, max_concurrent_jobs: 3, min_items_to_start: 1, machine_id: null,
        is_active: true, is_queue_default: true,
      })]);
      const bare = await createQueue({ name: 'sin-consumidor' });
      expect(await defaultOf(bare.id)).toEqual([]);
    });

    it('queue settings → trigger: a new consumer or maximum changes it, no consumer deactivates it, and a consumer again reactivates it', async () => {
      const proc = await seedProcess(t.sql, w.tenantA);
      const next = await seedProcess(t.sql, w.tenantA);
      const q = await createQueue({ name: 'sync-1', consumer_process_id: proc.id });
      const [d] = await defaultOf(q.id);
      await update(d!.id, { min_items_to_start: 5 });

      await updateQueue(q.id, { consumer_process_id: next.id, max_consumers: 6 });
      expect(await defaultOf(q.id)).toEqual([expect.objectContaining({ id: d!.id, process_id: next.id, max_concurrent_jobs: 6, min_items_to_start: 5, is_active: true })]);
      await updateQueue(q.id, { consumer_process_id: null });
      expect(await defaultOf(q.id)).toEqual([expect.objectContaining({ id: d!.id, is_active: false })]);
      await updateQueue(q.id, { consumer_process_id: proc.id });
      // the same trigger again, its own settings kept
      expect(await defaultOf(q.id)).toEqual([expect.objectContaining({ id: d!.id, process_id: proc.id, min_items_to_start: 5, is_active: true })]);
    });

    it('trigger → queue settings: PATCH and DELETE of the default trigger show on the queue; another trigger does not', async () => {
      const proc = await seedProcess(t.sql, w.tenantA);
      const next = await seedProcess(t.sql, w.tenantA);
      const q = await createQueue({ name: 'sync-2', consumer_process_id: proc.id });
      const [d] = await defaultOf(q.id);
      const id = d!.id;
      expect(await update(id, { process_id: next.id, max_concurrent_jobs: 9 })).toMatchObject({ id, process_id: next.id, max_concurrent_jobs: 9 });
      expect(await queueOf(q.id)).toMatchObject({ consumer_process_id: next.id, max_consumers: 9 });
      expect(await api().call('deactivateQueueTrigger', { path: { id } })).toMatchObject({ id, is_active: false });
      expect(await queueOf(q.id)).toMatchObject({ consumer_process_id: null, max_consumers: 9 });
      await update(id, { is_active: true });
      expect(await queueOf(q.id)).toMatchObject({ consumer_process_id: next.id });

      const extra = await create({ type: 'queue', queue_id: q.id, process_id: proc.id, max_concurrent_jobs: 2 });
      await update(extra.id, { max_concurrent_jobs: 50 });
      await api().call('deactivateQueueTrigger', { path: { id: extra.id } });
      expect(await queueOf(q.id)).toMatchObject({ consumer_process_id: next.id, max_consumers: 9 });
    });

    it('a queue written by SQL (a script, a fixture) keeps its default trigger in step too', async () => {
      const proc = await seedProcess(t.sql, w.tenantA);
      const q = await seedQueue(t.sql, w.tenantA, { consumer_process_id: proc.id, max_consumers: 4 });
      const [row] = await t.sql`select process_id, max_concurrent_jobs, is_active from triggers where queue_id = ${q.id} and is_queue_default`;
      expect(row).toEqual({ process_id: proc.id, max_concurrent_jobs: 4, is_active: true });
      await t.sql`update queues set max_consumers = 2 where id = ${q.id}`;
      const [after] = await t.sql`select max_concurrent_jobs from triggers where queue_id = ${q.id} and is_queue_default`;
      expect(after!.max_concurrent_jobs).toBe(2);
    });
  });
});
