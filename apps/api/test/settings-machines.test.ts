import { sha256 } from '@svc/core/internals';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, ISO, settingsSuite, settingsWorld, UUID, type SettingsWorld } from './settings-fixtures';

const MACHINE_FIELDS = [
  'agent_version', 'created_at', 'description', 'id', 'is_active', 'kind', 'last_heartbeat_at', 'name', 'running_jobs', 'slots',
  'status', 'tenant_id', 'updated_at',
];

describe('settings: machines', () => {
  const suite = settingsSuite('machines');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post } = suite;

  let n = 0;

  it('creates a machine and returns the documented record plus its machine key, once', async () => {
    const res = await post({ name: 'robot-01', description: 'Sala 2', slots: 4 });
    expect(res.status).toBe(201);
    const m = res.body.data;
    expect(Object.keys(m).sort()).toEqual([...MACHINE_FIELDS, 'machine_key'].sort());
    expect(m).toMatchObject({
      tenant_id: w.tenantA, name: 'robot-01', description: 'Sala 2', status: 'offline', slots: 4, kind: 'unattended', running_jobs: 0,
      is_active: true, last_heartbeat_at: null, agent_version: null,
    });
    expect(m.id).toMatch(UUID);
    expect(m.created_at).toMatch(ISO);
    expect(m.machine_key).toMatch(/^svc_mk_[A-Za-z0-9_-]{40,}$/);

    const got = await t.http.get(`/api/v1/settings/machines/${m.id}`).set(bearer(w.admin));
    expect(Object.keys(got.body.data).sort()).toEqual(MACHINE_FIELDS);
    expect(JSON.stringify(got.body)).not.toContain(m.machine_key);
    const list = await t.http.get('/api/v1/settings/machines').set(bearer(w.admin));
    expect(JSON.stringify(list.body)).not.toContain(m.machine_key);
  });

  it('stores only the SHA-256 of the machine key and its 12-character prefix', async () => {
    const m = (await post({ name: `m-${++n}` })).body.data;
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
    const m = (await post({ name: `m-${++n}` })).body.data;
    const res = await t.http.post(`/api/v1/settings/machines/${m.id}/rotate-key`).set(bearer(w.admin));
    expect(res.status).toBe(200);
    expect(res.body.data.machine_key).toMatch(/^svc_mk_/);
    expect(res.body.data.machine_key).not.toBe(m.machine_key);
    expect(res.body.data).toMatchObject({ id: m.id, name: m.name });
    const [old] = await t.sql`select id from machines where machine_key_hash = ${sha256(m.machine_key)}`;
    expect(old).toBeUndefined();
    const [fresh] = await t.sql`select id from machines where machine_key_hash = ${sha256(res.body.data.machine_key)}`;
    expect(fresh!.id).toBe(m.id);
    const [audit] = await t.sql`select action from audit_log where resource_id = ${m.id} and action = 'rotate_machine_key'`;
    expect(audit).toBeDefined();
  });

  it('answers rotate-key for another workspace\'s machine with 404 and leaves its key alone', async () => {
    const foreign = (await post({ name: `m-${++n}` }, w.adminB)).body.data;
    const res = await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`).set(bearer(w.admin));
    expect(res.status).toBe(404);
    const [row] = await t.sql`select id from machines where machine_key_hash = ${sha256(foreign.machine_key)}`;
    expect(row!.id).toBe(foreign.id);
    expect((await t.http.post('/api/v1/settings/machines/nope/rotate-key').set(bearer(w.admin))).status).toBe(422);
    expect((await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`).set(bearer(w.member))).status).toBe(403);
    expect((await t.http.post(`/api/v1/settings/machines/${foreign.id}/rotate-key`)).status).toBe(401);
  });

  it('records the machine kind: unattended by default, attended when told, changed by PATCH', async () => {
    expect((await post({ name: `m-${++n}` })).body.data.kind).toBe('unattended');
    const desk = (await post({ name: `m-${++n}`, kind: 'attended' })).body.data;
    expect(desk.kind).toBe('attended');
    const [stored] = await t.sql`select kind from machines where id = ${desk.id}`;
    expect(stored!.kind).toBe('attended');
    const back = await t.http.patch(`/api/v1/settings/machines/${desk.id}`).set(bearer(w.admin)).send({ kind: 'unattended' });
    expect([back.status, back.body.data.kind]).toEqual([200, 'unattended']);
  });

  it('defaults slots to 1', async () => {
    const res = await post({ name: `m-${++n}` });
    expect(res.body.data.slots).toBe(1);
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

  it('refuses a duplicate name with 409', async () => {
    await post({ name: 'twin' });
    const res = await post({ name: 'twin' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toBe('El recurso ya existe');
  });

  it('updates name, description, slots and is_active, and refuses other fields', async () => {
    const m = (await post({ name: `m-${++n}` })).body.data;
    const res = await t.http.patch(`/api/v1/settings/machines/${m.id}`).set(bearer(w.admin))
      .send({ name: `renamed-${n}`, description: 'nueva', slots: 8, is_active: false });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: `renamed-${n}`, description: 'nueva', slots: 8, is_active: false, status: 'offline' });
    expect(res.body.data.machine_key).toBeUndefined();
    for (const body of [{ running_jobs: 3 }, { slots: 100 }, { agent_version: '1' }]) {
      const bad = await t.http.patch(`/api/v1/settings/machines/${m.id}`).set(bearer(w.admin)).send(body);
      expect(bad.status).toBe(422);
    }
  });

  it('deactivates a machine and filters the list by status and activity', async () => {
    const t2 = await createApiTestContext();
    try {
      const w2 = await settingsWorld(t2);
      const make = async (name: string) =>
        (await t2.http.post('/api/v1/settings/machines').set(bearer(w2.admin)).send({ name })).body.data;
      const a = await make('a');
      await make('b');
      await t2.sql`update machines set status = 'online', last_heartbeat_at = now(), agent_version = '2.1.0' where id = ${a.id}`;
      const online = await t2.http.get('/api/v1/settings/machines?status=online').set(bearer(w2.admin));
      expect(online.body.data.map((m: { name: string }) => m.name)).toEqual(['a']);
      expect(online.body.data[0].last_heartbeat_at).toMatch(ISO);
      expect(online.body.data[0].agent_version).toBe('2.1.0');
      expect(online.body.meta).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });
      const off = await t2.http.delete(`/api/v1/settings/machines/${a.id}`).set(bearer(w2.admin));
      expect(off.status).toBe(200);
      expect(off.body.data).toMatchObject({ id: a.id, is_active: false });
      const active = await t2.http.get('/api/v1/settings/machines?is_active=true').set(bearer(w2.admin));
      expect(active.body.data.map((m: { name: string }) => m.name)).toEqual(['b']);
      expect((await t2.http.get('/api/v1/settings/machines?status=idle').set(bearer(w2.admin))).status).toBe(422);
    } finally {
      await t2.close();
    }
  });
});
