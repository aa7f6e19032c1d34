import { randomUUID } from 'node:crypto';
import { freePort, scrape, seedWorkspace, startApiProcess, waitFor, type ApiProcess, type Children, type TestContext, type TestSuite } from '@svc/testing';

export const METRICS_TOKEN = `scrape-${randomUUID()}`;

/**
 * A running platform for the metrics tests: an API process (its /metrics; its robot connections
 * run the jobs' statements), a dispatcher and an agent-sim each serving /metrics on METRICS_PORT, all asking for METRICS_TOKEN; the API's state
 * gauges are read afresh on each scrape (METRICS_STATE_TTL_MS=0).
 */
async function startMetricsPlatform(ctx: TestContext, children: Children) {
  const ws = await seedWorkspace(ctx.sql);
  const env = { METRICS_TOKEN, METRICS_STATE_TTL_MS: '0', HOST: '127.0.0.1' };
  const api: ApiProcess = await startApiProcess(ctx.childEnv, env);
  const [dispatcherPort, agentPort] = [await freePort(), await freePort()];
  children.dispatcher(ctx, { ...env, METRICS_PORT: String(dispatcherPort) });
  const machine = await ws.machine({ slots: 2 });
  // the robot connects to this API process, which runs its jobs' statements (and counts them)
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '200ms'], { ...env, METRICS_PORT: String(agentPort) }, { url: api.url });
  const urls = {
    api: `${api.url}/metrics`,
    dispatcher: `http://127.0.0.1:${dispatcherPort}/metrics`,
    agent: `http://127.0.0.1:${agentPort}/metrics`,
  };
  await waitFor('the dispatcher and agent metrics servers', async () => {
    try {
      await Promise.all([scrape(urls.dispatcher, METRICS_TOKEN), scrape(urls.agent, METRICS_TOKEN)]);
      return true;
    } catch {
      return false;
    }
  }, 45_000, 200);
  return { ws, api, machine, urls };
}

export type MetricsPlatform = Awaited<ReturnType<typeof startMetricsPlatform>>;

/**
 * Starts the platform before the file's tests and stops it after. Its parts are read inside the
 * tests (they exist from `beforeAll` on).
 */
export function useMetricsPlatform(suite: TestSuite): MetricsPlatform {
  let p: MetricsPlatform | undefined;
  beforeAll(async () => {
    p = await startMetricsPlatform(suite.ctx, suite.children);
  });
  afterAll(async () => {
    await suite.children.stopAll();
    await p?.api.stop();
  });
  return {
    get ws() { return p!.ws; },
    get api() { return p!.api; },
    get machine() { return p!.machine; },
    get urls() { return p!.urls; },
  };
}
