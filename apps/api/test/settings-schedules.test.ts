import type { BodyOf } from '@svc/client';
import { seedMachine, seedProcess } from '@svc/testing';
import { bearer, fieldsOf, ISO, settingsSuite, UUID } from './settings-fixtures';

/** /api/v1/settings/schedules (docs/decisions/schedules.md). */
describe('settings: schedules', () => {
  const suite = settingsSuite('schedules');
  const { post, patch, api } = suite;
  const create = (body: BodyOf<'createSchedule'>, token?: string) => api(token).call('createSchedule', { body });
  const update = (id: string, body: BodyOf<'updateSchedule'>) => api().call('updateSchedule', { path: { id }, body });
  const base = '/api/v1/settings/schedules';
  const MISSING = '00000000-0000-4000-8000-000000000000';
  let n = 0;
  const name = () => `sched-${++n}`;
  let proc: { id: string };
  beforeAll(async () => {
    proc = (await seedProcess(suite.t.sql, suite.w.tenantA)) as { id: string };
  });

  it('creates a schedule with its defaults, every field of the record shown', async () => {
    const before = Date.now();
    const s = await create({ name: 'nightly', process_id: proc.id, cron: '30 2 * * *' });
    expect(Object.keys(s).sort()).toEqual([
      'created_at', 'cron', 'description', 'id', 'input_data', 'is_active', 'last_error', 'last_error_at', 'last_job_id', 'last_run_at',
      'machine_id', 'missed_runs', 'name', 'next_run_at', 'priority', 'process_id', 'tenant_id', 'timezone', 'updated_at',
    ]);
    expect(s).toMatchObject({
      tenant_id: suite.w.tenantA, name: 'nightly', description: null, process_id: proc.id, cron: '30 2 * * *', timezone: 'UTC',
      machine_id: null, input_data: null, priority: 3, is_active: true, missed_runs: 'skip', last_run_at: null, last_job_id: null,
      last_error: null, last_error_at: null,
    });
    expect(s.id).toMatch(UUID);
    expect(s.created_at).toMatch(ISO);
    expect(s.next_run_at).toMatch(/T02:30:00\.000Z$/);
    const next = Date.parse(s.next_run_at!);
    expect(next).toBeGreaterThan(before);
    expect(next - before).toBeLessThanOrEqual(24 * 3600_000);
  });

  it('stores every field sent and computes next_run_at in the time zone', async () => {
    const { row: machine } = await seedMachine(suite.t.sql, suite.w.tenantA);
    const made = await create({
      name: name(), description: 'd', process_id: proc.id, cron: '0 9 * * 1-5', timezone: 'Europe/Madrid', machine_id: machine.id,
      input_data: { a: [1, 2] }, priority: 5, is_active: true, missed_runs: 'run_once',
    });
    expect(made).toMatchObject({
      description: 'd', timezone: 'Europe/Madrid', machine_id: machine.id, input_data: { a: [1, 2] }, priority: 5, missed_runs: 'run_once',
    });
    // 09:00 in Madrid is 07:00 or 08:00 UTC
    expect(made.next_run_at).toMatch(/T0[78]:00:00\.000Z$/);
    const inactive = await create({ name: name(), process_id: proc.id, cron: '* * * * *', is_active: false });
    expect(inactive).toMatchObject({ is_active: false, next_run_at: null });
  });

  it.each([
    ['an invalid cron', { cron: '61 * * * *' }, 'body → cron'],
    ['a cron with four fields', { cron: '* * * *' }, 'body → cron'],
    ['a cron with seven fields', { cron: '* * * * * * *' }, 'body → cron'],
    ['a cron that never runs', { cron: '0 0 30 2 *' }, 'body → cron'],
    ['a cron longer than 120 characters', { cron: `${'1,'.repeat(70)}1 * * * *` }, 'body → cron'],
    ['an empty cron', { cron: '' }, 'body → cron'],
    ['an unknown time zone', { timezone: 'Europe/Atlantis' }, 'body → timezone'],
    ['a numeric time zone', { timezone: 2 }, 'body → timezone'],
    ['priority 0', { priority: 0 }, 'body → priority'],
    ['priority 6', { priority: 6 }, 'body → priority'],
    ['an unknown missed_runs', { missed_runs: 'all' }, 'body → missed_runs'],
    ['an array input_data', { input_data: [1] }, 'body → input_data'],
    ['a non-UUID machine_id', { machine_id: 'robot' }, 'body → machine_id'],
    ['an unknown field', { every: '1h' }, 'body → every'],
  ])('refuses %s with 422 naming the field', async (_label, fields, field) => {
    const res = await post({ name: name(), process_id: proc.id, cron: '* * * * *', ...fields });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain(field);
  });

  it('refuses a process or machine of another workspace, or a missing one, with 422', async () => {
    const foreignProc = await seedProcess(suite.t.sql, suite.w.tenantB);
    const { row: foreignMachine } = await seedMachine(suite.t.sql, suite.w.tenantB);
    for (const id of [foreignProc.id, MISSING]) {
      const res = await post({ name: name(), process_id: id, cron: '* * * * *' });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'body → process_id', message: 'El proceso no existe en este workspace' }]);
    }
    for (const id of [foreignMachine.id, MISSING]) {
      const res = await post({ name: name(), process_id: proc.id, cron: '* * * * *', machine_id: id });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'body → machine_id', message: 'La máquina no existe en este workspace' }]);
    }
    const own = await create({ name: name(), process_id: proc.id, cron: '* * * * *' });
    expect(fieldsOf((await patch(own.id, { machine_id: foreignMachine.id })).body)).toEqual(['body → machine_id']);
    expect(fieldsOf((await patch(own.id, { process_id: foreignProc.id })).body)).toEqual(['body → process_id']);
  });

  it('refuses a duplicate name in the workspace with 409, and allows it in another', async () => {
    expect((await post({ name: 'dup', process_id: proc.id, cron: '* * * * *' })).status).toBe(201);
    const res = await post({ name: 'dup', process_id: proc.id, cron: '0 * * * *' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    const procB = await seedProcess(suite.t.sql, suite.w.tenantB);
    expect((await post({ name: 'dup', process_id: procB.id, cron: '* * * * *' }, suite.w.adminB)).status).toBe(201);
  });

  it('changes only the fields sent; a new cron or time zone recomputes next_run_at, DELETE deactivates', async () => {
    const s = await create({ name: name(), process_id: proc.id, cron: '0 0 1 1 *' });
    const pri = await update(s.id, { priority: 1, input_data: { x: 1 } });
    expect(pri).toEqual({ ...s, priority: 1, input_data: { x: 1 }, updated_at: pri.updated_at });
    const retimed = await update(s.id, { cron: '0 12 * * *', timezone: 'America/New_York' });
    expect(retimed.next_run_at).toMatch(/T1[67]:00:00\.000Z$/);
    expect(Date.parse(retimed.next_run_at!) - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    expect(fieldsOf((await patch(s.id, { timezone: 'Nowhere/Land' })).body)).toEqual(['body → timezone']);
    expect(fieldsOf((await patch(s.id, { cron: 'every day' })).body)).toEqual(['body → cron']);
    for (const body of [{}, { priority: 9 }, { nombre: 'x' }]) expect((await patch(s.id, body)).status).toBe(422);

    const off = await api().call('deactivateSchedule', { path: { id: s.id } });
    expect(off).toMatchObject({ id: s.id, is_active: false, next_run_at: null });
    const on = await update(s.id, { is_active: true });
    expect(on.next_run_at).toMatch(/T1[67]:00:00\.000Z$/);
    const audit = await suite.t.sql`select action, details from audit_log where resource_id = ${s.id} order by created_at`;
    expect(audit.map((a) => a.action)).toEqual(['create_schedule', 'update_schedule', 'update_schedule', 'deactivate_schedule', 'update_schedule']);
  });

  it('previews the next runs: count 1..50, default 10, in the schedule\'s time zone', async () => {
    const s = await create({ name: name(), process_id: proc.id, cron: '30 2 * * *', timezone: 'Europe/Madrid' });
    const path = { id: s.id };
    const preview = await api(suite.w.member).call('previewSchedule', { path, query: { count: 3 } });
    expect(preview).toMatchObject({ schedule_id: s.id, cron: '30 2 * * *', timezone: 'Europe/Madrid' });
    expect(preview.runs).toHaveLength(3);
    expect(preview.runs[0]).toBe(s.next_run_at);
    for (const r of preview.runs) expect(r).toMatch(/T0[01]:30:00\.000Z$/);
    expect((await api().call('previewSchedule', { path })).runs).toHaveLength(10);
    expect((await api().call('previewSchedule', { path, query: { count: 50 } })).runs).toHaveLength(50);
    for (const q of ['count=0', 'count=51', 'count=x', 'other=1']) {
      const bad = await suite.t.http.get(`${base}/${s.id}/preview?${q}`).set(bearer(suite.w.admin));
      expect([q, bad.status]).toEqual([q, 422]);
    }
  });

  it('lets members read (list, get, preview) but not write; another workspace\'s schedule answers 404', async () => {
    const s = await create({ name: name(), process_id: proc.id, cron: '* * * * *' });
    const { member, adminB } = suite.w;
    const list = await api(member).request('listWorkspaceSchedules', { query: { limit: 100 } });
    expect(list.meta).toMatchObject({ page: 1, limit: 100 });
    expect(list.data.map((x) => x.id)).toContain(s.id);
    expect(await api(member).call('getSchedule', { path: { id: s.id } })).toEqual(s);
    expect((await post({ name: name(), process_id: proc.id, cron: '* * * * *' }, member)).status).toBe(403);
    expect((await patch(s.id, { priority: 2 }, member)).status).toBe(403);
    expect((await suite.t.http.delete(`${base}/${s.id}`).set(bearer(member))).status).toBe(403);
    expect((await suite.t.http.get(base)).status).toBe(401);

    for (const call of [
      () => suite.t.http.get(`${base}/${s.id}`),
      () => suite.t.http.get(`${base}/${s.id}/preview`),
      () => suite.t.http.patch(`${base}/${s.id}`).send({ priority: 9 }),
      () => suite.t.http.delete(`${base}/${s.id}`),
    ]) {
      const res = await call().set(bearer(adminB));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    const listB = await api(adminB).call('listWorkspaceSchedules', { query: { limit: 100 } });
    expect(listB.map((x) => x.id)).not.toContain(s.id);
    expect((await api().call('getSchedule', { path: { id: s.id } })).is_active).toBe(true);
  });

  it('filters the list by process and activity', async () => {
    const other = await seedProcess(suite.t.sql, suite.w.tenantA);
    const mine = await create({ name: name(), process_id: other.id, cron: '* * * * *' });
    const byProcess = await api().call('listWorkspaceSchedules', { query: { process_id: other.id } });
    expect(byProcess.map((x) => x.id)).toEqual([mine.id]);
    // an inactive one, so the filter has something to keep
    await create({ name: name(), process_id: other.id, cron: '* * * * *', is_active: false });
    const inactive = await api().call('listWorkspaceSchedules', { query: { is_active: false, limit: 100 } });
    expect(inactive.length).toBeGreaterThan(0);
    expect(inactive.every((x) => !x.is_active)).toBe(true);
    expect((await suite.t.http.get(`${base}?process_id=nope`).set(bearer(suite.w.admin))).status).toBe(422);
  });
});
