import path from 'node:path';
import { promtool } from '@svc/testing';

/**
 * The alert rules shipped in deploy/prometheus load (`promtool check rules`) and fire on the
 * series they are about (`promtool test rules`, alerts.test.yml). Left out without promtool.
 */
const DIR = path.resolve(__dirname, '../deploy/prometheus');

it('promtool check rules passes on deploy/prometheus/alerts.yml', () => {
  const res = promtool(['check', 'rules', path.join(DIR, 'alerts.yml')]);
  expect(res.output).toMatch(/SUCCESS: \d+ rules found/);
  expect(res.status).toBe(0);
});

it('the alerts fire as their unit tests say (promtool test rules)', () => {
  const res = promtool(['test', 'rules', path.join(DIR, 'alerts.test.yml')]);
  expect(res.output).toContain('SUCCESS');
  expect(res.status).toBe(0);
});

it('promtool check config passes on deploy/prometheus/prometheus.yml, rules included', () => {
  const res = promtool(['check', 'config', path.join(DIR, 'prometheus.yml')]);
  expect(res.output).toMatch(/SUCCESS: .*prometheus\.yml is valid prometheus config file syntax/);
  expect(res.status).toBe(0);
});
