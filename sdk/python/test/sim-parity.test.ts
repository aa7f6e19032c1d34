import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempFile } from '@svc/testing';
import { createRandom, drawEnd, metricsAt, metricsProfile, parseDistribution, sample } from '../../../apps/agent-sim/src/behaviour';
import { behaviourFor, parseOptions } from '../../../apps/agent-sim/src/options';

/**
 * The Python simulator (python3 -m svc_agent.sim) reads the same command lines, environment and
 * config files as agent-sim, and draws the same durations and metrics from the same seed: every
 * case below goes through both, and their readings (or their one-sentence refusals) must be equal.
 */
const PYTHON = process.env.SVC_PYTHON ?? '/usr/bin/python3';
const SDK_DIR = path.resolve(__dirname, '..');

interface OptionsCase { argv: string[]; env: Record<string, string>; processes?: Array<{ id: string; name: string }> }

/** A refusal's first line; what the system said of an unreadable file is each language's own. */
function refusal(message: string): { error: string } {
  return { error: message.split('\n')[0]!.replace(/^(cannot read [^:]+): .*$/, '$1: …') };
}

function python(cases: object): { options: unknown[]; distributions: unknown[]; draws: unknown[] } {
  const res = spawnSync(PYTHON, ['-B', path.join(__dirname, 'sim_parity.py')], {
    input: JSON.stringify(cases),
    env: { PATH: process.env.PATH ?? '', PYTHONPATH: SDK_DIR },
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (res.status !== 0) throw new Error(`sim_parity.py failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout) as { options: unknown[]; distributions: unknown[]; draws: unknown[] };
}

function typescript(c: OptionsCase): unknown {
  try {
    const o = parseOptions(c.argv, c.env);
    return {
      url: o.url,
      machineKeys: o.machineKeys,
      defaults: o.defaults,
      seed: o.seed ?? null,
      heartbeatMs: o.heartbeatMs ?? null,
      journal: o.journal ?? null,
      allowInsecure: o.allowInsecure,
      hasCa: o.ca !== undefined,
      keysOnCommandLine: o.keysOnCommandLine,
      behaviours: Object.fromEntries((c.processes ?? []).map((p) => [p.name, behaviourFor(o, p)])),
    };
  } catch (err) {
    return refusal((err as Error).message);
  }
}

const URL_ENV = { SVC_URL: 'http://127.0.0.1:3000' };

function files() {
  const keys = tempFile('keys.txt');
  writeFileSync(keys, '# robots of site A\nsvc_mk_one\r\n\n  svc_mk_two  \n');
  const ca = tempFile('ca.pem');
  writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  const config = tempFile('agent.json');
  writeFileSync(config, JSON.stringify({
    machine_keys: ['svc_mk_from_file'],
    defaults: { failure_rate: 0.2, log_lines: 7, duration: { dist: 'normal', mean_ms: 900, stddev_ms: 100 } },
    processes: {
      'invoice-bot': { failure_rate: 0.9, item_duration: '1-2ms', metrics: { cpu_percent: [20, 90], ram_mb: 512 }, output: { site: 'A' } },
      'b6d7c7f0-0000-4000-8000-000000000001': { crash: 'mid-job', input_rate: 1, input_prompt: '¿Aprobar?', input_options: { schema: { type: 'number' } } },
    },
  }));
  const badConfig = tempFile('bad.json');
  writeFileSync(badConfig, '{"defaults": ');
  const badProcess = tempFile('bad-process.json');
  writeFileSync(badProcess, JSON.stringify({ processes: { p: { speed: 3 } } }));
  // hostile files: each refused with one sentence, the same by both
  const hostile = [
    'null', '[1,2]', '5', '"text"', '{"processes": {"p": 5}}', '{"processes": []}', '{"processes": "p"}', '{"machine_keys": "abc"}',
    '{"machine_keys": [1]}', '{"defaults": []}', '{"defaults": {"output": 5}}', '{"defaults": {"output": "str"}}', '{"defaults": {"output": null}}',
    '{"defaults": {"metrics": 5}}', '{"defaults": {"metrics": {"cpu_percent": "x"}}}', '{"defaults": {"metrics": {"cpu_percent": [1]}}}',
    '{"defaults": {"metrics": {"cpu_percent": [1, 2, 3]}}}', '{"defaults": {"metrics": {"gpu": [1, 2]}}}', '{"defaults": {"input_options": [1]}}',
    '{"defaults": {"duration": {"dist": "weibull"}}}', '{"defaults": {"crash": 1}}', '{"defaults": {"prefetch": true}}', '{"defaults": {"failure_rate": true}}', '{"defaults": {"log_lines": false}}', '{"processes": {"p": {"metrics": {"ram_mb": [10, 20]}}}}',
  ].map((text, i) => {
    const file = tempFile(`hostile-${i}.json`);
    writeFileSync(file, text);
    return file;
  });
  // business_failure_rate from the config file: in the defaults, over them per process, and hostile
  const business = tempFile('business.json');
  writeFileSync(business, JSON.stringify({ defaults: { business_failure_rate: 0.25, failure_rate: 0.1 }, processes: { 'invoice-bot': { business_failure_rate: '0.75' }, other: { business_failure_rate: 0 } } }));
  const hostileBusiness = ['-0.1', '1.5', '"often"', '"NaN"', 'true', 'false', 'null', '[]', '[0.5]', '{}', '""', '" "', '"0x1"', '"1_0"', '1e400', `1${'0'.repeat(400)}`, '"Infinity"'].map((value, i) => {
    const file = tempFile(`hostile-business-${i}.json`);
    writeFileSync(file, `{"defaults": {"business_failure_rate": ${value}}}`);
    return file;
  });
  return { keys, ca, config, badConfig, badProcess, hostile, business, hostileBusiness };
}

describe('the Python simulator and agent-sim', () => {
  it('read every command line, environment and config file alike, and refuse the same ones with the same sentence', () => {
    const f = files();
    const k = ['--machine-key', 'k'];
    const cases: OptionsCase[] = [
      { argv: k, env: {} },
      { argv: k, env: { SVC_URL: ' , ' } },
      { argv: k, env: { SVC_URL: 'postgres://127.0.0.1/db' } },
      { argv: [...k, '--url', 'not a url'], env: {} },
      { argv: k, env: { SVC_URL: 'https://a:3000, https://b.example.com' } },
      { argv: [...k, '--url', 'https://c'], env: URL_ENV },
      { argv: k, env: { SVC_URL: 'https://a:3000, http://b.example.com' } },
      ...['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000', 'http://127.8.9.10'].map((u) => ({ argv: k, env: { SVC_URL: u } })),
      { argv: [...k, '--allow-insecure'], env: { SVC_URL: 'http://api:3000' } },
      { argv: k, env: { SVC_URL: 'http://api:3000', AGENT_ALLOW_INSECURE: '1' } },
      { argv: ['--machine-key-file', f.keys, '--ca-file', f.ca], env: { ...URL_ENV, AGENT_MACHINE_KEYS: 'svc_mk_env' } },
      { argv: [], env: { ...URL_ENV, AGENT_MACHINE_KEYS_FILE: f.keys } },
      { argv: ['--machine-key-file', `${f.keys}.missing`], env: URL_ENV },
      { argv: [...k, '--ca-file', `${f.ca}.missing`], env: URL_ENV },
      {
        argv: ['--machine-key', 'svc_mk_a', '--config', f.config, '--failure-rate', '0.5', '--prefetch=4', '--input-rate', '0.25', '--duration', '1s-3s', '--item-duration', '250ms'],
        env: { ...URL_ENV, AGENT_MACHINE_KEYS: 'svc_mk_b, svc_mk_a' },
        processes: [{ id: 'x', name: 'invoice-bot' }, { id: 'b6d7c7f0-0000-4000-8000-000000000001', name: 'other' }, { id: 'y', name: 'unknown' }],
      },
      { argv: k, env: { ...URL_ENV, AGENT_CONFIG: f.config }, processes: [{ id: 'x', name: 'invoice-bot' }] },
      { argv: [...k, '--config', f.badConfig], env: URL_ENV },
      { argv: [...k, '--config', f.badProcess], env: URL_ENV },
      ...f.hostile.map((file) => ({ argv: [...k, '--config', file], env: URL_ENV, processes: [{ id: 'x', name: 'p' }] })),
      { argv: [], env: URL_ENV },
      { argv: [...k, '--speed', '3'], env: URL_ENV },
      { argv: [...k, '--duration'], env: URL_ENV },
      { argv: [...k, '--failure-rate', '2'], env: URL_ENV },
      { argv: [...k, '--review-rate', '-0.1'], env: URL_ENV },
      { argv: [...k, '--input-rate', 'often'], env: URL_ENV },
      { argv: [...k, '--crash', 'sometimes'], env: URL_ENV },
      { argv: [...k, '--crash', 'mid-item', '--crash-after-items', '3'], env: URL_ENV },
      { argv: [...k, '--crash-after-items', '1.5'], env: URL_ENV },
      { argv: [...k, '--progress-steps', '-1'], env: URL_ENV },
      ...['0', '101', 'lots', '1', '100', 'auto'].map((p) => ({ argv: [...k, '--prefetch', p], env: URL_ENV })),
      { argv: [...k, '--prefetch', '7', '--prefetch', 'auto'], env: URL_ENV },
      { argv: [...k, '--duration', 'soon'], env: URL_ENV },
      { argv: [...k, '--duration', '1.5s', '--item-duration', '100-500ms'], env: URL_ENV },
      { argv: [...k, '--duration=2m', '--log-lines=0', '--progress-steps=9'], env: URL_ENV },
      { argv: [...k, '--seed', '42', '--heartbeat-ms', '60000', '--journal', '/tmp/j.jsonl'], env: URL_ENV },
      { argv: [...k, '--seed', '1.5'], env: URL_ENV },
      { argv: [...k, '--heartbeat-ms', '10'], env: URL_ENV },
      { argv: k, env: { ...URL_ENV, AGENT_JOURNAL: '/tmp/env.jsonl' } },
      { argv: [...k, '--failure-message', 'Factura ilegible'], env: URL_ENV },
      // business_failure_rate: by flag, by environment (under the flag, over the file's defaults), by config file
      { argv: [...k, '--business-failure-rate', '0.3'], env: URL_ENV },
      { argv: [...k, '--business-failure-rate=1', '--failure-rate', '0'], env: URL_ENV },
      { argv: k, env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.05' } },
      { argv: [...k, '--business-failure-rate', '0.5'], env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.05' } },
      { argv: k, env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '' } },
      { argv: k, env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '2' } },
      { argv: k, env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: 'NaN' } },
      { argv: k, env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: 'true' } },
      { argv: [...k, '--business-failure-rate', '0.5'], env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: 'lots' } },
      { argv: [...k, '--config', f.business], env: URL_ENV, processes: [{ id: 'x', name: 'invoice-bot' }, { id: 'y', name: 'other' }, { id: 'z', name: 'unknown' }] },
      { argv: [...k, '--config', f.business], env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.5' }, processes: [{ id: 'x', name: 'invoice-bot' }, { id: 'z', name: 'unknown' }] },
      { argv: [...k, '--config', f.business, '--business-failure-rate', '0.9'], env: { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.5' }, processes: [{ id: 'z', name: 'unknown' }] },
      ...['-0.1', '-0', '1.0001', 'often', 'NaN', 'nan', 'Infinity', 'true', 'false', '', ' ', '0x1', '0b1', '1_0', '0_0', '.5', '5e-1', ' 0.5 ', '1.', '+1'].map((p) => ({ argv: [...k, '--business-failure-rate', p], env: URL_ENV })),
      { argv: [...k, '--business-failure-rate'], env: URL_ENV },
      ...f.hostileBusiness.map((file) => ({ argv: [...k, '--config', file], env: URL_ENV })),
      // the other rates are read by the same rule: blanks, hex and a null are no number in either
      { argv: [...k, '--failure-rate', ''], env: URL_ENV },
      { argv: [...k, '--review-rate', '0x0'], env: URL_ENV },
      { argv: [...k, '--input-rate', '0_0'], env: URL_ENV },
    ];
    const py = python({ options: cases, distributions: [], draws: [] });
    cases.forEach((c, i) => {
      const name = [...c.argv, ...Object.entries(c.env).map(([n, v]) => `${n}=${v}`)].join(' ');
      const reading = py.options[i] as { error?: string };
      expect({ case: name, reading: reading.error === undefined ? reading : refusal(reading.error) }).toEqual({ case: name, reading: typescript(c) });
    });
  });

  it('decide how jobs and items end alike from the same seed, business_failure_rate drawn on the failure\'s draw, right after failure_rate', () => {
    const rates = [
      { failure_rate: 0.1, business_failure_rate: 0.25, review_rate: 0.2 },
      { failure_rate: 0, business_failure_rate: 0.5, review_rate: 0.3 },
      { failure_rate: 0.8, business_failure_rate: 0.5, review_rate: 0.1 },
      { failure_rate: 0.2, business_failure_rate: 0, review_rate: 0.2 },
    ];
    const seeds = [0, 7, 42, 4294967295];
    const cases = seeds.flatMap((seed) => rates.map((r) => ({ seed, rates: r, n: 40 })));
    const py = python({ options: [], distributions: [], draws: cases });
    cases.forEach((c, i) => {
      const r = createRandom(c.seed);
      const b = { ...parseOptions(['--machine-key', 'k'], URL_ENV).defaults, ...c.rates };
      const ts = { items: Array.from({ length: c.n }, () => drawEnd(b, r(), true)), jobs: Array.from({ length: c.n }, () => drawEnd(b, r(), false)) };
      expect({ case: c, ends: py.draws[i] }).toEqual({ case: c, ends: ts });
      if (c.rates.business_failure_rate > 0) expect(ts.items.concat(ts.jobs)).toContain('business');
    });
  });

  it('with business_failure_rate 0 decide every end as before the setting existed (the same draws for every seed)', () => {
    const r = createRandom(42);
    for (let i = 0; i < 2000; i++) {
      const x = r();
      const b = { failure_rate: (i % 11) / 10, business_failure_rate: 0, review_rate: (i % 7) / 10 };
      // the expressions agent-sim used before business failures
      const item = x < b.failure_rate ? 'application' : x < b.failure_rate + b.review_rate ? 'review' : 'completed';
      expect([drawEnd(b, x, true), drawEnd(b, x, false)]).toEqual([item, x < b.failure_rate ? 'application' : 'completed']);
    }
  });

  it('read durations alike, and draw the same durations and metrics from the same seed', () => {
    const distributions = ['250ms', '2s', '1.5s', '1m', '100-500ms', '1s-3s', '100ms-2s', 40, { dist: 'exponential', mean_ms: 10 }, 'soon', '', { dist: 'weibull' }, null];
    const seeds = [0, 1, 5, 42, 2 ** 31, 4294967295];
    const py = python({ options: [], distributions, draws: seeds.map((seed) => ({ seed })) });
    distributions.forEach((d, i) => {
      let ts: unknown;
      try {
        ts = parseDistribution(d);
      } catch (err) {
        ts = { error: (err as Error).message };
      }
      expect({ input: d, reading: py.distributions[i] }).toEqual({ input: d, reading: ts });
    });
    seeds.forEach((seed, i) => {
      const r = createRandom(seed);
      const ts = {
        uniform: Array.from({ length: 5 }, () => sample({ dist: 'uniform', min_ms: 10, max_ms: 20 }, r)),
        normal: sample({ dist: 'normal', mean_ms: 100, stddev_ms: 30 }, r),
        exponential: sample({ dist: 'exponential', mean_ms: 100 }, r),
        metrics: metricsAt(metricsProfile(parseOptions(['--machine-key', 'k'], URL_ENV).defaults, r), 1500, 3000),
      };
      const got = py.draws[i] as typeof ts;
      // the same generator: equal draws, up to the last bits of the two languages' floating point
      expect(got.uniform.map((x, j) => Math.abs(x - ts.uniform[j]!) < 1e-9)).toEqual(ts.uniform.map(() => true));
      expect(Math.abs(got.normal - ts.normal)).toBeLessThan(1e-9);
      expect(Math.abs(got.exponential - ts.exponential)).toBeLessThan(1e-9);
      expect({ seed, metrics: got.metrics }).toEqual({ seed, metrics: ts.metrics });
    });
  });
});
