import { readFileSync } from 'node:fs';
import path from 'node:path';
import { renderMetrics } from '@svc/core/observability';
import { metricsRegistry } from '@svc/core/internals';

/**
 * The Grafana dashboard and the alert rules in deploy/ name only metrics the processes export:
 * a renamed metric fails here rather than leaving an empty panel or an alert that never fires.
 */
const ROOT = path.resolve(__dirname, '..');
const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/svc-dashboard.json'), 'utf8')) as {
  uid: string;
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
};
const rules = readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8');

/** Metric names in PromQL text: our svc_ ones and Node's default ones the dashboard uses. */
function metricNames(promql: string): string[] {
  return [...promql.matchAll(/\b((?:svc|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ''));
}

async function exported(): Promise<Set<string>> {
  await renderMetrics(); // registers Node's default metrics
  return new Set((await metricsRegistry.getMetricsAsJSON()).map((m) => m.name));
}

it('the dashboard is a Grafana dashboard whose every panel queries exported metrics', async () => {
  const names = await exported();
  expect(dashboard.uid).toBe('svc-platform');
  const queried = dashboard.panels.filter((p) => p.type !== 'row');
  expect(queried.length).toBeGreaterThan(10);
  for (const panel of queried) {
    expect(panel.targets?.length).toBeGreaterThan(0);
    for (const t of panel.targets!) {
      const used = metricNames(t.expr);
      expect({ panel: panel.title, used: used.length > 0 }).toEqual({ panel: panel.title, used: true });
      for (const name of used) expect({ panel: panel.title, name, exported: names.has(name) }).toEqual({ panel: panel.title, name, exported: true });
    }
  }
});

it('the alert rules use exported metrics and cover the alerts the runbook names', async () => {
  const names = await exported();
  for (const name of metricNames(rules)) expect({ name, exported: names.has(name) }).toEqual({ name, exported: true });
  for (const alert of ['SvcDeadLettersGrowing', 'SvcOldestReadyItemTooOld', 'SvcMachinesOffline', 'SvcHttp5xxRate', 'SvcOutboxBacklog']) {
    expect(rules).toContain(`alert: ${alert}`);
  }
});

it('Prometheus scrapes the METRICS_PORT docker-compose.yml gives every process, never the public API port', () => {
  const compose = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
  const scrape = readFileSync(path.join(ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8');
  const port = /METRICS_PORT: "(\d+)"/.exec(compose)?.[1];
  expect(port).toBeDefined();
  // the anchor every platform service shares, and no published metrics port
  expect(compose).not.toMatch(new RegExp(`ports: \\[[^\\]]*"${port}`));
  const jobs = [...scrape.matchAll(/names: \[(\w+)\][\s\S]*?port: (\d+)/g)].map((m) => [m[1], m[2]]);
  expect(jobs).toEqual([['api', port], ['dispatcher', port], ['deliverer', port], ['agents', port]]);
  expect(scrape).not.toMatch(/:3000\b/);
});

it('docker-compose.yml runs webhook delivery in a service of its own, apart from the dispatch work', () => {
  const compose = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
  // a service's block: its indented lines after `  <name>:` up to the next service
  const service = (name: string) => {
    const lines = compose.split('\n');
    const start = lines.indexOf(`  ${name}:`);
    if (start < 0) return '';
    const end = lines.findIndex((l, i) => i > start && /^ {0,2}\S/.test(l));
    return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
  };
  expect(service('dispatcher')).toMatch(/DISPATCHER_ROLE: dispatch\b/);
  expect(service('deliverer')).toMatch(/DISPATCHER_ROLE: deliver\b/);
  expect(service('deliverer')).toMatch(/apps\/dispatcher\/dist\/main\.js/);
  expect(service('deliverer')).toMatch(/limits: \{ cpus: /);
});
