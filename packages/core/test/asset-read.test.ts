import { ValidationError, type Environment } from '@svc/core';
import { createAsset, deactivateAsset, readAssetWithKey, readStoredCredentials, type AssetReader } from '@svc/core/internals';
import { databaseSuite, seedTenant, refusal } from '@svc/testing';

/** The asset environment policy and the credential-read audit (docs/decisions/assets-read.md). */
const db = databaseSuite();
const key = () => db.ctx.config.assetEncryptionKey;

async function workspace() {
  const tenant = await seedTenant(db.sql);
  const text = await createAsset(db.sql, key(), tenant.id, {
    name: 'erp-url', type: 'text', values: { dev: 'https://erp.dev', staging: 'https://erp.staging', production: 'https://erp.prod' },
  });
  const cred = await createAsset(db.sql, key(), tenant.id, {
    name: 'erp-login', type: 'credential', values: { dev: { username: 'dev-bot', password: 'dev-secret' } },
  });
  const reader = (environments: Environment[] | null): AssetReader =>
    ({ tenantId: tenant.id, keyId: '00000000-0000-4000-8000-000000000001', environments, requestId: 'req-1', ip: '10.0.0.9' });
  const audits = () => db.sql`select * from audit_log where tenant_id = ${tenant.id} and action = 'read_asset' order by id`;
  return { tenant, text, cred, reader, audits };
}

describe('readAssetWithKey', () => {
  it('defaults to production, else to the key\'s only environment, and reads what was asked', async () => {
    const w = await workspace();
    expect((await readAssetWithKey(db.sql, key(), w.reader(null), { name: 'erp-url', environment: undefined })).value).toBe('https://erp.prod');
    const dev = await readAssetWithKey(db.sql, key(), w.reader(['dev']), { name: 'erp-url', environment: undefined });
    expect({ environment: dev.environment, value: dev.value, id: dev.asset.id }).toEqual({ environment: 'dev', value: 'https://erp.dev', id: w.text.id });
    expect((await readAssetWithKey(db.sql, key(), w.reader(null), { name: 'erp-url', environment: 'staging' })).value).toBe('https://erp.staging');
    expect(await w.audits()).toHaveLength(0);
  });

  it('refuses a disallowed environment with 403 before looking the asset up, and a key with no environment', async () => {
    const w = await workspace();
    expect(await refusal(readAssetWithKey(db.sql, key(), w.reader(['dev']), { name: 'no-such-asset', environment: 'production' })))
      .toEqual({ status: 403, message: 'La API key no tiene acceso al entorno production' });
    expect(await refusal(readAssetWithKey(db.sql, key(), w.reader([]), { name: 'erp-url', environment: undefined })))
      .toEqual({ status: 403, message: 'La API key no tiene acceso a ningún entorno' });
  });

  it('puts 404 before the request checks and 422, and asks a key of several non-production environments to choose', async () => {
    const w = await workspace();
    const checked: string[] = [];
    const checkRequest = () => void checked.push('checked');
    expect(await refusal(readAssetWithKey(db.sql, key(), w.reader(['dev', 'staging']), { name: 'nope', environment: undefined, checkRequest })))
      .toEqual({ status: 404, message: 'Recurso no encontrado' });
    expect(checked).toEqual([]);
    const err = await readAssetWithKey(db.sql, key(), w.reader(['dev', 'staging']), { name: 'erp-url', environment: 'prod', checkRequest }).catch((e) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues.map((i) => [i.field, i.message])).toEqual([['query → environment', 'Indica el entorno: la API key puede leer dev, staging']]);
    expect(checked).toEqual(['checked']);
  });

  it('answers 404 for an inactive or another workspace\'s asset, and for an environment without a value', async () => {
    const w = await workspace();
    const other = await workspace();
    await deactivateAsset(db.sql, key(), w.tenant.id, w.text.id);
    expect((await refusal(readAssetWithKey(db.sql, key(), w.reader(null), { name: 'erp-url', environment: 'dev' }))).status).toBe(404);
    // the other workspace's own erp-url is still there; this one's reader never sees it
    expect((await readAssetWithKey(db.sql, key(), other.reader(null), { name: 'erp-url', environment: 'dev' })).value).toBe('https://erp.dev');
    expect(await refusal(readAssetWithKey(db.sql, key(), w.reader(null), { name: 'erp-login', environment: 'staging' })))
      .toEqual({ status: 404, message: 'El asset erp-login no tiene valor en el entorno staging' });
    expect(await w.audits()).toHaveLength(0);
  });

  it('audits a credential read (key, request, asset, environment; never the value) and returns it decrypted', async () => {
    const w = await workspace();
    const read = await readAssetWithKey(db.sql, key(), w.reader(['dev']), { name: 'erp-login', environment: 'dev' });
    expect(read.value).toEqual({ username: 'dev-bot', password: 'dev-secret' });
    const rows = await w.audits();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_type: 'api_key', actor_id: '00000000-0000-4000-8000-000000000001', source: 'api', resource_type: 'asset',
      resource_id: w.cred.id, details: { name: 'erp-login', type: 'credential', environment: 'dev' }, request_id: 'req-1', ip: '10.0.0.9',
    });
    expect(JSON.stringify(rows[0])).not.toContain('dev-secret');
  });
});

describe('readStoredCredentials', () => {
  it('opens an asset\'s stored credentials per environment, and nothing of a plain asset', async () => {
    const w = await workspace();
    const stored = await readStoredCredentials(db.sql, key(), w.cred.id);
    expect([...stored]).toEqual([['dev', { username: 'dev-bot', password: 'dev-secret' }]]);
    expect((await readStoredCredentials(db.sql, key(), w.text.id)).size).toBe(0);
    // sealed with another key, a credential does not open
    await expect(readStoredCredentials(db.sql, Buffer.alloc(32, 1), w.cred.id)).rejects.toThrow(/could not be decrypted/);
  });
});
