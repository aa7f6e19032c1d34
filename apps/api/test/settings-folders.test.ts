import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, ISO, settingsSuite, settingsWorld, UUID, type SettingsWorld } from './settings-fixtures';

describe('settings: folders', () => {
  const suite = settingsSuite('folders');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, api } = suite;


  it('creates a folder with defaults and answers 201 with every field of the record', async () => {
    const res = await post({ name: 'Finanzas' });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(['created_at', 'description', 'id', 'is_active', 'name', 'tenant_id', 'updated_at']);
    expect(res.body.data).toMatchObject({ name: 'Finanzas', description: null, is_active: true, tenant_id: w.tenantA });
    expect(res.body.data.id).toMatch(UUID);
    expect(res.body.data.created_at).toMatch(ISO);
    expect(res.body.data.updated_at).toMatch(ISO);
  });

  it('records the creation in the audit log with the admin as actor', async () => {
    const made = await api().call('createFolder', { body: { name: 'Auditada', description: 'x' } });
    const [row] = await t.sql`select * from audit_log where resource_id = ${made.id}`;
    expect(row).toMatchObject({ action: 'create_folder', actor_type: 'user', actor_id: w.adminUserId, tenant_id: w.tenantA });
  });

  it('audits creation, change and deactivation with the names of what changed, never the values', async () => {
    const { id } = await api().call('createFolder', { body: { name: 'Trazada' } });
    await api().call('updateFolder', { path: { id }, body: { description: 'nota privada' } });
    await api().call('deactivateFolder', { path: { id } });
    const rows = await t.sql`select action, actor_type, source, resource_type, details from audit_log where resource_id = ${id} order by id`;
    expect(rows).toEqual([
      { action: 'create_folder', actor_type: 'user', source: 'api', resource_type: 'folder', details: { name: 'Trazada' } },
      { action: 'update_folder', actor_type: 'user', source: 'api', resource_type: 'folder', details: { fields: ['description'] } },
      { action: 'deactivate_folder', actor_type: 'user', source: 'api', resource_type: 'folder', details: {} },
    ]);
  });

  it('refuses a name already used in the workspace with 409, but allows it in another workspace', async () => {
    await post({ name: 'Repetida' });
    const dup = await post({ name: 'Repetida' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'CONFLICT', message: 'El recurso ya existe' });
    expect((await post({ name: 'Repetida' }, w.adminB)).status).toBe(201);
  });

  it.each([
    ['a missing name', {}, 'body → name'],
    ['an empty name', { name: '' }, 'body → name'],
    ['a name with a slash', { name: 'a/b' }, 'body → name'],
    ['a name with outer blanks', { name: ' a ' }, 'body → name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'body → name'],
    ['a numeric name', { name: 12 }, 'body → name'],
    ['a numeric description', { name: 'ok', description: 5 }, 'body → description'],
    ['a description over 2000 characters', { name: 'ok', description: 'x'.repeat(2001) }, 'body → description'],
    ['a non-boolean is_active', { name: 'ok', is_active: 'yes' }, 'body → is_active'],
    ['an unknown field', { name: 'ok', color: 'red' }, 'body → color'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain(field);
  });

  it('lists only the workspace\'s folders, by name, with paging meta and an is_active filter', async () => {
    const t2 = await createApiTestContext();
    try {
      const w2 = await settingsWorld(t2);
      const admin = apiClient(t2, { token: w2.admin });
      for (const name of ['c', 'a', 'b']) await admin.call('createFolder', { body: { name } });
      await apiClient(t2, { token: w2.adminB }).call('createFolder', { body: { name: 'other' } });
      const names = (page: { data: Array<{ name: string }> }) => page.data.map((f) => f.name);
      const page1 = await admin.request('listWorkspaceFolders', { query: { limit: 2 } });
      expect(names(page1)).toEqual(['a', 'b']);
      expect(page1.meta).toEqual({ page: 1, limit: 2, total: 3, pages: 2 });
      const page2 = await admin.request('listWorkspaceFolders', { query: { limit: 2, page: 2 } });
      expect(names(page2)).toEqual(['c']);
      await admin.call('deactivateFolder', { path: { id: page1.data[0]!.id } });
      const inactive = await admin.request('listWorkspaceFolders', { query: { is_active: false } });
      expect(names(inactive)).toEqual(['a']);
      expect(inactive.meta.total).toBe(1);
    } finally {
      await t2.close();
    }
  });

  it.each([
    ['page 0', 'page=0'],
    ['page 501', 'page=501'],
    ['limit 101', 'limit=101'],
    ['a non-boolean is_active', 'is_active=maybe'],
    ['an unknown parameter', 'sort=name'],
  ])('refuses a list query with %s (422)', async (_label, qs) => {
    const res = await t.http.get(`/api/v1/settings/folders?${qs}`).set(bearer(w.admin));
    expect(res.status).toBe(422);
  });

  it('gets, partially updates and deactivates a folder', async () => {
    const made = await api().call('createFolder', { body: { name: 'Ciclo', description: 'antes' } });
    const path = { id: made.id };
    expect(await api().call('getFolder', { path })).toEqual(made);

    const patched = await api().call('updateFolder', { path, body: { description: 'después' } });
    expect(patched).toMatchObject({ id: made.id, name: 'Ciclo', description: 'después', is_active: true });
    expect(new Date(patched.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(made.updated_at).getTime());

    const cleared = await api().call('updateFolder', { path, body: { description: null } });
    expect(cleared.description).toBeNull();

    const gone = await api().call('deactivateFolder', { path });
    expect(gone).toMatchObject({ id: made.id, is_active: false });
    const [row] = await t.sql`select is_active from folders where id = ${made.id}`;
    expect(row!.is_active).toBe(false);

    const back = await api().call('updateFolder', { path, body: { is_active: true } });
    expect(back.is_active).toBe(true);
  });

  it('refuses renaming onto an existing name with 409', async () => {
    await api().call('createFolder', { body: { name: 'Uno' } });
    const two = await api().call('createFolder', { body: { name: 'Dos' } });
    await expect(api().call('updateFolder', { path: { id: two.id }, body: { name: 'Uno' } })).rejects.toMatchObject({ status: 409, message: 'El recurso ya existe' });
  });

  it.each([
    ['an empty patch', {}, 'body'],
    ['an unknown field', { nombre: 'x' }, 'body → nombre'],
    ['a null name', { name: null }, 'body → name'],
  ])('refuses an update with %s (422)', async (_label, body, field) => {
    const made = (await post({ name: `p-${Math.random()}` })).body.data;
    const res = await t.http.patch(`/api/v1/settings/folders/${made.id}`).set(bearer(w.admin)).send(body);
    expect(res.status).toBe(422);
    expect(fieldsOf(res.body)).toContain(field);
  });

  it('answers 404 before 422 when the folder is missing and the body is invalid', async () => {
    const res = await t.http
      .patch('/api/v1/settings/folders/00000000-0000-4000-8000-000000000000')
      .set(bearer(w.admin))
      .send({ bogus: true });
    expect(res.status).toBe(404);
  });
});
