// B2: POST …/items/bulk with 1,000 items per request, 8 connections, against multi-row INSERTs
// of the same rows straight through the `postgres` client (8 connections), in the same run, in
// alternating rounds.
import { itemPayload, seedApiKeys, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { platformCpuMeter, startPlatform } from '../lib/platform.mjs';
import { alternate, checkLoad, load, raw, round, withScenario } from '../lib/scenario.mjs';

export const BULK_SIZE = 1000;

export async function b2(run) {
  return withScenario(run, 'B2', async (s) => {
    const rounds = run.scale < 0.1 ? 1 : 3;
    // at least 3 s: a smoke run has no warm-up, and on a busy host its first 1,000-item requests
    // (cold JIT and key cache) can outlast a 1-second window, which then counts no response at all
    const durationSec = Math.max(3, Math.round((15 * run.scale) / rounds));
    const connections = 8;
    const tenant = await seedTenant(s.sql);
    // 20 bulk requests per minute per key (the public rate-limit table)
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(40, Math.ceil(400 * run.scale)));
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b2');
    const rawQueue = await seedQueue(s.sql, tenant.id, 'bench-b2-raw');
    const payloads = Array.from({ length: BULK_SIZE }, (_, i) => itemPayload(i));
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;

    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile }));
    const res = await alternate(rounds, {
      baseline: {
        run: (i) => raw(run, `b2-raw-insert-${i}`, 'pg-insert.mjs', {
          databaseUrl: s.databaseUrl, tenantId: tenant.id, queueId: rawQueue.id, connections, durationSec, rows: payloads,
        }),
      },
      platform: {
        warm: run.tiny ? null : () => load(run, 'b2-warm-api', { url: platform.baseUrl, method: 'GET', paths: [`${itemsPath}?limit=1`], keys, connections, amount: keys.length }),
        meter: () => platformCpuMeter(s.sql, platform, run.redisPid),
        run: (i) => load(run, `b2-load-api-${i}`, {
          url: platform.baseUrl, method: 'POST', paths: [`${itemsPath}/bulk`], body: { items: payloads }, keys, connections, durationSec,
        }),
      },
    });
    const api = res.platform;
    const baseline = res.baseline;
    checkLoad('B2 API', api);
    const itemsPerSec = (r) => (r.ok * BULK_SIZE) / r.durationSec;
    const [{ n: stored }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;

    return {
      id: 'B2',
      title: 'POST …/items/bulk, 1,000 items/request, 8 connections',
      rows: [
        { figure: 'items/s', unit: 'items/s', platform: round(itemsPerSec(api), 0), baseline: round(itemsPerSec(baseline), 0), ratio: res.ratio(itemsPerSec), target: { minRatio: 0.5 } },
        { figure: 'p99 per request', unit: 'ms', platform: api.latency.p99, baseline: round(baseline.latency.p99, 1), ratio: res.ratio((r) => r.latency.p99), target: null },
      ],
      details: { rounds, durationSec, connections, keys: keys.length, api: { ...api, stored, itemsPerSec: itemsPerSec(api) }, baseline },
    };
  });
}
