import { NotFoundError } from '@svc/core';
import { decrypt, readAssetValue } from '@svc/core/internals';
import type { BodyOf } from '@svc/client';
import type { ApiTestContext } from '@svc/testing/api';
import { fieldsOf, ISO, settingsSuite, UUID, type SettingsWorld } from './settings-fixtures';

const PASSWORD = 'S3cr3t-contraseña-ÚNICA';

describe('settings: assets', () => {
  const suite = settingsSuite('assets');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, patch, api } = suite;
  const create = (body: BodyOf<'createAsset'>) => api().call('createAsset', { body });
  const update = (id: string, body: BodyOf<'updateAsset'>) => api().call('updateAsset', { path: { id }, body });

  let n = 0;
  const read = (tenantId: string, name: string, env: 'dev' | 'staging' | 'production') =>
    readAssetValue(t.sql, t.config.assetEncryptionKey, tenantId, name, env);

  it('creates a text asset with a value per environment and shows every field of the record', async () => {
    const a = await create({ name: 'erp-url', type: 'text', description: 'URL del ERP', values: { dev: 'http://dev', production: 'https://erp' } });
    expect(Object.keys(a).sort()).toEqual(['created_at', 'description', 'id', 'is_active', 'name', 'tenant_id', 'type', 'updated_at', 'values']);
    expect(a).toMatchObject({
      tenant_id: w.tenantA, name: 'erp-url', type: 'text', description: 'URL del ERP', is_active: true,
      values: { dev: 'http://dev', staging: null, production: 'https://erp' },
    });
    expect(a.id).toMatch(UUID);
    expect(a.created_at).toMatch(ISO);
    const [row] = await t.sql`select value, secret from asset_values where asset_id = ${a.id} and environment = 'dev'`;
    expect(row).toEqual({ value: 'http://dev', secret: null });
  });

  it('keeps integer and boolean values with their JSON types', async () => {
    const i = await create({ name: `int-${++n}`, type: 'integer', values: { dev: 0, staging: -5, production: 9007199254740991 } });
    expect(i.values).toEqual({ dev: 0, staging: -5, production: 9007199254740991 });
    const b = await create({ name: `bool-${++n}`, type: 'boolean', values: { dev: false, production: true } });
    expect(b.values).toEqual({ dev: false, staging: null, production: true });
    expect((await read(w.tenantA, i.name, 'staging')).value).toBe(-5);
    expect((await read(w.tenantA, b.name, 'dev')).value).toBe(false);
  });

  it('creates an asset without values', async () => {
    const res = await post({ name: `empty-${++n}`, type: 'credential' });
    expect(res.status).toBe(201);
    expect(res.body.data.values).toEqual({ dev: null, staging: null, production: null });
  });

  it('never returns a credential password: create, get and list show the username and has_password only', async () => {
    const made = await api().request('createAsset', { body: { name: 'erp-login', type: 'credential', values: { production: { username: 'robot', password: PASSWORD } } } });
    expect(made.data.values).toEqual({ dev: null, staging: null, production: { username: 'robot', has_password: true } });
    const got = await api().request('getAsset', { path: { id: made.data.id } });
    const list = await api().request('listWorkspaceAssets', { query: { limit: 100 } });
    expect(list.data.map((x) => x.id)).toContain(made.data.id);
    for (const body of [made, got, list]) expect(JSON.stringify(body)).not.toContain(PASSWORD);
    expect(got.data.values.production).toEqual({ username: 'robot', has_password: true });
    const audit = await t.sql`select details from audit_log where resource_id = ${made.data.id}`;
    expect(audit.length).toBe(1);
    expect(JSON.stringify(audit)).not.toContain(PASSWORD);
  });

  it('stores credentials encrypted: the bytes at rest are not the password and decrypt only for their row', async () => {
    const made = await create({ name: `cred-${++n}`, type: 'credential', values: { dev: { username: 'usuario-robot-01', password: PASSWORD }, staging: { username: 'usuario-robot-01', password: PASSWORD } } });
    const rows = await t.sql`select environment, value, secret from asset_values where asset_id = ${made.id} order by environment`;
    expect(rows.map((r) => r.environment)).toEqual(['dev', 'staging']);
    for (const r of rows) {
      expect(r.value).toBeNull();
      expect(Buffer.isBuffer(r.secret)).toBe(true);
      expect(r.secret.includes(Buffer.from(PASSWORD))).toBe(false);
      expect(r.secret.includes(Buffer.from('usuario-robot-01'))).toBe(false);
    }
    // the same plaintext sealed twice differs (fresh IV), and each is bound to its own asset and environment
    expect(Buffer.compare(rows[0]!.secret, rows[1]!.secret)).not.toBe(0);
    const key = t.config.assetEncryptionKey;
    expect(JSON.parse(decrypt(key, rows[0]!.secret, `${made.id}:dev`))).toEqual({ username: 'usuario-robot-01', password: PASSWORD });
    expect(() => decrypt(key, rows[0]!.secret, `${made.id}:staging`)).toThrow();
    const dump = JSON.stringify(await t.sql`select * from asset_values where asset_id = ${made.id}`);
    expect(dump).not.toContain(PASSWORD);

    const read1 = await read(w.tenantA, made.name, 'dev');
    expect(read1).toMatchObject({ environment: 'dev', value: { username: 'usuario-robot-01', password: PASSWORD } });
    expect(read1.asset).toMatchObject({ id: made.id, name: made.name, type: 'credential', tenant_id: w.tenantA });
    expect((await read(w.tenantA, made.name, 'production')).value).toBeNull();
  });

  it('readAssetValue answers NotFound for another workspace, a missing name or an inactive asset', async () => {
    const made = await create({ name: `ro-${++n}`, type: 'text', values: { dev: 'v' } });
    await expect(read(w.tenantB, made.name, 'dev')).rejects.toBeInstanceOf(NotFoundError);
    await expect(read(w.tenantA, 'no-such-asset', 'dev')).rejects.toBeInstanceOf(NotFoundError);
    await api().call('deactivateAsset', { path: { id: made.id } });
    await expect(read(w.tenantA, made.name, 'dev')).rejects.toBeInstanceOf(NotFoundError);
  });

  it.each([
    ['a missing type', { name: 'x' }, 'body → type'],
    ['an unknown type', { name: 'x', type: 'secret' }, 'body → type'],
    ['a missing name', { type: 'text' }, 'body → name'],
    ['an unknown field', { name: 'x', type: 'text', value: 'v' }, 'body → value'],
    ['an unknown environment', { name: 'x', type: 'text', values: { test: 'v' } }, 'body → values → test'],
    ['values that are not an object', { name: 'x', type: 'text', values: 'v' }, 'body → values'],
    ['a number for a text asset', { name: 'x', type: 'text', values: { dev: 5 } }, 'body → values → dev'],
    ['a text over 10000 characters', { name: 'x', type: 'text', values: { dev: 'x'.repeat(10001) } }, 'body → values → dev'],
    ['a string for an integer asset', { name: 'x', type: 'integer', values: { staging: '5' } }, 'body → values → staging'],
    ['a fraction for an integer asset', { name: 'x', type: 'integer', values: { dev: 1.5 } }, 'body → values → dev'],
    ['an unsafe integer', { name: 'x', type: 'integer', values: { dev: 2 ** 60 } }, 'body → values → dev'],
    ['a string for a boolean asset', { name: 'x', type: 'boolean', values: { production: 'true' } }, 'body → values → production'],
    ['a string for a credential asset', { name: 'x', type: 'credential', values: { dev: 'robot:pw' } }, 'body → values → dev'],
    ['a credential without password', { name: 'x', type: 'credential', values: { dev: { username: 'u' } } }, 'body → values → dev → password'],
    ['a credential without username', { name: 'x', type: 'credential', values: { dev: { password: 'p' } } }, 'body → values → dev → username'],
    ['a credential with an empty password', { name: 'x', type: 'credential', values: { dev: { username: 'u', password: '' } } }, 'body → values → dev → password'],
    ['a credential with an extra field', { name: 'x', type: 'credential', values: { dev: { username: 'u', password: 'p', host: 'h' } } }, 'body → values → dev → host'],
    ['a credential with a numeric username', { name: 'x', type: 'credential', values: { dev: { username: 1, password: 'p' } } }, 'body → values → dev → username'],
    ['an object for a text asset', { name: 'x', type: 'text', values: { dev: { a: 1 } } }, 'body → values → dev'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain(field);
    const [row] = await t.sql`select count(*)::int as n from assets where name = 'x'`;
    expect(row!.n).toBe(0);
  });

  it('refuses a duplicate name with 409 and leaves no partial values behind', async () => {
    const created = await post({ name: 'twin', type: 'text', values: { dev: 'a' } });
    expect(created.status).toBe(201);
    const first = created.body.data;
    const res = await post({ name: 'twin', type: 'credential', values: { dev: { username: 'u', password: 'p' } } });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toBe('El recurso ya existe');
    const values = await t.sql`select v.asset_id from asset_values v join assets a on a.id = v.asset_id where a.name = 'twin'`;
    expect(values.map((v) => v.asset_id)).toEqual([first.id]);
  });

  it('merges values per environment on update: a value sets, null removes, an absent environment stays', async () => {
    const a = await create({ name: `merge-${++n}`, type: 'text', values: { dev: 'd1', production: 'p1' } });
    const merged = await update(a.id, { values: { dev: null, staging: 's2' }, description: 'nuevo' });
    expect(merged).toMatchObject({ description: 'nuevo', values: { dev: null, staging: 's2', production: 'p1' } });
    expect((await read(w.tenantA, a.name, 'dev')).value).toBeNull();
    expect((await read(w.tenantA, a.name, 'staging')).value).toBe('s2');
    const bad = await patch(a.id, { values: { production: true } });
    expect(bad.status).toBe(422);
    expect(fieldsOf(bad.body)).toEqual(['body → values → production']);
    expect((await read(w.tenantA, a.name, 'production')).value).toBe('p1');
  });

  it('replaces a credential and re-encrypts it', async () => {
    const a = await create({ name: `rot-${++n}`, type: 'credential', values: { dev: { username: 'old', password: 'old-pw' } } });
    const res = await api().request('updateAsset', { path: { id: a.id }, body: { values: { dev: { username: 'new', password: PASSWORD } } } });
    expect(res.data.values.dev).toEqual({ username: 'new', has_password: true });
    expect(JSON.stringify(res)).not.toContain(PASSWORD);
    expect((await read(w.tenantA, a.name, 'dev')).value).toEqual({ username: 'new', password: PASSWORD });
  });

  it('changing the type checks the new values against it and drops the old-type values not sent', async () => {
    const a = await create({ name: `retype-${++n}`, type: 'text', values: { dev: 'x', staging: 'y', production: 'z' } });
    const wrong = await patch(a.id, { type: 'integer', values: { dev: 'x' } });
    expect(wrong.status).toBe(422);
    const retyped = await update(a.id, { type: 'integer', values: { dev: 7 } });
    expect(retyped).toMatchObject({ type: 'integer', values: { dev: 7, staging: null, production: null } });
    const [{ n: left }] = await t.sql`select count(*)::int as n from asset_values where asset_id = ${a.id}` as unknown as [{ n: number }];
    expect(left).toBe(1);
  });

  it('deactivates an asset with DELETE (200) and filters the list by activity', async () => {
    const a = await create({ name: `off-${++n}`, type: 'boolean', values: { dev: true } });
    const off = await api().call('deactivateAsset', { path: { id: a.id } });
    expect(off).toMatchObject({ id: a.id, is_active: false, values: { dev: true } });
    const inactive = await api().call('listWorkspaceAssets', { query: { is_active: false, limit: 100 } });
    expect(inactive.map((x) => x.id)).toContain(a.id);
    expect(inactive.every((x) => !x.is_active)).toBe(true);
  });
});
