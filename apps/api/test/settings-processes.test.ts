import { seedProcess } from '@svc/testing';
import type { BodyOf } from '@svc/client';
import type { ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, ISO, settingsSuite, UUID, type SettingsWorld } from './settings-fixtures';

const PROCESS_FIELDS = [
  'auto_retry', 'created_at', 'description', 'folder_id', 'id', 'input_schema', 'is_active', 'max_retries', 'name',
  'on_success_trigger_process_id', 'release_id', 'required_assets', 'retry_delay_seconds', 'sla_deadline_minutes', 'tags',
  'timeout_seconds', 'updated_at',
];

describe('settings: processes', () => {
  const suite = settingsSuite('processes');
  let t: ApiTestContext;
  let w: SettingsWorld;
  beforeAll(() => ({ t, w } = suite));
  const { post, patch, api } = suite;

  let n = 0;
  const uniqueName = () => `proc-${++n}`;
  const folderOf = async (token: string) => (await api(token).call('createFolder', { body: { name: `f-${++n}` } })).id;
  const create = (body: BodyOf<'createProcess'>) => api().call('createProcess', { body });
  const update = (id: string, body: BodyOf<'updateProcess'>) => api().call('updateProcess', { path: { id }, body });

  it('creates a process with the documented defaults and exactly the ProcessResponse fields', async () => {
    const p = await create({ name: 'Facturas' });
    expect(Object.keys(p).sort()).toEqual(PROCESS_FIELDS);
    expect(p).toMatchObject({
      name: 'Facturas', description: null, folder_id: null, input_schema: null, timeout_seconds: 3600, max_retries: 0,
      auto_retry: false, retry_delay_seconds: 60, tags: null, sla_deadline_minutes: null, on_success_trigger_process_id: null,
      required_assets: [], is_active: true,
    });
    expect(p.id).toMatch(UUID);
    expect(p.release_id).toMatch(UUID);
    expect(p.created_at).toMatch(ISO);
    expect(p.updated_at).toMatch(ISO);
  });

  it('stores every field it is given and returns it unchanged', async () => {
    const folder = await folderOf(w.admin);
    const next = (await create({ name: uniqueName() })).id;
    const body: BodyOf<'createProcess'> = {
      name: 'Conciliación bancaria',
      description: 'Concilia extractos',
      release_id: '11111111-2222-4333-8444-555555555555',
      folder_id: folder,
      input_schema: { type: 'object', required: ['cuenta'], properties: { cuenta: { type: 'string' } } },
      timeout_seconds: 120,
      max_retries: 2,
      auto_retry: true,
      retry_delay_seconds: 30,
      tags: ['banca', 'diario'],
      sla_deadline_minutes: 45,
      on_success_trigger_process_id: next,
      required_assets: ['erp-login', 'umbral'],
      is_active: true,
    };
    const made = await create(body);
    expect(made).toMatchObject(body);
    expect(await api().call('getProcess', { path: { id: made.id } })).toEqual(made);
  });

  it.each([
    ['a missing name', {}, 'body → name'],
    ['an unknown field', { name: 'x', color: 1 }, 'body → color'],
    ['a non-UUID release_id', { name: 'x', release_id: 'r1' }, 'body → release_id'],
    ['a non-UUID folder_id', { name: 'x', folder_id: 'f1' }, 'body → folder_id'],
    ['an array input_schema', { name: 'x', input_schema: [] }, 'body → input_schema'],
    ['a string input_schema', { name: 'x', input_schema: 'object' }, 'body → input_schema'],
    ['timeout_seconds 0', { name: 'x', timeout_seconds: 0 }, 'body → timeout_seconds'],
    ['timeout_seconds above a week', { name: 'x', timeout_seconds: 604801 }, 'body → timeout_seconds'],
    ['a fractional timeout_seconds', { name: 'x', timeout_seconds: 1.5 }, 'body → timeout_seconds'],
    ['max_retries -1', { name: 'x', max_retries: -1 }, 'body → max_retries'],
    ['max_retries 11', { name: 'x', max_retries: 11 }, 'body → max_retries'],
    ['a string auto_retry', { name: 'x', auto_retry: 'true' }, 'body → auto_retry'],
    ['retry_delay_seconds -1', { name: 'x', retry_delay_seconds: -1 }, 'body → retry_delay_seconds'],
    ['retry_delay_seconds above a day', { name: 'x', retry_delay_seconds: 86401 }, 'body → retry_delay_seconds'],
    ['a tag that is not a string', { name: 'x', tags: [1] }, 'body → tags → 0'],
    ['an empty tag', { name: 'x', tags: [''] }, 'body → tags → 0'],
    ['repeated tags', { name: 'x', tags: ['a', 'a'] }, 'body → tags'],
    ['sla_deadline_minutes 0', { name: 'x', sla_deadline_minutes: 0 }, 'body → sla_deadline_minutes'],
    ['a non-UUID on_success_trigger_process_id', { name: 'x', on_success_trigger_process_id: 'p' }, 'body → on_success_trigger_process_id'],
    ['required_assets that is not an array', { name: 'x', required_assets: 'erp' }, 'body → required_assets'],
    ['a required asset name with a slash', { name: 'x', required_assets: ['a/b'] }, 'body → required_assets → 0'],
    ['a null required_assets', { name: 'x', required_assets: null }, 'body → required_assets'],
    ['a string is_active', { name: 'x', is_active: 1 }, 'body → is_active'],
  ])('refuses %s with 422 naming the field', async (_label, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain(field);
  });

  it.each([
    ['an unknown type', { type: 'objeto' }],
    ['a negative minLength', { type: 'object', properties: { a: { type: 'string', minLength: -1 } } }],
    ['required that is not an array', { type: 'object', required: 'a' }],
    ['a reference that does not resolve', { $ref: '#/definitions/nope' }],
  ])('refuses an input_schema with %s: it is not a valid JSON Schema (422)', async (_label, schema) => {
    const res = await post({ name: uniqueName(), input_schema: schema });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([
      { field: 'body → input_schema', message: expect.stringMatching(/^input_schema no es un JSON Schema válido: /) },
    ]);
  });

  it('accepts the same input_schema with an $id on several processes and on repeated saves', async () => {
    const schema = { $id: 'https://example.test/factura.json', type: 'object', properties: { total: { type: 'number' } } };
    const a = await post({ name: uniqueName(), input_schema: schema });
    const b = await post({ name: uniqueName(), input_schema: schema });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect((await update(a.body.data.id, { input_schema: schema })).input_schema).toEqual(schema);
    expect(b.body.data.input_schema).toEqual(schema);
  });

  it('accepts input_schemas using formats, $defs and local references', async () => {
    const schema = {
      type: 'object',
      $defs: { email: { type: 'string', format: 'email' } },
      properties: { to: { $ref: '#/$defs/email' }, at: { type: 'string', format: 'date-time' } },
      additionalProperties: false,
    };
    expect((await create({ name: uniqueName(), input_schema: schema })).input_schema).toEqual(schema);
  });

  it('refuses a folder or a successor process of another workspace with 422, like a missing one', async () => {
    const foreignFolder = await folderOf(w.adminB);
    const foreignProcess = await seedProcess(t.sql, w.tenantB);
    const f = await post({ name: uniqueName(), folder_id: foreignFolder });
    expect(f.status).toBe(422);
    expect(f.body.error.details).toEqual([{ field: 'body → folder_id', message: 'La carpeta no existe en este workspace' }]);
    const p = await post({ name: uniqueName(), on_success_trigger_process_id: foreignProcess.id });
    expect(p.status).toBe(422);
    expect(p.body.error.details).toEqual([
      { field: 'body → on_success_trigger_process_id', message: 'El proceso no existe en este workspace' },
    ]);
    const missing = await post({ name: uniqueName(), folder_id: '00000000-0000-4000-8000-000000000000' });
    expect(missing.status).toBe(422);
    const own = await create({ name: uniqueName() });
    const viaPatch = await patch(own.id, { folder_id: foreignFolder });
    expect(viaPatch.status).toBe(422);
  });

  it('refuses a success chain that leads back to the process (422)', async () => {
    const a = await create({ name: uniqueName() });
    const b = await create({ name: uniqueName(), on_success_trigger_process_id: a.id });
    const self = await patch(a.id, { on_success_trigger_process_id: a.id });
    expect(self.status).toBe(422);
    const loop = await patch(a.id, { on_success_trigger_process_id: b.id });
    expect(loop.status).toBe(422);
    expect(fieldsOf(loop.body)).toEqual(['body → on_success_trigger_process_id']);
    const c = await create({ name: uniqueName() });
    expect((await update(a.id, { on_success_trigger_process_id: c.id })).on_success_trigger_process_id).toBe(c.id);
  });

  it('updates only the fields sent, clears nullable ones with null, and checks a new input_schema', async () => {
    const made = await create({ name: uniqueName(), tags: ['x'], input_schema: { type: 'object' }, timeout_seconds: 50 });
    const updated = await update(made.id, { max_retries: 4, tags: null, input_schema: { type: 'object', required: ['a'] } });
    expect(updated).toEqual({
      ...made,
      max_retries: 4,
      tags: null,
      input_schema: { type: 'object', required: ['a'] },
      updated_at: updated.updated_at,
    });
    const cleared = await update(made.id, { input_schema: null });
    expect(cleared.input_schema).toBeNull();
    const bad = await patch(made.id, { input_schema: { type: 'nope' } });
    expect(bad.status).toBe(422);
    expect(fieldsOf(bad.body)).toEqual(['body → input_schema']);
    const [row] = await t.sql`select input_schema, timeout_seconds from processes where id = ${made.id}`;
    expect(row).toEqual({ input_schema: null, timeout_seconds: 50 });
  });

  it('refuses a duplicate name on create and on rename with 409', async () => {
    const name = uniqueName();
    await create({ name });
    await expect(create({ name })).rejects.toMatchObject({ status: 409 });
    const other = await create({ name: uniqueName() });
    await expect(update(other.id, { name })).rejects.toMatchObject({ status: 409, code: 'CONFLICT', message: 'El recurso ya existe' });
  });

  it('deactivates a process (200) and filters the list by folder and activity', async () => {
    const folder = await folderOf(w.admin);
    const one = await create({ name: 'zz-1', folder_id: folder });
    await create({ name: 'zz-2', folder_id: folder });
    const off = await api().call('deactivateProcess', { path: { id: one.id } });
    expect(off).toMatchObject({ id: one.id, is_active: false });
    const inFolder = await api().request('listWorkspaceProcesses', { query: { folder_id: folder } });
    expect(inFolder.data.map((p) => p.name)).toEqual(['zz-1', 'zz-2']);
    expect(inFolder.meta).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });
    const active = await api().call('listWorkspaceProcesses', { query: { folder_id: folder, is_active: true } });
    expect(active.map((p) => p.name)).toEqual(['zz-2']);
    const bad = await t.http.get('/api/v1/settings/processes?folder_id=nope').set(bearer(w.admin));
    expect(bad.status).toBe(422);
  });
});
