// B7: does the design scale out without multiplying round trips? B3's end-to-end run (b3Once,
// bench/scenarios/b3-end-to-end.mjs, without its raw baseline) in three set-ups, in the same run:
//   single-1   one dispatcher, one private redis-server
//   single-2   two dispatcher processes, the same redis-server
//   cluster-1  one dispatcher, a private local Redis Cluster of three primaries
// reported as ratios (two ÷ one dispatchers; cluster ÷ single), with the Redis commands each
// completed item costs (INFO commandstats deltas summed over every primary: the figure that shows
// extra round trips, whatever the machine's load). Both Redis deployments are private (started
// from the installed redis-server on free ports, torn down after), so their counters hold the
// platform's commands only. Then, on the single redis-server, the memory a waiting item and a
// waiting job hold in Redis (used_memory delta ÷ count): the figures docs/scaling.md sizes Redis
// with.
import { seedApiKeys, seedMachines, seedProcess, seedQueue, seedTenant, itemPayload } from '../lib/fixtures.mjs';
import { startPlatform } from '../lib/platform.mjs';
import { commandDelta, startBenchRedis } from '../lib/redis-servers.mjs';
import { sleep, waitUntil } from '../lib/proc.mjs';
import { checkLoad, load, ratio, round, withScenario } from '../lib/scenario.mjs';
import { b3Once } from './b3-end-to-end.mjs';
import { BULK_SIZE } from './b2-bulk.mjs';

const SETUPS = [
  { key: 'single1', label: 'single Redis, 1 dispatcher', cluster: false, dispatchers: 1 },
  { key: 'cluster1', label: 'Redis Cluster (3 primaries), 1 dispatcher', cluster: true, dispatchers: 1 },
  { key: 'single2', label: 'single Redis, 2 dispatchers', cluster: false, dispatchers: 2 },
];

export async function b7(run) {
  const servers = {};
  try {
    servers.single = await startBenchRedis();
    servers.cluster = await startBenchRedis({ cluster: true, primaries: 3 });
    // two rounds, the second in reverse order, so a neighbour's load drifting in one direction
    // hits every set-up alike; the smoke run of `npm test` does one
    const rounds = run.tiny ? 1 : 2;
    const runs = Object.fromEntries(SETUPS.map((s) => [s.key, []]));
    for (let r = 0; r < rounds; r++) {
      for (const setup of r % 2 ? [...SETUPS].reverse() : SETUPS) {
        run.log(`B7 round ${r + 1}: ${setup.label}`);
        const res = await b3Once(run, `B7_${setup.key}_r${r + 1}`, null, {
          raw: false, dispatchers: setup.dispatchers, redis: setup.cluster ? servers.cluster : servers.single,
        });
        runs[setup.key].push(res.details);
      }
    }
    const pooled = Object.fromEntries(Object.entries(runs).map(([k, rs]) => [k, pool(rs)]));
    const memory = await doorbellMemory(run, servers.single);
    const { single1: one, single2: two, cluster1: cl } = pooled;
    const rows = [
      {
        figure: 'completed items/s: Redis Cluster of 3 primaries, 1 dispatcher (baseline column: single Redis, 1 dispatcher)',
        unit: 'items/s', platform: round(cl.itemsPerSec, 0), baseline: round(one.itemsPerSec, 0), ratio: ratio(cl.itemsPerSec, one.itemsPerSec),
        target: { minRatio: 0.75, of: 'single Redis' },
      },
      {
        figure: 'completed items/s: 2 dispatcher processes, single Redis (baseline column: 1 dispatcher)',
        unit: 'items/s', platform: round(two.itemsPerSec, 0), baseline: round(one.itemsPerSec, 0), ratio: ratio(two.itemsPerSec, one.itemsPerSec), target: null,
      },
      {
        figure: 'Redis commands per completed item, all primaries: cluster (baseline column: single Redis)',
        unit: 'commands', platform: round(cl.commandsPerItem, 2), baseline: round(one.commandsPerItem, 2), ratio: ratio(cl.commandsPerItem, one.commandsPerItem), target: null,
      },
      {
        figure: 'Redis commands per completed item: 2 dispatchers (baseline column: 1 dispatcher)',
        unit: 'commands', platform: round(two.commandsPerItem, 2), baseline: round(one.commandsPerItem, 2), ratio: ratio(two.commandsPerItem, one.commandsPerItem), target: null,
      },
      {
        figure: 'Redis commands per second, idle platform (API and 1 dispatcher, single Redis)',
        unit: 'commands/s', platform: round(memory.idleCommandsPerSec, 1), baseline: null, ratio: null, target: null,
      },
      {
        figure: `Redis used_memory per waiting item, bytes (${memory.items.count.toLocaleString('en')} items, consumer's machines offline)`,
        unit: 'bytes', platform: round(memory.items.bytesPerUnit, 1), baseline: null, ratio: null, target: null,
      },
      {
        figure: `Redis used_memory per waiting job, bytes (${memory.jobs.count.toLocaleString('en')} jobs triggered on an offline machine)`,
        unit: 'bytes', platform: round(memory.jobs.bytesPerUnit, 0), baseline: null, ratio: null, target: null,
      },
    ];
    const total = runs.single1[0]?.total ?? 0;
    return {
      id: 'B7',
      title: `scaling: B3 (${total.toLocaleString('en')} items per run, ${rounds} round${rounds > 1 ? 's' : ''}) on 1 vs 2 dispatchers and a single Redis vs a 3-primary Redis Cluster`,
      rows,
      complete: Object.values(runs).flat().every((d) => d.completed === d.total),
      details: { rounds, setups: SETUPS, pooled, runs, memory },
    };
  } finally {
    servers.single?.stop();
    servers.cluster?.stop();
  }
}

