// B5: GET …/items?page=…&limit=100, with and without `status`, on a queue of 1,000,000 items,
// pages spread over the whole allowed range (1..500); and `?reference=` look-ups (ten items per
// reference); `?data=` searches by payload (`{"invoice":…}`: one item; `{"amount":N}`: a thousandth
// of the queue); p99,
// and meta.total checked exact. Then GET /settings/queues/{queue_id}/stats on the
// same queue (a member's access tokens, Bearer), its counts checked exact. Last, the operators'
// console: its JavaScript gzipped, and cold loads of the overview in Chromium until this queue's
// card shows its exact count (bench/lib/console-paint.mjs).
// Baseline: the same page and total queries straight through the `postgres` client, measured
// in alternating rounds with the API.
import { EXPIRED_QUEUE_ENV, itemsWithReference, referenceCount, referenceOf, seedAccessTokens, seedApiKeys, seedExpiredQueue, seedItems, seedQueue, seedTenant } from '../lib/fixtures.mjs';
import { consoleJsGzipBytes, measureOverview } from '../lib/console-paint.mjs';

/** How many of items 1..total seedItems gave `amount` (g % 1000). */
function itemsWithAmount(total, amount) {
  return Math.floor(total / 1000) + (amount > 0 && amount <= total % 1000 ? 1 : 0);
}
import { platformCpuMeter, startPlatform } from '../lib/platform.mjs';
import { alternate, checkLoad, load, raw, round, withScenario } from '../lib/scenario.mjs';

const LIMIT = 100;
/** one client paging (the judged figure), then four at once */
const CONNECTIONS = [1, 4];

/** Pages 1..max in a fixed shuffled order, so every run reads the same spread. */
function pages(max, count = 200) {
  const out = [];
  let x = 12345;
  for (let i = 0; i < count; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out.push(1 + (x % max));
  }
  return out;
}

/**
 * `--b5-seen N`: before B5's own items, the queue sees N - total items that ended long ago; the
 * retention pass (the dispatcher's code, run here until nothing is left) removes them and vacuum
 * runs, as autovacuum would after it. The lists, counts and stats are then measured on indexes and
 * a heap that held them.
 */
async function seedRemovedHistory(sql, queue, removed) {
  const started = Date.now();
  const chunk = 500_000;
  for (let from = 1; from <= removed; from += chunk) {
    await sql`
      with src as materialized (
        select gen_random_uuid() as id, g from generate_series(${from}::int, ${Math.min(removed, from + chunk - 1)}::int) as g),
      ins as (
        insert into queue_items (id, tenant_id, queue_id, status, priority, reference, created_at, updated_at, processed_at)
        select id, ${queue.tenant_id}, ${queue.id}, 'completed', 1 + g % 5, 'OLD-' || (g % 100000),
               now() - interval '60 days' + g * interval '100 microseconds', now() - interval '40 days' + g * interval '100 microseconds', now() - interval '40 days'
        from src order by g)
      insert into queue_item_payloads (id, queue_id, data)
      select id, ${queue.id}, jsonb_build_object('invoice', 'OLD-' || g, 'amount', g % 1000, 'lines', jsonb_build_array(1, 2, 3))
      from src order by g`;
  }
  const seededSec = (Date.now() - started) / 1000;
  const { core } = await import('../lib/core.mjs');
  const engine = core.createEngine({ sql, logger: core.createLogger({ service: 'bench-b5', level: 'error' }) });
  const passStarted = Date.now();
  let deleted = 0;
  for (;;) {
    const n = (await engine.sweeps.retention({ budgetMs: 3_600_000 })).reduce((a, r) => a + r.deleted, 0);
    if (n === 0) break;
    deleted += n;
  }
  const passSec = (Date.now() - passStarted) / 1000;
  await sql`vacuum analyze queue_items`;
  await sql`vacuum analyze queue_item_payloads`;
  const out = { removed, deleted, seededSec, passSec, itemsPerSec: Math.round(deleted / passSec), tableBytesAfterVacuum: await tableBytes(sql) };
  console.log(`B5: the queue's history: ${JSON.stringify(out)}`);
  return out;
}

