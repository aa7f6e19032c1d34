// B9: GET /api/v1/queues/by-name/{name}/items/export on a queue of 1,000,000 items (seeded as B5
// seeds its queue), read to the end by one client, once as NDJSON and once as CSV. Measured:
// items per second of each, the rows received checked against the queue, and the API process's
// peak resident memory (VmHWM, its whole life) with a sample of its RSS every 100 ms during the
// exports: an export reads keyset chunks as the client takes them, so memory must not grow with
// the queue (target ≤ 300 MB; docs/decisions/export.md).
import { seedApiKeys, seedItems, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { peakRssMb } from '../lib/proc.mjs';
import { startPlatform } from '../lib/platform.mjs';
import { round, withScenario } from '../lib/scenario.mjs';
import { readFileSync } from 'node:fs';

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

/** Reads a download to its end without keeping it: bytes and line ends counted as they pass. */
async function readToEnd(url, key) {
  const started = process.hrtime.bigint();
  const res = await fetch(url, { headers: { 'x-api-key': key } });
  if (res.status !== 200) throw new Error(`B9: export answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body) {
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes, lines };
}

export async function b9(run) {
  return withScenario(run, 'B9', async (s) => {
    const total = Math.max(10_000, Math.round(1_000_000 * run.scale));
    const tenant = await seedTenant(s.sql);
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b9');
    const seedStarted = Date.now();
    await seedItems(s.sql, queue, total);
    const seedSec = (Date.now() - seedStarted) / 1000;
    const [key] = await seedApiKeys(s.sql, tenant.id, 1);
    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api'], profile: run.profile }));
    const pid = platform.procs.api.pid;
    const rssBefore = rssMb(pid);
    const samples = [];
    const sampler = setInterval(() => samples.push(rssMb(pid)), 100);
    const url = `${platform.baseUrl}/api/v1/queues/by-name/${queue.name}/items/export`;
    const rows = [];
    const details = { total, seedSec, rssBeforeMb: rssBefore, formats: {} };
    try {
      for (const format of ['ndjson', 'csv']) {
        const r = await readToEnd(`${url}?format=${format}`, key);
        // CSV has a header line; seedItems's payloads hold no line break
        const received = format === 'csv' ? r.lines - 1 : r.lines;
        const complete = received === total;
        rows.push({
          figure: `items exported per second, ${format.toUpperCase()}`, unit: 'items/s', platform: round(total / r.seconds, 0), baseline: null, ratio: null,
          target: null, note: `${round(r.bytes / 2 ** 20, 1)} MiB in ${round(r.seconds, 1)} s; ${complete ? 'every item received' : `${received} of ${total} items received: INCOMPLETE`}`,
          totalExact: complete,
        });
        details.formats[format] = { ...r, received, complete };
      }
    } finally {
      clearInterval(sampler);
    }
    const peak = peakRssMb(pid);
    const sampled = samples.filter((x) => x !== null);
    rows.push({
      figure: 'API peak RSS while exporting (VmHWM)', unit: 'MB', platform: peak, baseline: rssBefore, ratio: null, target: { max: 300 },
      note: `baseline column: the API's RSS before the exports; highest 100 ms sample ${sampled.length ? Math.max(...sampled) : '?'} MB`,
    });
    details.rssSamplesMb = { count: sampled.length, max: sampled.length ? Math.max(...sampled) : null, last: sampled.at(-1) ?? null };
    return {
      id: 'B9',
      title: `GET …/items/export of ${total.toLocaleString('en')} items (NDJSON, CSV)`,
      rows,
      totalExact: rows.every((r) => r.totalExact !== false),
      details,
    };
  });
}
