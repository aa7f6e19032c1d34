import { seedQueue, seedTenant, seedUser } from '@svc/testing';
import type { QueryOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer } from './settings-fixtures';

const URL = '/api/v1/settings/audit-log';
const ENTRY_FIELDS = ['id', 'created_at', 'action', 'actor_type', 'actor_id', 'source', 'resource_type', 'resource_id', 'details', 'request_id', 'ip'];

/** GET /settings/audit-log: what the workspace's admins read, complete and without a secret (docs/decisions/audit-log.md). */
describe('GET /api/v1/settings/audit-log', () => {
  let t: ApiTestContext;
  let tenantId: string;
  let admin: { token: string; user: { id: string } };
  let member: string;
  let adminB: string;
  const secrets: string[] = [];
  let keyId: string;
  let jobIds: string[];
  let queueId: string;
  let itemId: string;

  beforeAll(async () => {
    t = await createApiTestContext();
    const tenant = await seedTenant(t.sql);
    tenantId = tenant.id;
    admin = (await seedUser(t.sql, tenantId, { role: 'admin' })) as never;
    member = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
    const b = await seedTenant(t.sql);
    adminB = (await seedUser(t.sql, b.id, { role: 'admin' })).token;
    secrets.push(admin.token);
    // what an admin and an integrator do, through the typed client (@svc/client)
    const console_ = apiClient(t, { token: admin.token });

    // keys: created, rotated, revoked (the secrets shown once must never be in the log)
    const created = await console_.call('createApiKey', { body: { name: 'erp', scopes: ['jobs:write', 'jobs:stop', 'assets:read'] } });
    keyId = created.id;
    const rotated = await console_.call('rotateApiKey', { path: { key_id: keyId } });
    secrets.push(created.key, rotated.key);
    const spare = await console_.call('createApiKey', { body: { name: 'spare', scopes: ['jobs:read'] } });
    secrets.push(spare.key);
    await console_.call('revokeApiKey', { path: { key_id: spare.id } });
    const integrator = apiClient(t, { apiKey: rotated.key });

    // catalogue changes, with a machine key and a credential value
    const machine = await console_.call('createMachine', { body: { name: 'robot-1' } });
    secrets.push(machine.machine_key);
    await t.sql`update machines set status = 'online', last_heartbeat_at = now() where id = ${machine.id}`;
    const process = await console_.call('createProcess', { body: { name: 'facturas' } });
    await console_.call('createAsset', { body: { name: 'erp-login', type: 'credential', values: { production: { username: 'bot', password: 'Sup3r-S3cret-Pw' } } } });
    secrets.push('Sup3r-S3cret-Pw');
    await integrator.call('readAsset', { path: { name: 'erp-login' }, query: { environment: 'production' } });

    // triggers by API and by webhook, and a stop
    const api = await integrator.call('triggerJob', { body: { process_id: process.id, machine_id: machine.id } });
    const hook = await integrator.call('triggerJobByWebhook', { path: { process_id: process.id }, body: { machine_id: machine.id } });
    jobIds = [api.id, hook.id];
    await integrator.call('stopJob', { path: { job_id: api.id } });

    // a review
    const queue = await seedQueue(t.sql, tenantId);
    queueId = queue.id as string;
    const [item] = await t.sql`insert into queue_item_records (tenant_id, queue_id, status, data) values (${tenantId}, ${queueId}, 'pending_review', '{}') returning id`;
    itemId = item!.id as string;
    await console_.call('approveQueueItem', { path: { queue_id: queueId, item_id: itemId }, body: { comment: 'ok' } });
  });
  afterAll(() => t.close());

  const read = (query: Record<string, unknown> = {}, token = admin.token) => t.http.get(URL).query(query).set(bearer(token));
  /** A page as the console reads it, through the typed client. */
  const page = (query: QueryOf<'readAuditLog'> = {}, token = admin.token) => apiClient(t, { token }).request('readAuditLog', { query });
  /** Every entry the filters match, following the cursor (the client's `list`). */
  const all = async (query: Record<string, unknown> = {}) => {
    const out: Array<Record<string, any>> = [];
    for await (const e of apiClient(t, { token: admin.token }).list('readAuditLog', { query: { ...query, limit: 100 } as QueryOf<'readAuditLog'> })) out.push(e);
    return out;
  };

  it('records every action asked for, newest first, with who, how, on what and from where', async () => {
    const entries = await all();
    const actions = entries.map((e) => e.action);
    for (const action of [
      'create_api_key', 'rotate_api_key', 'revoke_api_key', 'create_machine', 'create_process', 'create_asset', 'read_asset',
      'trigger_job', 'stop_job', 'approve_queue_item',
    ]) {
      expect([action, actions.includes(action)]).toEqual([action, true]);
    }
    for (const e of entries) expect(Object.keys(e).sort()).toEqual([...ENTRY_FIELDS].sort());
    const order = entries.map((e) => [Date.parse(e.created_at), e.id]);
    const sorted = [...order].sort((x, y) => y[0]! - x[0]! || y[1]! - x[1]!);
    expect(order).toEqual(sorted);

    const triggers = entries.filter((e) => e.action === 'trigger_job');
    expect(triggers.map((e) => e.source).sort()).toEqual(['api', 'webhook']);
    expect(triggers.every((e) => e.actor_type === 'api_key' && e.actor_id === keyId && jobIds.includes(e.resource_id))).toBe(true);
    const creation = entries.find((e) => e.action === 'create_api_key' && e.resource_id === keyId)!;
    expect(creation).toMatchObject({
      actor_type: 'user', actor_id: admin.user.id, source: 'api', resource_type: 'api_key',
      request_id: expect.any(String), ip: expect.any(String),
    });
    expect(creation.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const review = entries.find((e) => e.action === 'approve_queue_item')!;
    expect(review).toMatchObject({ actor_type: 'user', actor_id: admin.user.id, resource_id: itemId });
  });

  it('holds no secret anywhere: key secrets, the machine key, credential values, access tokens', async () => {
    const text = JSON.stringify(await all());
    expect(secrets.length).toBe(6);
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
  });

  it('filters by each field, alone and together', async () => {
    const entries = await all();
    const pick = (f: (e: Record<string, any>) => boolean) => entries.filter(f).map((e) => e.id);
    const ids = async (q: Record<string, unknown>) => (await all(q)).map((e) => e.id);
    expect(await ids({ action: 'trigger_job' })).toEqual(pick((e) => e.action === 'trigger_job'));
    expect(await ids({ actor_type: 'api_key' })).toEqual(pick((e) => e.actor_type === 'api_key'));
    expect(await ids({ actor_id: keyId })).toEqual(pick((e) => e.actor_id === keyId));
    expect(await ids({ resource_type: 'api_key' })).toEqual(pick((e) => e.resource_type === 'api_key'));
    expect(await ids({ resource_id: jobIds[0] })).toEqual(pick((e) => e.resource_id === jobIds[0]));
    expect(await ids({ resource_id: jobIds[0], action: 'stop_job' })).toEqual(pick((e) => e.resource_id === jobIds[0] && e.action === 'stop_job'));
    expect((await ids({ resource_id: jobIds[0] })).length).toBe(2);
    // since is inclusive, until exclusive
    const since = entries[Math.floor(entries.length / 2)]!.created_at as string;
    expect(await ids({ since })).toEqual(pick((e) => Date.parse(e.created_at) >= Date.parse(since)));
    expect((await ids({ since })).length).toBeGreaterThan(0);
    expect(await ids({ since: '2000-01-01T00:00:00Z', until: '2100-01-01T00:00:00Z' })).toEqual(entries.map((e) => e.id));
    expect(await ids({ until: '2000-01-01T00:00:00Z' })).toEqual([]);
    expect(await ids({ until: since })).toEqual(pick((e) => Date.parse(e.created_at) < Date.parse(since)));
  });

  it('pages by cursor without repeats or gaps, entries sharing a timestamp included', async () => {
    // five entries written in one transaction share created_at
    await t.sql.begin(async (tx) => {
      for (let i = 0; i < 5; i++) {
        await tx`insert into audit_log (tenant_id, actor_type, action, source, details) values (${tenantId}, 'system', 'same_instant', 'cli', ${tx.json({ i })})`;
      }
    });
    const everything = (await all()).map((e) => e.id);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await page({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.meta.limit).toBe(2);
      expect(res.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.data.map((e) => e.id));
      cursor = res.meta.next_cursor;
      pages++;
    } while (cursor && pages < 100);
    expect(seen).toEqual(everything);
    expect(new Set(seen).size).toBe(seen.length);
    const last = await page({ limit: 100 });
    expect(last.meta).toEqual({ limit: 100, next_cursor: null });
    expect((await page()).meta.limit).toBe(50);
  });

  it('answers 422 to bad cursors, limits, dates, filters and hostile text, naming the field', async () => {
    const forged = Buffer.from('2026-01-01T00:00:00.000000Z|x', 'utf8').toString('base64url');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ cursor: 'garbage!' }, 'query → cursor'],
      [{ cursor: forged }, 'query → cursor'],
      [{ cursor: Buffer.from("1' or 1=1 --").toString('base64url') }, 'query → cursor'],
      [{ cursor: 'x'.repeat(201) }, 'query → cursor'],
      [{ limit: 0 }, 'query → limit'],
      [{ limit: 101 }, 'query → limit'],
      [{ limit: 'ten' }, 'query → limit'],
      [{ since: 'yesterday' }, 'query → since'],
      [{ until: '2026-13-01T00:00:00Z' }, 'query → until'],
      [{ since: '2026-02-01T00:00:00Z', until: '2026-01-01T00:00:00Z' }, 'query → until'],
      [{ actor_type: 'robot' }, 'query → actor_type'],
      [{ actor_id: 'abc' }, 'query → actor_id'],
      [{ resource_id: '12' }, 'query → resource_id'],
      [{ action: 'a\u0000b' }, 'query → action'],
      [{ action: 'x'.repeat(101) }, 'query → action'],
      [{ action: ['a', 'b'] }, 'query → action'],
      [{ resource_type: '' }, 'query → resource_type'],
    ];
    for (const [query, field] of cases) {
      const res = await read(query);
      expect([field, JSON.stringify(query).slice(0, 60), res.status, res.body.error?.code]).toEqual([field, JSON.stringify(query).slice(0, 60), 422, 'VALIDATION_ERROR']);
      expect(res.body.error.details[0].field).toBe(field);
    }
    expect((await read({ bogus: 1 })).status).toBe(422);
  });

  it('shows a workspace only its own entries', async () => {
    const other = await page({ limit: 100 }, adminB);
    expect(other.data.some((e) => e.resource_id === keyId)).toBe(false);
    // another workspace's key id as a filter finds nothing
    expect((await page({ actor_id: keyId }, adminB)).data).toEqual([]);
  });

  it('is for admins only: 401 without a token, 403 for a member', async () => {
    expect((await t.http.get(URL)).status).toBe(401);
    const res = await read({}, member);
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('allows 120 requests a minute per access token, then answers 429', async () => {
    const token = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    for (let i = 0; i < 120; i++) expect((await read({ limit: 1 }, token)).status).toBe(200);
    const res = await read({ limit: 1 }, token);
    expect([res.status, res.body.error.code]).toEqual([429, 'RATE_LIMIT_EXCEEDED']);
  });

});
