import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { OPERATIONS } from '@svc/client';

/**
 * The client's generated sources are the API's OpenAPI document of this checkout (generated from
 * the route declarations, apps/api/dist), and its operations are named for people.
 */
const ROOT = path.resolve(__dirname, '../../..');

it('src/generated matches the OpenAPI document the API serves (run `npm run generate -w @svc/client` after changing a route)', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'packages/client/scripts/generate.mjs'), '--check'], { cwd: ROOT });
  expect(stdout).toMatch(/match/);
}, 60_000);

it('names every operation in camelCase from a verb, never from its path', () => {
  const ids = Object.keys(OPERATIONS);
  expect(ids.length).toBeGreaterThan(50);
  for (const id of ids) {
    expect(id).toMatch(/^(add|answer|approve|cancel|connect|create|deactivate|delete|export|get|list|log|pause|preview|read|redeliver|redrive|reject|resume|revoke|rotate|start|stream|stop|test|trigger|update)[A-Z][A-Za-z]*$/);
    expect(id).not.toMatch(/ApiV1|^(get|post|put|patch|delete)Api/);
  }
  expect(OPERATIONS).toMatchObject({
    addQueueItem: { method: 'POST', path: '/api/v1/queues/by-name/{name}/items', idempotencyKey: true },
    listQueueItems: { method: 'GET', paged: 'page' },
    triggerJob: { method: 'POST', path: '/api/v1/jobs/trigger', idempotencyKey: true },
    stopJob: { method: 'POST', path: '/api/v1/jobs/{job_id}/stop' },
    readAuditLog: { paged: 'cursor' },
  });
});
