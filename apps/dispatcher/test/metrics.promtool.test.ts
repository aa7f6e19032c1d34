import { promtool, scrape, testSuite, waitFor, sampleValue } from '@svc/testing';
import { METRICS_TOKEN, useMetricsPlatform } from './metrics-platform';

/**
 * The exposition of every process of a running platform passes `promtool check metrics`
 * (format and Prometheus naming conventions), after some work so that labelled series exist.
 * Left out (scripts/promtool.cjs, one line from `npm test`) where promtool is not installed.
 */
jest.setTimeout(120_000);
const PROM_CLIENT_FINDINGS = new Set(['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']
  .map((m) => `${m} non-counter metrics should not have "_total" suffix`));
const suite = testSuite();
const p = useMetricsPlatform(suite);

it('the API, dispatcher and agent expositions pass promtool check metrics', async () => {
  const proc = await p.ws.process();
  const res = await fetch(`${p.api.url}/api/v1/jobs/trigger`, {
    method: 'POST',
    headers: { 'X-API-Key': p.ws.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ process_id: proc.id, machine_id: p.machine.row.id }),
  });
  expect(res.status).toBe(201);
  await waitFor('the job counted by the API that ran it for the robot', async () =>
    (sampleValue(await scrape(p.urls.api, METRICS_TOKEN), 'svc_jobs_ended_total', { status: 'completed' }) ?? 0) >= 1, 45_000, 200);
  for (const [name, url] of Object.entries(p.urls)) {
    const text = await scrape(url, METRICS_TOKEN);
    expect(text).toContain('# TYPE svc_');
    const check = promtool(['check', 'metrics'], text);
    // status 3 is "lint findings only" (the exposition parsed): the only ones allowed are
    // prom-client's own default gauges named *_total (upstream naming, not ours to rename)
    const findings = check.output.split('\n').filter(Boolean);
    expect({ name, findings: findings.filter((f) => !PROM_CLIENT_FINDINGS.has(f)) }).toEqual({ name, findings: [] });
    expect({ name, status: check.status }).toEqual({ name, status: findings.length ? 3 : 0 });
  }
});