async function tableBytes(sql) {
  return (await sql`select (pg_total_relation_size('queue_items') + pg_total_relation_size('queue_item_payloads'))::float8 as bytes`)[0].bytes;
}

/** What B5's title says of `--b5-retention`'s other queue (details.retention). */
function retentionLabel(r) {
  const n = (x) => x.toLocaleString('en');
  if (r.kept) return `next to another queue's ${n(r.backlog)} items kept (nothing to remove)`;
  const what = r.flowPerSec
    ? `removes another queue's items as they expire, ${n(r.flowPerSec)} a second (${n(r.removedDuringRun)} in all)`
    : `deletes another queue's ${n(r.removedDuringRun)} expired items`;
  return `while the retention pass ${what}${r.passedThroughout ? '' : ' (it ran out before the end)'}`;
}

export async function b5(run) {
  return withScenario(run, 'B5', async (s) => {
    const total = Math.max(10_000, Math.round(1_000_000 * run.scale));
    const rounds = run.scale < 0.1 ? 1 : 3;
    const durationSec = Math.max(1, Math.round((10 * run.scale) / rounds));
    const tenant = await seedTenant(s.sql);
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b5');
    const history = run.b5Seen > total ? await seedRemovedHistory(s.sql, queue, run.b5Seen - total) : null;
    const seedStarted = Date.now();
    const byStatus = await seedItems(s.sql, queue, total);
    const seedSec = (Date.now() - seedStarted) / 1000;
    if (history && run.b5Reindex) {
      // `--b5-reindex`: the step docs/scaling.md gives an operator after a pass that removed most
      // of a table, taken with the live items in place: its indexes keep the size of the rows they
      // once held, and the planner prices an index scan by that size
      history.tableBytesBeforeReindex = await tableBytes(s.sql);
      const started = Date.now();
      await s.sql`reindex table concurrently queue_items`;
      history.reindexSec = (Date.now() - started) / 1000;
      history.tableBytesAfterReindex = await tableBytes(s.sql);
      console.log(`B5: after REINDEX: ${JSON.stringify(history)}`);
    }
    // `--b5-retention N`: another queue of the workspace holds N expired items, and the dispatcher
    // passes every second, so the lists, counts and stats are measured while the pass deletes;
    // with `--b5-retention-flow R` they expire at R a second from the measurement's start instead
    // (the pass at its steady state rather than removing a backlog); `--b5-retention-kept` seeds
    // the same rows and keeps them, the side to compare with (the same table, nothing to remove)
    const flow = run.b5RetentionFlow ?? 0;
    const kept = run.b5RetentionKept === true;
    const passing = run.b5Retention ? await seedExpiredQueue(s.sql, tenant.id, 'bench-b5-old', run.b5Retention, { flowPerSec: flow, expired: !kept }) : null;
    // 60 list requests per minute per key (the public rate-limit table)
    const keys = await seedApiKeys(s.sql, tenant.id, Math.max(40, Math.ceil(1000 * run.scale)));
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;
    // references looked up in a fixed spread order, like the pages
    const refs = pages(referenceCount(total), 200).map((k) => k - 1);
    const amounts = pages(1000, 200).map((k) => k - 1);
    const invoices = pages(total, 200);
    const variants = [
      { name: 'without status', status: undefined, total },
      { name: 'status=new', status: 'new', total: byStatus.new },
      { name: 'reference=…', references: refs.map(referenceOf), total: itemsWithReference(total, refs[0]) },
      // seedItems gives item g the invoice INV-g (one item) and the amount g % 1000 (a thousandth of
      // the queue): a search costs in proportion to what it matches, so the target is judged on the
      // selective one
      { name: 'data={"invoice":…}', dataFilters: invoices.map((g) => ({ invoice: `INV-${g}` })), total: 1 },
      { name: 'data={"amount":…}', dataFilters: amounts.map((amount) => ({ amount })), total: itemsWithAmount(total, amounts[0]), noTarget: true },
    ];

    const platform = s.track(await startPlatform(run, {
      databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], profile: run.profile,
      ...(passing ? { env: EXPIRED_QUEUE_ENV } : {}),
    }));
    // one request per key fills the API key cache (and uses 1 of each key's 60 per minute)
    if (!run.tiny) await load(run, 'b5-warm-api', { url: platform.baseUrl, method: 'GET', paths: [`${itemsPath}?limit=1`], keys, connections: 4, amount: keys.length });
    const rows = [];
    if (passing && flow) await passing.startExpiring();
    const passLeftAtStart = passing ? await passing.left() : null;
    const details = { total, history, byStatus, seedSec, rounds, durationSec, connections: CONNECTIONS, keys: keys.length, variants: {} };
    for (const connections of run.tiny ? CONNECTIONS.slice(0, 1) : CONNECTIONS) {
      for (const v of variants) {
        const maxPage = Math.min(500, Math.ceil(v.total / LIMIT));
        const q = (page) => `${itemsPath}?page=${page}&limit=${LIMIT}${v.status ? `&status=${v.status}` : ''}`;
        const paths = v.references ? v.references.map((r) => `${itemsPath}?reference=${encodeURIComponent(r)}&limit=${LIMIT}`)
          : v.dataFilters ? v.dataFilters.map((d) => `${itemsPath}?data=${encodeURIComponent(JSON.stringify(d))}&limit=${LIMIT}`)
            : pages(maxPage).map(q);
        const firstPageOnly = v.references || v.dataFilters;
        // meta.total must be the exact count, not an estimate
        const check = await fetch(`${platform.baseUrl}${firstPageOnly ? paths[0] : q(maxPage)}`, { headers: { 'x-api-key': keys[0] } }).then((r) => r.json());
        const totalExact = check.meta?.total === v.total && check.data?.length === (firstPageOnly ? Math.min(LIMIT, v.total) : Math.min(LIMIT, v.total - (maxPage - 1) * LIMIT));
        const tag = `${v.references ? 'ref' : v.dataFilters ? `data-${Object.keys(v.dataFilters[0])[0]}` : v.status ?? 'all'}-c${connections}`;
        const res = await alternate(rounds, {
          baseline: {
            run: (i) => raw(run, `b5-raw-list-${tag}-${i}`, 'pg-list.mjs', {
              databaseUrl: s.databaseUrl, queueId: queue.id, status: v.status, pages: pages(maxPage), references: v.references, dataFilters: v.dataFilters,
              limit: LIMIT, connections, durationSec,
            }),
          },
          platform: {
            meter: () => platformCpuMeter(s.sql, platform, run.redisPid),
            run: (i) => load(run, `b5-load-api-${tag}-${i}`, {
              url: platform.baseUrl, method: 'GET', paths, keys, connections, durationSec,
            }),
          },
        });
        checkLoad(`B5 API ${v.name}`, res.platform);
        const name = `${v.name}, ${connections} connection${connections > 1 ? 's' : ''}`;
        rows.push({
          figure: `p99 ${name}`, unit: 'ms', platform: res.platform.latency.p99, baseline: round(res.baseline.latency.p99, 1),
          // the target is judged on one client paging; with more, it is the 2 cores that are measured
          ratio: res.ratio((r) => r.latency.p99), target: connections === 1 && !v.noTarget ? { max: 20 } : null,
          note: totalExact ? 'meta.total exact' : 'meta.total WRONG',
          totalExact,
        });
        details.variants[name] = { api: res.platform, baseline: res.baseline, metaTotal: check.meta?.total, expectedTotal: v.total, totalExact };
      }
    }
    // the queue's stats, as the console reads them: a member's access tokens (120 per minute each)
    const tokens = await seedAccessTokens(s.sql, tenant.id, Math.max(40, Math.ceil(1000 * run.scale)));
    const statsPath = `/api/v1/settings/queues/${queue.id}/stats`;
    if (!run.tiny) await load(run, 'b5-warm-stats', { url: platform.baseUrl, method: 'GET', paths: [statsPath], tokens, connections: 4, amount: tokens.length });
    const stats = await fetch(`${platform.baseUrl}${statsPath}`, { headers: { authorization: `Bearer ${tokens[0]}` } }).then((r) => r.json());
    const statsExact = Object.entries(byStatus).every(([status, n]) => stats.data?.counts?.[status] === n);
    for (const connections of run.tiny ? CONNECTIONS.slice(0, 1) : CONNECTIONS) {
      const res = await alternate(rounds, {
        baseline: { run: (i) => raw(run, `b5-raw-stats-c${connections}-${i}`, 'pg-list.mjs', { databaseUrl: s.databaseUrl, queueId: queue.id, stats: true, connections, durationSec }) },
        platform: {
          meter: () => platformCpuMeter(s.sql, platform, run.redisPid),
          run: (i) => load(run, `b5-load-stats-c${connections}-${i}`, { url: platform.baseUrl, method: 'GET', paths: [statsPath], tokens, connections, durationSec }),
        },
      });
      checkLoad('B5 API stats', res.platform);
      const name = `queue stats, ${connections} connection${connections > 1 ? 's' : ''}`;
      rows.push({
        figure: `p99 ${name}`, unit: 'ms', platform: res.platform.latency.p99, baseline: round(res.baseline.latency.p99, 1),
        ratio: res.ratio((r) => r.latency.p99), target: connections === 1 ? { max: 20 } : null,
        note: statsExact ? 'counts exact' : 'counts WRONG',
        totalExact: statsExact,
      });
      details.variants[name] = { api: res.platform, baseline: res.baseline, counts: stats.data?.counts, expected: byStatus, totalExact: statsExact };
    }
    // the console's overview against this queue: its own member and token (the load above used
    // the others' per-minute allowance), cold loads in Chromium
    const email = `console-${tenant.id}@example.com`;
    const [consoleToken] = await seedAccessTokens(s.sql, tenant.id, 1, email);
    const [user] = await s.sql`select id, email, name, role, tenant_id from users where email = ${email}`;
    const jsKb = round(consoleJsGzipBytes(run.root) / 1024, 1);
    rows.push({ figure: 'console JavaScript, gzipped', unit: 'KB', platform: jsKb, baseline: null, ratio: null, target: { max: 250 }, note: 'apps/console/dist' });
    const loads = run.tiny ? 1 : 5;
    const overview = await measureOverview({
      baseUrl: platform.baseUrl,
      session: { token: consoleToken, expiresAt: new Date(Date.now() + 3600_000).toISOString(), user: { ...user } },
      queueName: queue.name,
      expectedNew: byStatus.new,
      loads,
    });
    rows.push({
      figure: `console overview rendered, median of ${loads} cold load${loads > 1 ? 's' : ''}`, unit: 'ms', platform: overview?.renderedMs.median ?? null, baseline: null, ratio: null,
      target: { max: 1500 },
      note: !overview ? 'no Chromium found: not measured' : `max ${overview.renderedMs.max} ms; ${overview.countExact ? 'count shown exact' : 'count shown WRONG'}`,
      ...(overview ? { totalExact: overview.countExact } : {}),
    });
    details.console = { jsGzipKb: jsKb, overview };
    if (passing) {
      const left = await passing.left();
      // a figure taken after the pass ran out of rows would not have been taken during it
      details.retention = { backlog: run.b5Retention, flowPerSec: flow || null, kept, leftAtStart: passLeftAtStart, leftAtEnd: left, removedDuringRun: passLeftAtStart - left, passedThroughout: left > 0 };
      console.log(`B5: the retention pass during the run: ${JSON.stringify(details.retention)}`);
    }
    return {
      id: 'B5',
      title: `GET …/items?page=…&limit=100 on ${total.toLocaleString('en')} items${passing ? `, ${retentionLabel(details.retention)}` : ''}`,
      rows,
      totalExact: rows.every((r) => r.totalExact !== false),
      details,
    };
  });
}
