import { createLogger, onShutdownSignals } from '@svc/core';
import { startMetricsServer, startTracing, stopTracing } from '@svc/core/observability';
import { parseOptions, UsageError } from './options';
import { Journal } from './journal';
import { MachineRobot } from './machine-robot';

/**
 * `SVC_URL=http://127.0.0.1:3000 node apps/agent-sim/dist/main.js --machine-key svc_mk_…`
 * (docs/agent-sim.md). It reaches the platform only through its HTTP API, with each machine's key.
 */
async function main(): Promise<void> {
  const env = process.env;
  startTracing(env, 'agent-sim');
  const options = parseOptions(process.argv.slice(2), env);
  const logger = createLogger({ level: env.LOG_LEVEL ?? 'info', service: 'agent-sim' });
  if (options.keysOnCommandLine) {
    logger.warn('a machine key on the command line is readable by every user of this host: pass keys in AGENT_MACHINE_KEYS or a file (--machine-key-file)');
  }
  const journal = new Journal(options.journal);
  const itemsProcessed = { n: 0 };
  const onReplaced = (message: string) => {
    logger.error(message);
    journal.close();
    process.exit(3);
  };
  const robots = options.machineKeys.map((key) => new MachineRobot({ url: options.url, logger, options, journal, itemsProcessed, onReplaced }, key));

  const started = Promise.all(robots.map((r) => r.start()));
  // handlers before the start (and its "agent-sim running" line): a signal meanwhile drains once
  // the start is done instead of killing the process with jobs half taken
  const metricsPort = env.METRICS_PORT ? Number(env.METRICS_PORT) : undefined;
  const metrics = metricsPort === undefined
    ? null
    : startMetricsServer({ port: metricsPort, host: env.HOST ?? '127.0.0.1', token: env.METRICS_TOKEN || undefined, logger });
  onShutdownSignals(logger, async () => {
    await started.catch(() => undefined);
    await (await metrics?.catch(() => null))?.close();
    await Promise.all(robots.map((r) => r.close(10_000)));
    journal.close();
    await stopTracing();
  });
  try {
    await Promise.all([started, metrics]);
  } catch (err) {
    if ((err as { code?: string }).code === 'UNAUTHORIZED') throw new UsageError(`A machine key does not belong to an active machine: ${(err as Error).message}`);
    throw err;
  }
  logger.info('agent-sim running', { machines: robots.map((r) => r.machine!.name), url: options.url });
}

main().catch((err) => {
  console.error(err instanceof UsageError ? err.message : err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
