// The measurements behind docs/scaling.md, reproducible:
//
//   node bench/scaling-profile.mjs [--scale 0.3] [--out bench/results/scaling-profile.json]
//
// Starts a private Postgres (initdb in a temp folder, a free port, `fsync=off` like `npm start`'s
// own server) with `shared_preload_libraries=pg_stat_statements`, runs B7 against it through the
// real bench (`scripts/bench.mjs --only B7 --keep`, which starts its own private redis-server and
// 3-primary Redis Cluster), then reads pg_stat_statements for the databases of B7's runs and
// prints, per 1,000 completed items of the B3 set-up (single Redis, one dispatcher):
//   - CPU ms of each process (API, dispatcher, agents, the Postgres backends, redis-server),
//     read from /proc/<pid>/stat around the measured phase (bench/lib/proc.mjs);
//   - Postgres statements by total execution time (pg_stat_statements, top-level statements:
//     a statement's triggers count in its own time), calls per item and ms per 1,000 items;
//   - Redis commands per item (INFO commandstats deltas, every primary) and used_memory per
//     waiting item and per waiting job (B7's memory step);
// and the same headline figures for the other two set-ups. The private Postgres and its data are
// removed at the end. Needs the build (`npx tsc -b`) and, for the extension, PostgreSQL's contrib
// files (Debian's postgresql package ships them).
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startLocalPostgres } from '../scripts/services.mjs';
import { core } from './lib/core.mjs';
import { freePort } from './lib/proc.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const scale = Number(opt('--scale', '0.3'));
const out = path.resolve(opt('--out', path.join(ROOT, 'bench', 'results', 'scaling-profile.json')));

// statements the bench itself sends (fixtures, its progress poll, its CPU meter's pid look-up):
// listed apart, not charged to the platform
const BENCH_OWN = [
  /sum\(n\)::int as n from queue_item_counts/i, /from pg_stat_activity/i, /max\(processed_at\)/i,
  /^\s*insert into (tenants|api_keys|processes|queues|machines)\b/i, /^\s*(begin|commit|select \$1)\b/i,
];

