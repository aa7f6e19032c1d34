import { seedProcess } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { fieldsOf, ISO, settingsSuite, settingsWorld, UUID, type SettingsWorld } from './settings-fixtures';

describe('settings: queues', () => {
  const suite = settingsSuite('queues');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, patch, api } = suite;

  let n = 0;
  const zero = { total: 0, new: 0, in_progress: 0, pending_review: 0, completed: 0, failed: 0, dead_letter: 0 };

  it('creates a queue with max_retries 3 and max_consumers 1 by default, every field in the record', async () => {
    const q = await api().call('createQueue', { body: { name: 'facturas-entrada' } });
    expect(Object.keys(q).sort()).toEqual([
      'consumer_process_id', 'created_at', 'description', 'id', 'is_active', 'is_paused', 'item_counts', 'max_consumers', 'max_retries',
      'name', 'retention_action', 'retention_completed_days', 'retention_failed_days', 'tenant_id', 'unique_references', 'updated_at',
    ]);
    expect(q).toMatchObject({
      tenant_id: w.tenantA, name: 'facturas-entrada', description: null, max_retries: 3, consumer_process_id: null,
      max_consumers: 1, is_active: true, is_paused: false, item_counts: zero,
      retention_completed_days: 30, retention_failed_days: 90, retention_action: 'delete', unique_references: false,
    });
    expect(q.id).toMatch(UUID);
    expect(q.created_at).toMatch(ISO);
  });

  it('stores a consumer process of the same workspace with its limits', async () => {
    const proc = await seedProcess(t.sql, w.tenantA);
    const q = await api().call('createQueue', { body: { name: `q-${++n}`, description: 'd', max_retries: 0, consumer_process_id: proc.id, max_consumers: 100 } });
    expect(q).toMatchObject({ description: 'd', max_retries: 0, consumer_process_id: proc.id, max_consumers: 100 });
    const edge = await api().call('createQueue', { body: { name: `q-${++n}`, max_retries: 10 } });
    expect(edge.max_retries).toBe(10);
  });

  it('refuses a consumer process of another workspace or a missing one with 422', async () => {
    const foreign = await seedProcess(t.sql, w.tenantB);
    for (const id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      const res = await post({ name: `q-${++n}`, consumer_process_id: id });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'body → consumer_process_id', message: 'El proceso no existe en este workspace' }]);
    }
    const own = await api().call('createQueue', { body: { name: `q-${++n}` } });
    expect((await patch(own.id, { consumer_process_id: foreign.id })).status).toBe(422);
  });

  it.each([
    ['a missing name', {}, 'body → name'],
    ['max_retries -1', { name: 'x', max_retries: -1 }, 'body → max_retries'],
    ['max_retries 11', { name: 'x', max_retries: 11 }, 'body → max_retries'],
    ['a fractional max_retries', { name: 'x', max_retries: 2.5 }, 'body → max_retries'],
    ['a string max_retries', { name: 'x', max_retries: '3' }, 'body → max_retries'],
    ['max_consumers 0', { name: 'x', max_consumers: 0 }, 'body → max_consumers'],
    ['max_consumers 101', { name: 'x', max_consumers: 101 }, 'body → max_consumers'],
    ['a non-UUID consumer_process_id', { name: 'x', consumer_process_id: 'proc' }, 'body → consumer_process_id'],
    ['a numeric description', { name: 'x', description: 3 }, 'body → description'],
    ['a string is_active', { name: 'x', is_active: 'no' }, 'body → is_active'],
    ['an unknown field', { name: 'x', priority: 5 }, 'body → priority'],
    ['a negative retention_completed_days', { name: 'x', retention_completed_days: -1 }, 'body → retention_completed_days'],
    ['a string retention_failed_days', { name: 'x', retention_failed_days: '30' }, 'body → retention_failed_days'],
    ['a huge retention_failed_days', { name: 'x', retention_failed_days: 1e300 }, 'body → retention_failed_days'],
    ['an unknown retention_action', { name: 'x', retention_action: 'purge' }, 'body → retention_action'],
    ['a NUL in retention_action', { name: 'x', retention_action: 'delete\u0000' }, 'body → retention_action'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res.body)).toContain(field);
  });

  it('stores retention settings (fractions of a day allowed) and changes them with PATCH', async () => {
    const res = await post({ name: `q-${++n}`, retention_completed_days: 0.5, retention_failed_days: 365, retention_action: 'archive' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ retention_completed_days: 0.5, retention_failed_days: 365, retention_action: 'archive' });
    const changed = await patch(res.body.data.id, { retention_completed_days: 7, retention_action: 'delete' });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ retention_completed_days: 7, retention_failed_days: 365, retention_action: 'delete' });
    expect((await patch(res.body.data.id, { retention_action: null })).status).toBe(422);
  });

  it('answers a create with 201, and refuses a duplicate name with 409', async () => {
    expect((await post({ name: 'dup' })).status).toBe(201);
    const res = await post({ name: 'dup' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'CONFLICT', message: 'El recurso ya existe' });
  });

  it('shows item counts per status from the counters', async () => {
    const q = await api().call('createQueue', { body: { name: `q-${++n}` } });
    await t.sql`
      insert into queue_item_records (tenant_id, queue_id, status, data)
      select ${w.tenantA}, ${q.id}, s, '{}'::jsonb from unnest(array['new','new','new','failed','completed']) as s`;
    const read = await api().call('getQueue', { path: { id: q.id } });
    expect(read.item_counts).toEqual({ ...zero, total: 5, new: 3, failed: 1, completed: 1 });
    const list = await api().call('listWorkspaceQueues', { query: { limit: 100 } });
    const listed = list.find((x) => x.id === q.id);
    expect(listed?.item_counts.total).toBe(5);
  });

  it('updates only the fields sent, clears the consumer with null and deactivates with DELETE', async () => {
    const proc = await seedProcess(t.sql, w.tenantA);
    const q = await api().call('createQueue', { body: { name: `q-${++n}`, consumer_process_id: proc.id } });
    const updated = await api().call('updateQueue', { path: { id: q.id }, body: { max_retries: 5, max_consumers: 3 } });
    expect(updated).toEqual({ ...q, max_retries: 5, max_consumers: 3, updated_at: updated.updated_at });
    const cleared = await api().call('updateQueue', { path: { id: q.id }, body: { consumer_process_id: null } });
    expect(cleared.consumer_process_id).toBeNull();
    for (const body of [{ max_retries: 11 }, { max_consumers: 0 }, {}, { nombre: 'x' }]) {
      expect((await patch(q.id, body)).status).toBe(422);
    }
    const off = await api().call('deactivateQueue', { path: { id: q.id } });
    expect(off).toMatchObject({ id: q.id, is_active: false, max_retries: 5 });
    const [row] = await t.sql`select is_active from queues where id = ${q.id}`;
    expect(row!.is_active).toBe(false);
  });

  it('nudges the dispatch engine when a queue gains an active consumer', async () => {
    const seen: string[] = [];
    const t2 = await createApiTestContext();
    try {
      t2.deps.dispatch = { ...t2.deps.dispatch, queueItemsReady: async (queue) => void seen.push(queue.id) };
      const w2 = await settingsWorld(t2);
      const proc = await seedProcess(t2.sql, w2.tenantA);
      const api2 = apiClient(t2, { token: w2.admin });
      const q = await api2.call('createQueue', { body: { name: 'plain' } });
      expect(seen).toEqual([]);
      await api2.call('updateQueue', { path: { id: q.id }, body: { consumer_process_id: proc.id } });
      expect(seen).toEqual([q.id]);
    } finally {
      await t2.close();
    }
  });
});
