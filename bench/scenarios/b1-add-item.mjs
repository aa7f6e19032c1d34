// B1: POST …/items, 64 connections, against a bare Koa + koa-bodyparser echo server under the
// same load (same body, same headers, same client), in the same run. The two are measured in
// alternating rounds, so a neighbour's load on the shared machine hits both alike.
import path from 'node:path';
import { itemPayload, seedApiKeys, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { platformCpuMeter, startPlatform } from '../lib/platform.mjs';
import { cpuMeter, freePort, startNode, stop, waitUntil } from '../lib/proc.mjs';
import { alternate, checkLoad, load, ratio, round, withScenario } from '../lib/scenario.mjs';

export async function b1(run) {
  return withScenario(run, 'B1', async (s) => {
    const rounds = run.scale < 0.1 ? 1 : 3;
    const durationSec = Math.max(1, Math.round((15 * run.scale) / rounds));
    const connections = 64;
    // Both sides get the same warm-up: this POST load for warmSec before the first round (JIT,
    // pools, the API's key cache), and 1 s of it at the start of every round, not counted (the
    // load generator's own JIT and connections). The platform needs a few seconds of load
    // before its figures settle (BENCHMARKS.md, B1).
    const warmSec = run.tiny ? 0 : Math.max(2, Math.round(5 * run.scale));
    const settleSec = run.tiny ? 0 : 1;
    const tenant = await seedTenant(s.sql);
    // 60 requests per minute per key (the public rate-limit table): enough keys that none is limited — at most
    // ~40 uses each at 8,000 req/s (above any rate B1 has reached), warm-up and settling included
    const loadSec = warmSec + rounds * (durationSec + settleSec);
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(50, Math.ceil((loadSec * 8000) / 40)));
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b1');
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;
    const body = { data: itemPayload(1), priority: 3, reference: 'INV-1' };

    const echoPort = await freePort();
    const echo = startNode('b1-echo-server', path.join(run.root, 'bench', 'echo-server.mjs'), [], {
      env: { ...process.env, PORT: String(echoPort) },
      logDir: run.logDir,
    });
    try {
      const echoUrl = `http://127.0.0.1:${echoPort}`;
      await waitUntil('the echo server', async () => fetch(echoUrl, { method: 'POST' }).then(() => true, () => false), { procs: [echo], everyMs: 50 });
      const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile }));
      const common = { method: 'POST', paths: [itemsPath], body, keys, connections, durationSec, settleSec };
      const warm = { durationSec: warmSec, settleSec: 0 };

      const res = await alternate(rounds, {
        baseline: {
          warm: run.tiny ? null : () => load(run, 'b1-warm-echo', { url: echoUrl, ...common, ...warm }),
          meter: () => cpuMeter({ echo: () => [echo.pid] }),
          run: (i) => load(run, `b1-load-echo-${i}`, { url: echoUrl, ...common }),
        },
        platform: {
          warm: run.tiny ? null : () => load(run, 'b1-warm-api', { url: platform.baseUrl, ...common, ...warm }),
          meter: () => platformCpuMeter(s.sql, platform, run.redisPid),
          run: (i) => load(run, `b1-load-api-${i}`, { url: platform.baseUrl, ...common }),
        },
      });
      const rss = platform.peakRss();
      const api = res.platform;
      const baseline = res.baseline;
      checkLoad('B1 echo server', baseline);
      checkLoad('B1 API', api);
      const [{ n: stored }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;

      return {
        id: 'B1',
        title: 'POST …/items, 64 connections',
        rows: [
          { figure: 'requests/s', unit: 'req/s', platform: round(api.rps, 0), baseline: round(baseline.rps, 0), ratio: res.ratio((r) => r.rps), target: { minRatio: 0.4 } },
          { figure: 'p50', unit: 'ms', platform: api.latency.p50, baseline: baseline.latency.p50, ratio: ratio(api.latency.p50, baseline.latency.p50), target: null },
          { figure: 'p99', unit: 'ms', platform: api.latency.p99, baseline: baseline.latency.p99, ratio: ratio(api.latency.p99, baseline.latency.p99), target: { max: 30 } },
        ],
        rss: { api: rss.api, dispatcher: rss.dispatcher },
        details: { rounds, durationSec, warmSec, settleSec, connections, keys: keys.length, api: { ...api, stored }, baseline },
      };
    } finally {
      await stop(echo);
    }
  });
}