/** Rounds of one set-up pooled: items over time, commands over items, CPU per 1,000 items. */
function pool(details) {
  const completed = details.reduce((a, d) => a + d.completed, 0);
  const sec = details.reduce((a, d) => a + (d.elapsedSec ?? 0), 0);
  const commands = details.reduce((a, d) => a + (d.redis?.commands.total ?? 0), 0);
  const byCommand = {};
  for (const d of details) for (const [k, v] of Object.entries(d.redis?.commands.by ?? {})) byCommand[k] = (byCommand[k] ?? 0) + v;
  const cpu = {};
  for (const d of details) for (const [k, v] of Object.entries(d.cpu.msPer1000)) cpu[k] = (cpu[k] ?? 0) + (v ?? 0) * d.completed;
  return {
    completed,
    itemsPerSec: sec ? completed / sec : null,
    commandsPerItem: completed ? commands / completed : null,
    commandsPerItemBy: Object.fromEntries(Object.entries(byCommand).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, round(v / completed, 3)])),
    cpuMsPer1000Items: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v / completed, 0)])),
    usedMemoryDeltaBytesPerItem: round(details.reduce((a, d) => a + (d.redis?.usedMemoryDeltaBytes ?? 0), 0) / completed, 1),
  };
}

/**
 * What a waiting item and a waiting job hold in Redis: the platform (API and dispatcher, no
 * agents: every machine stays offline) on the private redis-server; items added in bulk to a
 * queue with a consumer (its doorbell is rung, nothing can take the items), then jobs triggered
 * through the API on one offline machine (each waits in that machine's BullMQ queue). used_memory
 * read once the outbox is empty (every effect published) and again after the adds.
 */
async function doorbellMemory(run, redis) {
  return withScenario(run, 'B7_memory', async (s) => {
    const itemCount = Math.max(BULK_SIZE, Math.round((20_000 * run.scale) / BULK_SIZE) * BULK_SIZE);
    const jobCount = Math.max(300, Math.round(2_000 * run.scale));
    const tenant = await seedTenant(s.sql);
    // the contract's limits per key and minute: 30 triggers, 20 bulk adds
    const keys = await seedApiKeys(s.sql, tenant.id, Math.ceil(jobCount / 25) + Math.ceil(itemCount / BULK_SIZE));
    const consumer = await seedProcess(s.sql, tenant.id, 'bench-consumer');
    const queue = await seedQueue(s.sql, tenant.id, 'bench-b7', { consumer_process_id: consumer.id, max_consumers: 4 });
    const machines = await seedMachines(s.sql, tenant.id, 4, { slots: 1 });
    const jobProcess = await seedProcess(s.sql, tenant.id, 'bench-job');
    const platform = s.track(await startPlatform(run, { databaseUrl: s.databaseUrl, redisPrefix: s.redisPrefix, parts: ['api', 'dispatcher'], redis }));
    const settled = async () => {
      await waitUntil('the outbox to be empty', async () => (await s.sql`select count(*)::int as n from outbox`)[0].n === 0, { procs: Object.values(platform.procs), timeoutMs: 120_000, everyMs: 100 });
      // the dispatcher's nudge window and its BullMQ bookkeeping after the last publish
      await sleep(1500);
      return redis.usedMemory();
    };
    const payloads = Array.from({ length: BULK_SIZE }, (_, i) => itemPayload(i));
    const itemsPath = `/api/v1/queues/by-name/${queue.name}/items`;
    const before = await settled();
    // what an idle platform (API, one dispatcher, no agents) sends: its timers, not its work
    const idleSec = run.tiny ? 2 : 10;
    const idle0 = await redis.commandStats();
    await sleep(idleSec * 1000);
    const idle = commandDelta(idle0, await redis.commandStats());
    const added = await load(run, 'b7-memory-items', { url: platform.baseUrl, method: 'POST', paths: [`${itemsPath}/bulk`], body: { items: payloads }, keys, connections: 2, amount: itemCount / BULK_SIZE });
    checkLoad('B7 memory, items', added);
    const afterItems = await settled();
    const [{ n: waitingItems }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id} and status = 'new'`;
    const triggered = await load(run, 'b7-memory-jobs', {
      url: platform.baseUrl, method: 'POST', paths: ['/api/v1/jobs/trigger'], body: { process_id: jobProcess.id, machine_id: machines[0].id }, keys, connections: 2, amount: jobCount,
    });
    checkLoad('B7 memory, jobs', triggered);
    const afterJobs = await settled();
    const [{ n: waitingJobs }] = await s.sql`select count(*)::int as n from jobs where process_id = ${jobProcess.id} and status = 'pending'`;
    return {
      idleCommandsPerSec: idle.total / idleSec,
      idleCommandsPerSecBy: Object.fromEntries(Object.entries(idle.by).map(([k, v]) => [k, round(v / idleSec, 1)])),
      baselineBytes: before,
      items: { count: waitingItems, deltaBytes: afterItems - before, bytesPerUnit: waitingItems ? (afterItems - before) / waitingItems : null },
      jobs: { count: waitingJobs, deltaBytes: afterJobs - afterItems, bytesPerUnit: waitingJobs ? (afterJobs - afterItems) / waitingJobs : null },
    };
  }, { redis });
}