function runBench(env, resultFile, logDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [
      path.join(ROOT, 'scripts', 'bench.mjs'), '--only', 'B7', '--scale', String(scale), '--no-build', '--no-markdown', '--keep',
      '--out', resultFile, '--log-dir', logDir,
    ], { cwd: ROOT, env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the bench exited with ${code}`))));
  });
}

/**
 * Postgres bytes per stored item: `count` items of B5's shape (bench/lib/fixtures.mjs seedItems:
 * 70 % completed, 20 % new, 10 % dead_letter, a reference each) added to a new queue of a kept B7
 * database, and the growth of queue_items (heap, TOAST, every index) measured after VACUUM ANALYZE.
 */
async function storagePerItem(url, count) {
  const { seedItems, seedQueue, seedTenant } = await import('./lib/fixtures.mjs');
  const sql = core.createSql(url, { max: 1 });
  const sizes = async () => Object.fromEntries((await sql`
    select c.relname as name, pg_total_relation_size(c.oid)::bigint as total, pg_relation_size(c.oid)::bigint as main
    from pg_class c where c.relname = 'queue_items'
       or c.oid in (select indexrelid from pg_index where indrelid = 'queue_items'::regclass)`).map((r) => [r.name, { total: Number(r.total), main: Number(r.main) }]));
  try {
    await sql`vacuum analyze queue_items`;
    const before = await sizes();
    const tenant = await seedTenant(sql, 'storage');
    const queue = await seedQueue(sql, tenant.id, 'storage');
    await seedItems(sql, queue, count);
    const after = await sizes();
    const per = (k, f) => (after[k][f] - (before[k]?.[f] ?? 0)) / count;
    const indexes = Object.keys(after).filter((k) => k !== 'queue_items');
    return {
      items: count,
      totalBytesPerItem: per('queue_items', 'total'),
      heapBytesPerItem: per('queue_items', 'main'),
      indexBytesPerItem: Object.fromEntries(indexes.map((k) => [k, per(k, 'main')])),
    };
  } finally {
    await sql.end();
  }
}

const fmt = (n, d = 0) => (n === null || n === undefined ? '—' : Number(n).toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d }));

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-scaling-'));
  // the server runs as the `postgres` OS user when this runs as root: it must reach its folder
  chmodSync(tmp, 0o755);
  const port = await freePort();
  const pg = await startLocalPostgres(path.join(tmp, 'pg'), port, {
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top', 'pg_stat_statements.max': 10000 },
  });
  // Ctrl-C reaches the bench too (same process group), which cleans up after itself
  const onSignal = () => {
    try {
      pg.stop();
    } catch {}
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const admin = core.createSql(pg.url.replace(/\/svc$/, '/postgres'), { max: 1 });
  try {
    await admin.unsafe('create extension if not exists pg_stat_statements');
    const resultFile = path.join(tmp, 'b7.json');
    const logDir = path.join(tmp, 'logs');
    mkdirSync(logDir);
    await runBench({ ...process.env, DATABASE_URL: pg.url }, resultFile, logDir);
    const results = JSON.parse(readFileSync(resultFile, 'utf8'));
    const b7 = results.scenarios.find((s) => s.id === 'B7');
    if (!b7 || b7.error) throw new Error(`B7 failed: ${b7?.error ?? 'no result'}`);

    const profile = { scale, host: results.host, startedAt: results.startedAt, setups: {} };
    for (const [key, runs] of Object.entries(b7.details.runs)) {
      const completed = runs.reduce((a, r) => a + r.completed, 0);
      const dbs = runs.map((r) => r.database);
      const rows = await admin`
        select s.queryid, min(s.query) as query, sum(s.calls)::bigint as calls, sum(s.total_exec_time) as ms, sum(s.rows)::bigint as rows, sum(s.wal_bytes)::bigint as wal
        from pg_stat_statements s join pg_database d on d.oid = s.dbid
        where d.datname = any(${dbs})
        group by s.queryid order by 4 desc`;
      const platform = rows.filter((r) => !BENCH_OWN.some((re) => re.test(r.query)));
      const totalMs = platform.reduce((a, r) => a + r.ms, 0);
      profile.setups[key] = {
        databases: dbs,
        completed,
        itemsPerSec: b7.details.pooled[key].itemsPerSec,
        cpuMsPer1000Items: b7.details.pooled[key].cpuMsPer1000Items,
        redisCommandsPerItem: b7.details.pooled[key].commandsPerItem,
        redisCommandsPerItemBy: b7.details.pooled[key].commandsPerItemBy,
        postgres: {
          execMsPer1000Items: (totalMs * 1000) / completed,
          statementsPerItem: platform.reduce((a, r) => a + Number(r.calls), 0) / completed,
          walBytesPerItem: platform.reduce((a, r) => a + Number(r.wal), 0) / completed,
          top: platform.slice(0, 15).map((r) => ({
            query: r.query.replace(/\s+/g, ' ').slice(0, 160),
            calls: Number(r.calls),
            callsPerItem: Number(r.calls) / completed,
            msPer1000Items: (r.ms * 1000) / completed,
            share: totalMs ? r.ms / totalMs : null,
            rowsPerCall: Number(r.calls) ? Number(r.rows) / Number(r.calls) : null,
            walBytesPerItem: Number(r.wal) / completed,
          })),
          benchOwnMs: rows.filter((r) => BENCH_OWN.some((re) => re.test(r.query))).reduce((a, r) => a + r.ms, 0),
        },
      };
    }
    profile.storage = await storagePerItem(pg.url.replace(/\/svc$/, `/${profile.setups.single1.databases[0]}`), Math.max(100_000, Math.round(1_000_000 * scale)));
    profile.memory = b7.details.memory;
    profile.rows = b7.rows;
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(profile, null, 2) + '\n');

    const main = profile.setups.single1;
    console.log(`\nScaling profile (scale ${scale}; ${results.host.cores} cores, ${results.host.cpu}); B3 set-up: single Redis, 1 dispatcher, ${fmt(main.completed)} items, ${fmt(main.itemsPerSec)} items/s\n`);
    console.log('CPU ms per 1,000 completed items, by process:');
    console.log(`| Set-up | ${Object.keys(main.cpuMsPer1000Items).join(' | ')} | Postgres exec ms (pg_stat_statements) | statements/item | WAL bytes/item | Redis commands/item |`);
    for (const [key, s] of Object.entries(profile.setups)) {
      console.log(`| ${key} | ${Object.keys(main.cpuMsPer1000Items).map((k) => fmt(s.cpuMsPer1000Items[k])).join(' | ')}${s.cpuMsPer1000Items['dispatcher-2'] !== undefined ? ` (+ dispatcher-2 ${fmt(s.cpuMsPer1000Items['dispatcher-2'])})` : ''} | ${fmt(s.postgres.execMsPer1000Items)} | ${fmt(s.postgres.statementsPerItem, 2)} | ${fmt(s.postgres.walBytesPerItem)} | ${fmt(s.redisCommandsPerItem, 3)} |`);
    }
    console.log('\nPostgres statements by total execution time (B3 set-up), per 1,000 completed items:');
    console.log('| # | Statement | calls/item | ms per 1,000 items | share | rows/call |');
    main.postgres.top.forEach((t, i) => console.log(`| ${i + 1} | \`${t.query.replace(/\|/g, '\\|')}\` | ${fmt(t.callsPerItem, 3)} | ${fmt(t.msPer1000Items, 1)} | ${fmt(t.share * 100, 1)} % | ${fmt(t.rowsPerCall, 1)} |`));
    console.log(`\nRedis commands per second, idle platform (API, 1 dispatcher): ${fmt(profile.memory.idleCommandsPerSec, 1)}`);
    console.log(`\nRedis used_memory: ${fmt(profile.memory.items.bytesPerUnit, 1)} bytes per waiting item (${fmt(profile.memory.items.count)} items), ${fmt(profile.memory.jobs.bytesPerUnit)} bytes per waiting job (${fmt(profile.memory.jobs.count)} jobs)`);
    const st = profile.storage;
    console.log(`\nPostgres storage per item (${fmt(st.items)} items of B5's shape): ${fmt(st.totalBytesPerItem)} bytes in all (heap ${fmt(st.heapBytesPerItem)}; ${Object.entries(st.indexBytesPerItem).map(([k, v]) => `${k} ${fmt(v)}`).join(', ')})`);
    console.log(`\nWrote ${path.relative(process.cwd(), out) || out}`);
  } finally {
    await admin.end().catch(() => undefined);
    try {
      pg.stop();
    } catch {}
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err.stack ?? err.message ?? err);
  process.exit(1);
});
