import {
  ConfigError, DbOutage, createBullDispatch, createLogger, createRedis, createEngine, createPooledSql, databaseSettings, decodeAbort, decodeInputAnswered, onShutdownSignals, parseConfig,
  retryOnConnectionLoss, startMetricsServer, startTracing, stopTracing,
} from '@svc/core';
import { parseOptions, UsageError } from './options';
import { Journal } from './journal';
import { MachineAgent } from './machine-agent';

/** `node apps/agent-sim/dist/main.js --machine-key svc_mk_…` (docs/agent-sim.md). */
async function main(): Promise<void> {
  const config = parseConfig(process.env);
  startTracing(process.env, 'agent-sim');
  const options = parseOptions(process.argv.slice(2), process.env);
  const logger = createLogger({ level: config.logLevel, service: 'agent-sim' });
  const sql = createPooledSql(databaseSettings(config), { max: 10 });
  const redis = createRedis(config.redis);
  const bull = createBullDispatch({ redis, prefix: config.redisPrefix, logger });
  const journal = new Journal(options.journal);
  const heartbeatMs = options.heartbeatMs ?? Math.max(200, Math.min(5000, Math.floor((config.machineOfflineAfterSeconds * 1000) / 3)));
  // a run's lease spans at least three heartbeats, like a machine's silence before it is offline
  const leaseSeconds = Math.max(config.machineOfflineAfterSeconds, (3 * heartbeatMs) / 1000);
  const outage = new DbOutage(logger);
  const { machines } = createEngine({ sql, logger });

  const agents: MachineAgent[] = [];
  const itemsProcessed = { n: 0 };
  for (const key of options.machineKeys) {
    // started while Postgres is away: wait for it rather than exit
    const machine = await retryOnConnectionLoss(() => machines.findByKey(key), { outage, context: 'looking up a machine key' });
    if (!machine) throw new UsageError(`The machine key ${key.slice(0, 12)}… does not belong to an active machine.`);
    agents.push(new MachineAgent({ sql, redis: config.redis, bull, logger, options, journal, heartbeatMs, itemsProcessed, outage, leaseSeconds }, machine));
  }

  // one subscriber for every machine of this process: aborts and answers to a job's question
  // reach the agent running the job
  const sub = createRedis(config.redis, { blocking: true });
  sub.on('message', (channel: string, raw: string) => {
    if (channel === bull.keys.jobInputs) {
      const news = decodeInputAnswered(raw);
      if (news) for (const a of agents) a.onInput(news);
      return;
    }
    const msg = decodeAbort(raw);
    if (msg) for (const a of agents) a.onAbort(msg);
  });
  const started = (async () => {
    await sub.subscribe(bull.keys.jobStops, bull.keys.jobInputs);
    for (const a of agents) await a.start();
  })();
  // handlers before the start (and its "agent-sim running" line): a signal meanwhile drains once
  // the start is done instead of killing the process with jobs half taken
  const metrics = config.metricsPort === undefined
    ? null
    : startMetricsServer({ port: config.metricsPort, host: config.host, token: config.metricsToken, logger });
  onShutdownSignals(logger, async () => {
    await started.catch(() => undefined);
    await (await metrics?.catch(() => null))?.close();
    await Promise.all(agents.map((a) => a.close(10_000)));
    sub.disconnect();
    await bull.close();
    redis.disconnect();
    await sql.end({ timeout: 5 });
    journal.close();
    await stopTracing();
  });
  await Promise.all([started, metrics]);
  logger.info('agent-sim running', { machines: agents.map((a) => a.machine.name), heartbeat_ms: heartbeatMs });
}

main().catch((err) => {
  console.error(err instanceof ConfigError || err instanceof UsageError ? err.message : err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
