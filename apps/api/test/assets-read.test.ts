import type { Environment } from '@svc/core';
import { createAsset } from '@svc/core/internals';
import { seedApiKey, seedTenant } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const url = (name: string, qs = '') => `/api/v1/assets/by-name/${encodeURIComponent(name)}${qs ? `?${qs}` : ''}`;

describe('GET /api/v1/assets/by-name/:name', () => {
  let t: ApiTestContext;
  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());

  /** A workspace with a text asset and a credential asset, each with a value per environment. */
  async function workspace() {
    const tenant = await seedTenant(t.sql);
    const text = await createAsset(t.sql, t.config.assetEncryptionKey, tenant.id, {
      name: 'erp-url',
      type: 'text',
      description: 'ERP base URL',
      values: { dev: 'https://erp.dev', staging: 'https://erp.staging', production: 'https://erp.prod' },
    });
    const cred = await createAsset(t.sql, t.config.assetEncryptionKey, tenant.id, {
      name: 'erp-login',
      type: 'credential',
      values: {
        dev: { username: 'dev-bot', password: 'dev-secret' },
        production: { username: 'prod-bot', password: 'Pr0d-S3cret!' },
      },
    });
    const key = async (environments: Environment[] | null, scopes = ['assets:read']) =>
      (await seedApiKey(t.sql, tenant.id, { scopes, environments })).key;
    return { tenant, text, cred, key };
  }

  /** A read as a robot or an integrator makes it, through the typed client (@svc/client). */
  const readAsset = (key: string, name: string, environment?: Environment, headers?: Record<string, string>) =>
    apiClient(t, { apiKey: key }).request('readAsset', { path: { name }, query: environment ? { environment } : {}, ...(headers ? { headers } : {}) });

  async function audits(tenantId: string) {
    return t.sql`select * from audit_log where tenant_id = ${tenantId} and action = 'read_asset' order by id`;
  }

  it('reads a text value: {id, name, type, description, environment, value}', async () => {
    const w = await workspace();
    expect(await readAsset(await w.key(null), 'erp-url', 'staging')).toEqual({
      success: true,
      data: { id: w.text.id, name: 'erp-url', type: 'text', description: 'ERP base URL', environment: 'staging', value: 'https://erp.staging' },
    });
  });

  it('reads integer and boolean values with their JSON types', async () => {
    const w = await workspace();
    const key = await w.key(null);
    await createAsset(t.sql, t.config.assetEncryptionKey, w.tenant.id, { name: 'batch-size', type: 'integer', values: { production: 250 } });
    await createAsset(t.sql, t.config.assetEncryptionKey, w.tenant.id, { name: 'dry-run', type: 'boolean', values: { production: false } });
    const n = await readAsset(key, 'batch-size');
    expect(n.data).toMatchObject({ type: 'integer', environment: 'production', value: 250 });
    const b = await readAsset(key, 'dry-run');
    expect(b.data).toMatchObject({ type: 'boolean', environment: 'production', value: false });
  });

  describe('choosing the environment', () => {
    it('defaults to production for a key that may read every environment', async () => {
      const w = await workspace();
      const res = await readAsset(await w.key(null), 'erp-url');
      expect(res.data).toMatchObject({ environment: 'production', value: 'https://erp.prod' });
    });

    it('defaults to production when the key lists it among others', async () => {
      const w = await workspace();
      const res = await readAsset(await w.key(['staging', 'production']), 'erp-url');
      expect(res.data).toMatchObject({ environment: 'production', value: 'https://erp.prod' });
    });

    it('defaults to the only environment of a single-environment key', async () => {
      const w = await workspace();
      const res = await readAsset(await w.key(['dev']), 'erp-url');
      expect(res.data).toMatchObject({ environment: 'dev', value: 'https://erp.dev' });
    });

    it('asks a key limited to several non-production environments to choose (422)', async () => {
      const w = await workspace();
      const key = await w.key(['dev', 'staging']);
      const res = await t.http.get(url('erp-url')).set('X-API-Key', key);
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'query → environment', message: 'Indica el entorno: la API key puede leer dev, staging' }]);
      const chosen = await readAsset(key, 'erp-url', 'staging');
      expect(chosen.data).toMatchObject({ environment: 'staging', value: 'https://erp.staging' });
    });
  });

  describe('a key limited to dev or staging never reads production', () => {
    it.each([[['dev']], [['staging']], [['dev', 'staging']]] as Array<[Environment[]]>)(
      'refuses production to a %j key with 403, for text and credentials',
      async (environments) => {
        const w = await workspace();
        const key = await w.key(environments);
        for (const name of ['erp-url', 'erp-login']) {
          const res = await t.http.get(url(name, 'environment=production')).set('X-API-Key', key);
          expect(res.status).toBe(403);
          expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'La API key no tiene acceso al entorno production' });
          expect(JSON.stringify(res.body)).not.toMatch(/prod-bot|Pr0d-S3cret|erp\.prod/);
        }
        expect(await audits(w.tenant.id)).toHaveLength(0);
      },
    );

    it('refuses an environment outside the key even when the asset does not exist (403 before 404)', async () => {
      const w = await workspace();
      const res = await t.http.get(url('no-such-asset', 'environment=production')).set('X-API-Key', await w.key(['dev']));
      expect(res.status).toBe(403);
    });

    it('refuses every read to a key whose environment list is empty (fail-closed)', async () => {
      const w = await workspace();
      const res = await t.http.get(url('erp-url', 'environment=dev')).set('X-API-Key', await w.key([]));
      expect(res.status).toBe(403);
      expect((await t.http.get(url('erp-url')).set('X-API-Key', await w.key([]))).status).toBe(403);
    });
  });

  describe('credentials', () => {
    it('decrypts the credential and writes one audit row per read, without the value', async () => {
      const w = await workspace();
      const { row: keyRow, key } = await seedApiKey(t.sql, w.tenant.id, { scopes: ['assets:read'], environments: null });
      const res = await readAsset(key, 'erp-login', undefined, { 'X-Request-Id': 'read-cred-1' });
      expect(res.data).toEqual({
        id: w.cred.id, name: 'erp-login', type: 'credential', description: null, environment: 'production',
        value: { username: 'prod-bot', password: 'Pr0d-S3cret!' },
      });
      expect((await readAsset(key, 'erp-login', 'dev')).data.value).toEqual({ username: 'dev-bot', password: 'dev-secret' });

      const rows = await audits(w.tenant.id);
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({
        actor_type: 'api_key', actor_id: keyRow.id, action: 'read_asset', source: 'api', resource_type: 'asset',
        resource_id: w.cred.id, request_id: 'read-cred-1',
        details: { name: 'erp-login', type: 'credential', environment: 'production' },
      });
      expect(rows[1]!.details).toMatchObject({ environment: 'dev' });
      const stored = JSON.stringify(rows);
      expect(stored).not.toContain('Pr0d-S3cret!');
      expect(stored).not.toContain('dev-secret');
    });

    it('keeps the credential encrypted at rest', async () => {
      const w = await workspace();
      const [v] = await t.sql`select value, secret from asset_values where asset_id = ${w.cred.id} and environment = 'production'`;
      expect(v!.value).toBeNull();
      expect(Buffer.from(v!.secret).toString('latin1')).not.toContain('Pr0d-S3cret!');
    });

    it('does not audit reads of plain values', async () => {
      const w = await workspace();
      expect((await readAsset(await w.key(null), 'erp-url')).data.value).toBe('https://erp.prod');
      expect(await audits(w.tenant.id)).toHaveLength(0);
    });
  });

  describe('existence', () => {
    it('answers 404 for an unknown name, an inactive asset and another workspace\'s asset, alike', async () => {
      const w = await workspace();
      const other = await seedTenant(t.sql);
      await createAsset(t.sql, t.config.assetEncryptionKey, other.id, {
        name: 'their-login', type: 'credential', values: { production: { username: 'them', password: 'their-secret' } },
      });
      await t.sql`update assets set is_active = false where id = ${w.text.id}`;
      const key = await w.key(null);
      const errors = [];
      for (const name of ['no-such-asset', 'erp-url', 'their-login']) {
        const res = await t.http.get(url(name)).set('X-API-Key', key);
        expect(res.status).toBe(404);
        expect(JSON.stringify(res.body)).not.toContain('their-secret');
        const { request_id, ...rest } = res.body.error;
        expect(request_id).toEqual(expect.any(String));
        errors.push(rest);
      }
      expect(errors).toEqual([0, 1, 2].map(() => ({ code: 'NOT_FOUND', message: 'Recurso no encontrado' })));
      expect(await t.sql`select 1 from audit_log where action = 'read_asset' and tenant_id in (${w.tenant.id}, ${other.id})`).toHaveLength(0);
    });

    it('answers 404 with a clear message when the asset has no value for the environment', async () => {
      const w = await workspace();
      await expect(readAsset(await w.key(null), 'erp-login', 'staging'))
        .rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'El asset erp-login no tiene valor en el entorno staging' });
      expect(await audits(w.tenant.id)).toHaveLength(0);
    });
  });

  describe('invalid input and error order', () => {
    it.each([['environment=prod'], ['environment=PRODUCTION'], ['environment=dev&environment=staging'], ['version=2']])(
      'rejects %s with 422 at query → …',
      async (qs) => {
        const w = await workspace();
        const res = await t.http.get(url('erp-url', qs)).set('X-API-Key', await w.key(null));
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
        expect(res.body.error.details[0].field).toMatch(/^query → /);
      },
    );

    it('answers 404 rather than 422 for an unknown asset with an invalid query', async () => {
      const w = await workspace();
      const res = await t.http.get(url('no-such-asset', 'environment=prod')).set('X-API-Key', await w.key(null));
      expect(res.status).toBe(404);
    });

    it('answers 401 without a valid key and 403 without assets:read, before looking the asset up', async () => {
      const w = await workspace();
      expect((await t.http.get(url('erp-login'))).status).toBe(401);
      expect((await t.http.get(url('erp-login')).set('X-API-Key', 'svc_ak_wrong')).status).toBe(401);
      const noScope = await w.key(null, ['processes:read', 'machines:read']);
      const res = await t.http.get(url('no-such-asset')).set('X-API-Key', noScope);
      expect(res.status).toBe(403);
      expect(res.body.error.message).toContain('assets:read');
      expect(await audits(w.tenant.id)).toHaveLength(0);
    });
  });

  it('allows 30 reads a minute per key, then answers 429', async () => {
    const w = await workspace();
    const key = await w.key(null);
    for (let i = 0; i < 30; i++) expect((await t.http.get(url('erp-url')).set('X-API-Key', key)).status).toBe(200);
    const res = await t.http.get(url('erp-url')).set('X-API-Key', key);
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(res.headers['x-ratelimit-limit']).toBe('30');
  });
});
