// B1: POST …/items, 64 connections, against a bare Koa + koa-bodyparser echo server under the
// same load (same body, same headers, same client), in the same run.
import path from 'node:path';
import { itemPayload, seedApiKeys, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { startPlatform } from '../lib/platform.mjs';
import { freePort, startNode, stop, waitUntil } from '../lib/proc.mjs';
import { checkLoad, load, ratio, round, withScenario } from '../lib/scenario.mjs';

export async function b1(run) {
  return withScenario(run, 'B1', async (s) => {
    const durationSec = Math.max(1, Math.round(15 * run.scale));
    const connections = 64;
    const tenant = await seedTenant(s.sql);
    // 60 requests per minute per key (contract 8): enough keys that none is limited
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(50, Math.ceil(2500 * run.scale)));
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b1');
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;
    const body = { data: itemPayload(1), priority: 3, reference: 'INV-1' };

    // the baseline
    const echoPort = await freePort();
    const echo = startNode('b1-echo-server', path.join(run.root, 'bench', 'echo-server.mjs'), [], {
      env: { ...process.env, PORT: String(echoPort) },
      logDir: run.logDir,
    });
    let baseline;
    try {
      const url = `http://127.0.0.1:${echoPort}`;
      await waitUntil('the echo server', async () => fetch(url, { method: 'POST' }).then(() => true, () => false), { procs: [echo], everyMs: 50 });
      baseline = await load(run, 'b1-load-echo', {
        url, method: 'POST', paths: [itemsPath], body, keys, connections, durationSec,
        warmup: { method: 'POST', paths: [itemsPath], body, amount: keys.length },
      });
    } finally {
      await stop(echo);
    }
    checkLoad('B1 echo server', baseline);

    // the platform
    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile }));
    const api = await load(run, 'b1-load-api', {
      url: platform.baseUrl, method: 'POST', paths: [itemsPath], body, keys, connections, durationSec,
      // one request per key on another route fills the API key cache without using this route's limit
      warmup: { method: 'GET', paths: [`${itemsPath}?limit=1`], amount: keys.length },
    });
    const rss = platform.peakRss();
    checkLoad('B1 API', api);
    const [{ n: stored }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;

    return {
      id: 'B1',
      title: 'POST …/items, 64 connections',
      rows: [
        { figure: 'requests/s', unit: 'req/s', platform: round(api.rps, 0), baseline: round(baseline.rps, 0), ratio: ratio(api.rps, baseline.rps), target: { minRatio: 0.4 } },
        { figure: 'p50', unit: 'ms', platform: api.latency.p50, baseline: baseline.latency.p50, ratio: ratio(api.latency.p50, baseline.latency.p50), target: null },
        { figure: 'p99', unit: 'ms', platform: api.latency.p99, baseline: baseline.latency.p99, ratio: ratio(api.latency.p99, baseline.latency.p99), target: { max: 30 } },
      ],
      rss: { api: rss.api, dispatcher: rss.dispatcher },
      details: {
        durationSec, connections, keys: keys.length,
        api: { ...api, stored },
        baseline,
      },
    };
  });
}
