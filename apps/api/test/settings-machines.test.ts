import { sha256 } from '@svc/core/internals';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, ISO, settingsSuite, settingsWorld, UUID, type SettingsWorld } from './settings-fixtures';

const MACHINE_FIELDS = [
  'agent_version', 'created_at', 'description', 'environments', 'id', 'is_active', 'kind', 'last_heartbeat_at', 'name', 'running_jobs', 'slots',
  'status', 'tenant_id', 'updated_at',
];

describe('settings: machines', () => {
  const suite = settingsSuite('machines');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, api } = suite;
  const create = (body: { name: string; description?: string; slots?: number; kind?: 'attended' | 'unattended' }, token?: string) =>
    api(token).call('createMachine', { body });

  let n = 0;

  it('creates a machine and returns the documented record plus its machine key, once', async () => {
    const m = await create({ name: 'robot-01', description: 'Sala 2', slots: 4 });
    expect(Object.keys(m).sort()).toEqual([...MACHINE_FIELDS, 'machine_key'].sort());
    expect(m).toMatchObject({
      tenant_id: w.tenantA, name: 'robot-01', description: 'Sala 2', status: 'offline', slots: 4, kind: 'unattended', running_jobs: 0,
      is_active: true, environments: null, last_heartbeat_at: null, agent_version: null,
    });
    expect(m.id).toMatch(UUID);
    expect(m.created_at).toMatch(ISO);
    expect(m.machine_key).toMatch(/^svc_mk_[A-Za-z0-9_-]{40,}$/);

    const got = await api().request('getMachine', { path: { id: m.id } });
    expect(Object.keys(got.data).sort()).toEqual(MACHINE_FIELDS);
    expect(JSON.stringify(got)).not.toContain(m.machine_key);
    const list = await api().request('listWorkspaceMachines');
    expect(list.data.map((x) => x.id)).toContain(m.id);
    expect(JSON.stringify(list)).not.toContain(m.machine_key);
  });

  it('stores only the SHA-256 of the machine key and its 12-character prefix', async () => {
    const m = await create({ name: `m-${++n}` });
    const [row] = await t.sql`select machine_key_hash, machine_key_prefix from machines where id = ${m.id}`;
    expect(Buffer.compare(row!.machine_key_hash, sha256(m.machine_key))).toBe(0);
    expect(row!.machine_key_prefix).toBe(m.machine_key.slice(0, 12));
    const dump = JSON.stringify(await t.sql`select * from machines where id = ${m.id}`);
    expect(dump).not.toContain(m.machine_key);
    const audit = JSON.stringify(await t.sql`select * from audit_log where resource_id = ${m.id}`);
    expect(audit).toContain('create_machine');
    expect(audit).not.toContain(m.machine_key);
  });

  it('rotates the key: a new secret is returned once and the old hash no longer matches', async () => {
    const m = await create({ name: `m-${++n}` });
    const rotated = await api().call('rotateMachineKey', { path: { id: m.id } });
    expect(rotated.machine_key).toMatch(/^svc_mk_/);
    expect(rotated.machine_key).not.toBe(m.machine_key);
    expect(rotated).toMatchObject({ id: m.id, name: m.name });
    const [old] = await t.sql`select id from machines where machine_key_hash = ${sha256(m.machine_key)}`;
    expect(old).toBeUndefined();
    const [fresh] = await t.sql`select id from machines where machine_key_hash = ${sha256(rotated.machine_key)}`;
    expect(fresh!.id).toBe(m.id);
    const [audit] = await t.sql`select action from audit_log where resource_id = ${m.id} and action = 'rotate_machine_key'`;
    expect(audit).toBeDefined();
  });

  it('answers rotate-key for another workspace\'s machine with 404 and leaves its key alone', async () => {
    const foreign = await create({ name: `m-${++n}` }, w.adminB);
    const res = await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`).set(bearer(w.admin));
    expect(res.status).toBe(404);
    const [row] = await t.sql`select id from machines where machine_key_hash = ${sha256(foreign.machine_key)}`;
    expect(row!.id).toBe(foreign.id);
    expect((await t.http.post('/api/v1/settings/machines/nope/rotate-key').set(bearer(w.admin))).status).toBe(422);
    expect((await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`).set(bearer(w.member))).status).toBe(403);
    expect((await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`)).status).toBe(401);
  });

  it('records the machine kind: unattended by default, attended when told, changed by PATCH', async () => {
    expect((await create({ name: `m-${++n}` })).kind).toBe('unattended');
    const desk = await create({ name: `m-${++n}`, kind: 'attended' });
    expect(desk.kind).toBe('attended');
    const [stored] = await t.sql`select kind from machines where id = ${desk.id}`;
    expect(stored!.kind).toBe('attended');
    const back = await api().call('updateMachine', { path: { id: desk.id }, body: { kind: 'unattended' } });
    expect(back.kind).toBe('unattended');
  });

  it('defaults slots to 1', async () => {
    expect((await create({ name: `m-${++n}` })).slots).toBe(1);
  });

  it.each([
    ['a missing name', {}, 'body → name'],
    ['slots 0', { name: 'x', slots: 0 }, 'body → slots'],
    ['slots 65', { name: 'x', slots: 65 }, 'body → slots'],
    ['fractional slots', { name: 'x', slots: 1.5 }, 'body → slots'],
    ['string slots', { name: 'x', slots: '2' }, 'body → slots'],
    ['a numeric description', { name: 'x', description: 1 }, 'body → description'],
    ['a string is_active', { name: 'x', is_active: 'false' }, 'body → is_active'],
    ['a status (set by heartbeats, not by hand)', { name: 'x', status: 'online' }, 'body → status'],
    ['a machine_key', { name: 'x', machine_key: 'svc_mk_mine' }, 'body → machine_key'],
    ['an unknown kind', { name: 'x', kind: 'desktop' }, 'body → kind'],
    ['a null kind', { name: 'x', kind: null }, 'body → kind'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res.body)).toContain(field);
  });

  it('answers a create with 201, and refuses a duplicate name with 409', async () => {
    expect((await post({ name: 'twin' })).status).toBe(201);
    const res = await post({ name: 'twin' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toBe('El recurso ya existe');
  });

  it('updates name, description, slots and is_active, and refuses other fields', async () => {
    const m = await create({ name: `m-${++n}` });
    const updated = await api().call('updateMachine', { path: { id: m.id }, body: { name: `renamed-${n}`, description: 'nueva', slots: 8, is_active: false } });
    expect(updated).toMatchObject({ name: `renamed-${n}`, description: 'nueva', slots: 8, is_active: false, status: 'offline' });
    expect('machine_key' in updated).toBe(false);
    for (const body of [{ running_jobs: 3 }, { slots: 100 }, { agent_version: '1' }]) {
      const bad = await t.http.patch(`/api/v1/settings/machines/${m.id}`).set(bearer(w.admin)).send(body);
      expect(bad.status).toBe(422);
    }
  });

  it('limits a machine to environments like an API key: a non-empty list of known ones, or null for all', async () => {
    const m = await api().call('createMachine', { body: { name: `m-${++n}`, environments: ['staging', 'dev'] } });
    expect(m.environments).toEqual(['staging', 'dev']);
    const widened = await api().call('updateMachine', { path: { id: m.id }, body: { environments: null } });
    expect(widened.environments).toBeNull();
    for (const environments of [[], ['prod'], ['staging', 'staging'], 'staging', [7]]) {
      const bad = await t.http.patch(`/api/v1/settings/machines/${m.id}`).set(bearer(w.admin)).send({ environments });
      expect([environments, bad.status, bad.body.error?.code]).toEqual([environments, 422, 'VALIDATION_ERROR']);
    }
    expect((await api().request('getMachine', { path: { id: m.id } })).data.environments).toBeNull();
  });

  it('deactivates a machine and filters the list by status and activity', async () => {
    const t2 = await createApiTestContext();
    try {
      const w2 = await settingsWorld(t2);
      const admin = apiClient(t2, { token: w2.admin });
      const a = await admin.call('createMachine', { body: { name: 'a' } });
      await admin.call('createMachine', { body: { name: 'b' } });
      await t2.sql`update machines set status = 'online', last_heartbeat_at = now(), agent_version = '2.1.0' where id = ${a.id}`;
      const online = await admin.request('listWorkspaceMachines', { query: { status: 'online' } });
      expect(online.data.map((m) => m.name)).toEqual(['a']);
      expect(online.data[0]!.last_heartbeat_at).toMatch(ISO);
      expect(online.data[0]!.agent_version).toBe('2.1.0');
      expect(online.meta).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });
      const off = await admin.call('deactivateMachine', { path: { id: a.id } });
      expect(off).toMatchObject({ id: a.id, is_active: false });
      const active = await admin.call('listWorkspaceMachines', { query: { is_active: true } });
      expect(active.map((m) => m.name)).toEqual(['b']);
      expect((await t2.http.get('/api/v1/settings/machines?status=idle').set(bearer(w2.admin))).status).toBe(422);
    } finally {
      await t2.close();
    }
  });
});
