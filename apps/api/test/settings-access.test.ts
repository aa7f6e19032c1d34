import { seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer, settingsWorld, type SettingsWorld } from './settings-fixtures';

/** Valid create bodies: the auth checks must fail before any body is looked at. */
const RESOURCES: Array<[string, Record<string, unknown>]> = [
  ['folders', { name: 'acceso' }],
  ['processes', { name: 'acceso' }],
  ['machines', { name: 'acceso' }],
  ['queues', { name: 'acceso' }],
  ['assets', { name: 'acceso', type: 'text', values: { dev: 'v' } }],
];
const MISSING = '00000000-0000-4000-8000-000000000000';

describe.each(RESOURCES)('settings/%s: authentication, role and workspace isolation', (plural, body) => {
  let t: ApiTestContext;
  let w: SettingsWorld;
  let foreign: { id: string; name: string; updated_at: string };
  let expired: string;
  const base = `/api/v1/settings/${plural}`;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await settingsWorld(t);
    expired = (await seedUser(t.sql, w.tenantA, { role: 'admin', tokenExpiresAt: new Date(Date.now() - 1000) })).token;
    const res = await t.http.post(base).set(bearer(w.adminB)).send(body);
    expect(res.status).toBe(201);
    foreign = res.body.data;
  });
  afterAll(() => t.close());

  const calls = () => [
    ['POST', () => t.http.post(base).send(body)],
    ['GET list', () => t.http.get(base)],
    ['GET one', () => t.http.get(`${base}/${foreign.id}`)],
    ['PATCH', () => t.http.patch(`${base}/${foreign.id}`).send({ description: 'x' })],
    ['DELETE', () => t.http.delete(`${base}/${foreign.id}`)],
  ] as const;

  it('answers 401 without a token, with an unknown token and with an expired one, on every route', async () => {
    for (const [label, call] of calls()) {
      const none = await call();
      expect([label, none.status, none.body.error?.code]).toEqual([label, 401, 'UNAUTHORIZED']);
      const unknown = await call().set(bearer('svc_at_not-a-real-token'));
      expect([label, unknown.status]).toEqual([label, 401]);
      const old = await call().set(bearer(expired));
      expect([label, old.status]).toEqual([label, 401]);
    }
  });

  // queues and machines are the work a member watches from the console: readable, never writable
  const membersRead = plural === 'queues' || plural === 'machines';

  it('answers 403 to a member on every route it may not use, before existence or body checks', async () => {
    for (const [label, call] of calls()) {
      const res = await call().set(bearer(w.member));
      if (membersRead && label === 'GET list') {
        expect([label, res.status]).toEqual([label, 200]);
        expect(res.body.data.map((r: { id: string }) => r.id)).not.toContain(foreign.id);
      } else if (membersRead && label === 'GET one') {
        // another workspace's record: the member may read, but not that one
        expect([label, res.status, res.body.error?.code]).toEqual([label, 404, 'NOT_FOUND']);
      } else {
        expect([label, res.status, res.body.error?.code]).toEqual([label, 403, 'FORBIDDEN']);
      }
    }
    const odd = await t.http.patch(`${base}/not-a-uuid`).set(bearer(w.member)).send({ bogus: 1 });
    expect(odd.status).toBe(403);
  });

  it('answers another workspace\'s record exactly like a missing one (404) and leaves it unchanged', async () => {
    for (const id of [foreign.id, MISSING]) {
      const get = await t.http.get(`${base}/${id}`).set(bearer(w.admin));
      const patch = await t.http.patch(`${base}/${id}`).set(bearer(w.admin)).send({ description: 'hijacked' });
      const del = await t.http.delete(`${base}/${id}`).set(bearer(w.admin));
      for (const res of [get, patch, del]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', message: 'Recurso no encontrado' });
      }
    }
    const still = await t.http.get(`${base}/${foreign.id}`).set(bearer(w.adminB));
    expect(still.body.data).toMatchObject({ is_active: true, updated_at: foreign.updated_at });
    expect(still.body.data.description ?? null).toBeNull();
    const list = await t.http.get(base).set(bearer(w.admin));
    expect(list.body.data.map((r: { id: string }) => r.id)).not.toContain(foreign.id);
  });

  it('answers a non-UUID id with 422 on get, update and deactivate', async () => {
    for (const res of [
      await t.http.get(`${base}/12`).set(bearer(w.admin)),
      await t.http.patch(`${base}/abc`).set(bearer(w.admin)).send({ description: 'x' }),
      await t.http.delete(`${base}/abc`).set(bearer(w.admin)),
    ]) {
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'path → id', message: expect.any(String) }]);
    }
  });

  it('lets the other workspace\'s admin use the same name (names are unique per workspace only)', async () => {
    const res = await t.http.post(base).set(bearer(w.admin)).send(body);
    expect(res.status).toBe(201);
    expect(res.body.data.name).toBe(foreign.name);
  });
});
