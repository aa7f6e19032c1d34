// B2: POST …/items/bulk with 1,000 items per request, 8 connections, against multi-row INSERTs
// of the same rows straight through the `postgres` client (8 connections), in the same run.
import { itemPayload, seedApiKeys, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { startPlatform } from '../lib/platform.mjs';
import { checkLoad, load, ratio, raw, round, withScenario } from '../lib/scenario.mjs';

export const BULK_SIZE = 1000;

export async function b2(run) {
  return withScenario(run, 'B2', async (s) => {
    const durationSec = Math.max(1, Math.round(15 * run.scale));
    const connections = 8;
    const tenant = await seedTenant(s.sql);
    // 20 bulk requests per minute per key (contract 8)
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(40, Math.ceil(400 * run.scale)));
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b2');
    const rawQueue = await seedQueue(s.sql, tenant.id, 'bench-b2-raw');
    const payloads = Array.from({ length: BULK_SIZE }, (_, i) => itemPayload(i));
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;

    const baseline = await raw(run, 'b2-raw-insert', 'pg-insert.mjs', {
      databaseUrl: s.databaseUrl, tenantId: tenant.id, queueId: rawQueue.id, connections, durationSec, rows: payloads,
    });

    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile }));
    const api = await load(run, 'b2-load-api', {
      url: platform.baseUrl, method: 'POST', paths: [`${itemsPath}/bulk`], body: { items: payloads }, keys, connections, durationSec,
      warmup: { method: 'GET', paths: [`${itemsPath}?limit=1`], amount: keys.length },
    });
    checkLoad('B2 API', api);
    const itemsPerSec = (api.ok * BULK_SIZE) / api.durationSec;
    const [{ n: stored }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;

    return {
      id: 'B2',
      title: 'POST …/items/bulk, 1,000 items/request, 8 connections',
      rows: [
        { figure: 'items/s', unit: 'items/s', platform: round(itemsPerSec, 0), baseline: round(baseline.itemsPerSec, 0), ratio: ratio(itemsPerSec, baseline.itemsPerSec), target: { minRatio: 0.5 } },
        { figure: 'p99 per request', unit: 'ms', platform: api.latency.p99, baseline: round(baseline.latency.p99, 1), ratio: ratio(api.latency.p99, baseline.latency.p99), target: null },
      ],
      details: { durationSec, connections, keys: keys.length, api: { ...api, stored, itemsPerSec }, baseline },
    };
  });
}
