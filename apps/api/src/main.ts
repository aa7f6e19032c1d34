import http from 'node:http';
import { ConfigError, onShutdownSignals, parseConfig } from '@svc/core';
import { startMetricsServer, startTracing, stopTracing } from '@svc/core/observability';
import { createApp } from './app';
import { buildDeps } from './deps';
import { createAgentHub } from './agent/hub';

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  // before the pool, the logger and the server exist: they are traced only when it is on
  startTracing(process.env, 'api');
  const deps = buildDeps(config);
  await deps.apiKeys.start();
  const app = createApp(deps);
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  // robots' connections (docs/agent-protocol.md)
  const agents = createAgentHub(deps);
  agents.attach(server);
  const listening = new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  // the state gauges name every workspace: off the public port unless METRICS_TOKEN guards it there
  const metrics = config.metricsPort === undefined
    ? null
    : startMetricsServer({ port: config.metricsPort, host: config.host, token: config.metricsToken, logger: deps.logger });
  // handlers before "api listening": a signal from then on always drains
  onShutdownSignals(deps.logger, async () => {
    await listening;
    // open event streams never finish by themselves
    await deps.streams.close();
    // robots reconnect to another replica; their runs live on through their leases
    await agents.close();
    await (await metrics?.catch(() => null))?.close();
    // stop accepting, let in-flight requests finish, then close connections
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // writes the buffered last_used_at values, so it goes before the pool closes
    await deps.apiKeys.close();
    await deps.sql.end({ timeout: 5 });
    await deps.atOnce.close();
    deps.redis.disconnect();
    await stopTracing();
  });
  await Promise.all([listening, metrics]);
  if (config.nodeEnv === 'production' && config.trustedProxyCount === 0) {
    // behind a load balancer this makes every client one address, and TLS invisible (no HSTS, no Secure cookie)
    deps.logger.warn('TRUST_PROXY_COUNT is 0: client addresses and TLS are taken from the socket; set it to the number of proxies in front of the API');
  }
  deps.logger.info('api listening', { url: `http://${config.host}:${config.port}` });
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
