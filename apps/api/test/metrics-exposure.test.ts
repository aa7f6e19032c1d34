import { freePort, seedWorkspace, startApiProcess, testSuite } from '@svc/testing';
import { apiSuite } from '@svc/testing/api';

/**
 * The state gauges name every workspace and queue: without METRICS_TOKEN the API's public port
 * serves no metrics at all, and an API process serves them on its own METRICS_PORT listener.
 */
describe('in process, without METRICS_TOKEN', () => {
  const suite = apiSuite();

  it('answers /metrics on the public port like a path that does not exist, naming no workspace', async () => {
    const ws = await seedWorkspace(suite.ctx.sql);
    await ws.queue({ name: 'exposed-queue' });
    for (const headers of [{}, { Authorization: 'Bearer anything' }, { 'X-API-Key': ws.key }]) {
      const res = await suite.ctx.http.get('/metrics').set(headers);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
      expect(res.text).not.toContain(ws.tenant.name);
      expect(res.text).not.toContain('exposed-queue');
    }
  });
});

describe('an API process with METRICS_PORT', () => {
  const suite = testSuite();
  jest.setTimeout(60_000);

  it('serves the state gauges on METRICS_PORT only, and nothing on the public port', async () => {
    const ws = await seedWorkspace(suite.ctx.sql);
    await ws.queue({ name: 'metered-queue' });
    const port = await freePort();
    const api = await startApiProcess(suite.ctx.childEnv, { METRICS_PORT: String(port), METRICS_STATE_TTL_MS: '0' });
    try {
      const add = await fetch(`${api.url}/api/v1/queues/by-name/metered-queue/items`, {
        method: 'POST', headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' }, body: '{"data":{}}',
      });
      expect(add.status).toBe(200);
      const outside = await fetch(`${api.url}/metrics`);
      expect(outside.status).toBe(404);
      expect(await outside.text()).not.toContain(ws.tenant.name);
      const inside = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(inside.status).toBe(200);
      const text = await inside.text();
      expect(text).toContain(`tenant="${ws.tenant.name}",queue="metered-queue"`);
    } finally {
      await api.stop();
    }
  });
});
