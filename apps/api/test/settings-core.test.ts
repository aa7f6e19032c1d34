import { ConflictError, ValidationError } from '@svc/core';
import {
  createAsset, createFolder, createMachine, createProcess, createQueue, findAssetByName, findFolderByName,
  findMachineByName, findProcessByName, findQueueByName, listQueues, readAssetValue, updateQueue,
} from '@svc/core/internals';
import { validate } from '@svc/core';
import { AssetResponse, FolderResponse, MachineResponse, MachineWithKeyResponse, ProcessResponse, QueueResponse } from '@svc/core/schemas';
import type { TSchema } from '@sinclair/typebox';
import { seedTenant, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/** The catalogue services as the CLI's `svc apply` calls them: (sql, tenantId, input), snake_case inputs. */
describe('catalogue services called directly', () => {
  let t: ApiTestContext;
  let tenant: string;
  beforeAll(async () => {
    t = await createApiTestContext();
    tenant = (await seedTenant(t.sql)).id;
  });
  afterAll(() => t.close());

  it('finds records by name within the tenant and answers null for an unknown name', async () => {
    const other = (await seedTenant(t.sql)).id;
    await createFolder(t.sql, tenant, { name: 'f' });
    await createProcess(t.sql, tenant, { name: 'p' });
    await createMachine(t.sql, tenant, { name: 'm' });
    await createQueue(t.sql, tenant, { name: 'q' });
    await createAsset(t.sql, t.config.assetEncryptionKey, tenant, { name: 'a', type: 'integer', values: { dev: 1 } });
    expect((await findFolderByName(t.sql, tenant, 'f'))?.name).toBe('f');
    expect((await findProcessByName(t.sql, tenant, 'p'))?.name).toBe('p');
    expect((await findMachineByName(t.sql, tenant, 'm'))?.name).toBe('m');
    expect((await findQueueByName(t.sql, tenant, 'q'))?.max_retries).toBe(3);
    expect((await findAssetByName(t.sql, t.config.assetEncryptionKey, tenant, 'a'))?.values.dev).toBe(1);
    expect(await findQueueByName(t.sql, other, 'q')).toBeNull();
    expect(await findProcessByName(t.sql, tenant, 'nope')).toBeNull();
  });

  it('throws typed errors: ValidationError for bad input, ConflictError for a duplicate name', async () => {
    await expect(createQueue(t.sql, tenant, { name: 'bad', max_retries: 11 })).rejects.toBeInstanceOf(ValidationError);
    await expect(createProcess(t.sql, tenant, { name: 'bad', input_schema: { type: 7 } })).rejects.toBeInstanceOf(ValidationError);
    await createQueue(t.sql, tenant, { name: 'once' });
    await expect(createQueue(t.sql, tenant, { name: 'once' })).rejects.toBeInstanceOf(ConflictError);
  });

  it('lets two concurrent creates of one name race: exactly one wins, the other gets ConflictError', async () => {
    const results = await Promise.allSettled([
      createQueue(t.sql, tenant, { name: 'race' }),
      createQueue(t.sql, tenant, { name: 'race' }),
      createQueue(t.sql, tenant, { name: 'race' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected.map((r) => r.reason instanceof ConflictError)).toEqual([true, true]);
  });

  it('composes inside a caller\'s transaction and rolls back with it', async () => {
    const key = t.config.assetEncryptionKey;
    await expect(
      t.sql.begin(async (tx) => {
        const proc = await createProcess(tx, tenant, { name: 'tx-proc' });
        const q = await createQueue(tx, tenant, { name: 'tx-queue', consumer_process_id: proc.id });
        await updateQueue(tx, tenant, q.id, { max_consumers: 4 });
        await createAsset(tx, key, tenant, { name: 'tx-cred', type: 'credential', values: { dev: { username: 'u', password: 'p' } } });
        expect((await readAssetValue(tx, key, tenant, 'tx-cred', 'dev')).value).toEqual({ username: 'u', password: 'p' });
        throw new Error('abort the apply');
      }),
    ).rejects.toThrow('abort the apply');
    expect(await findQueueByName(t.sql, tenant, 'tx-queue')).toBeNull();
    expect(await findProcessByName(t.sql, tenant, 'tx-proc')).toBeNull();
    expect(await findAssetByName(t.sql, key, tenant, 'tx-cred')).toBeNull();
  });

  it('survives a duplicate name inside a caller\'s transaction (savepoint), so the apply can go on', async () => {
    const key = t.config.assetEncryptionKey;
    await createAsset(t.sql, key, tenant, { name: 'sp', type: 'text' });
    await createFolder(t.sql, tenant, { name: 'sp' });
    const after = await t.sql.begin(async (tx) => {
      await expect(createAsset(tx, key, tenant, { name: 'sp', type: 'text' })).rejects.toBeInstanceOf(ConflictError);
      await expect(createFolder(tx, tenant, { name: 'sp' })).rejects.toBeInstanceOf(ConflictError);
      await createQueue(tx, tenant, { name: 'after-conflicts' });
      return listQueues(tx, tenant, { limit: 100 });
    });
    expect(after.rows.map((q) => q.name)).toContain('after-conflicts');
    expect(await findQueueByName(t.sql, tenant, 'after-conflicts')).not.toBeNull();
  });

  it('answers with records that match the response schemas the OpenAPI document shows', async () => {
    const admin = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
    const auth = { Authorization: `Bearer ${admin}` };
    const cases: Array<[string, object, TSchema, TSchema]> = [
      ['folders', { name: 'doc-f' }, FolderResponse, FolderResponse],
      ['processes', { name: 'doc-p', input_schema: { type: 'object' }, tags: ['a'] }, ProcessResponse, ProcessResponse],
      ['machines', { name: 'doc-m' }, MachineWithKeyResponse, MachineResponse],
      ['queues', { name: 'doc-q' }, QueueResponse, QueueResponse],
      ['assets', { name: 'doc-a', type: 'credential', values: { dev: { username: 'u', password: 'p' } } }, AssetResponse, AssetResponse],
      ['assets', { name: 'doc-i', type: 'integer', values: { dev: 3 } }, AssetResponse, AssetResponse],
    ];
    for (const [plural, body, created, read] of cases) {
      const res = await t.http.post(`/api/v1/settings/${plural}`).set(auth).send(body);
      expect(res.status).toBe(201);
      expect(() => validate(created, res.body.data)).not.toThrow();
      const got = await t.http.get(`/api/v1/settings/${plural}/${res.body.data.id}`).set(auth);
      expect(() => validate(read, got.body.data)).not.toThrow();
    }
  });
});
