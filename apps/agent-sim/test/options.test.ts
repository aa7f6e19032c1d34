import { writeFileSync } from 'node:fs';
import { tempFile } from '@svc/testing';
import { DEFAULT_BEHAVIOUR, createRandom, drawEnd, metricsAt, metricsProfile, parseDistribution, sample, simulateMetrics } from '../src/behaviour';
import { behaviourFor, HELP, parseOptions, UsageError } from '../src/options';

const URL_ENV = { SVC_URL: 'http://127.0.0.1:3000' };

/** The simulator's command line and behaviour settings (the process itself: agent-process.test.ts). */
describe('command line and config file', () => {
  it('needs the platform URL (SVC_URL or --url), one or several http(s) URLs, and nothing else of the platform', () => {
    expect(() => parseOptions(['--machine-key', 'k'], {})).toThrow(/no platform URL: set SVC_URL/);
    expect(() => parseOptions(['--machine-key', 'k'], { SVC_URL: ' , ' })).toThrow(/no platform URL/);
    expect(() => parseOptions(['--machine-key', 'k'], { SVC_URL: 'postgres://127.0.0.1/db' })).toThrow('SVC_URL: "postgres://127.0.0.1/db" is not an http(s) URL');
    expect(() => parseOptions(['--machine-key', 'k', '--url', 'not a url'], {})).toThrow(/is not an http\(s\) URL/);
    expect(parseOptions(['--machine-key', 'k'], { SVC_URL: 'https://a:3000, https://b.example.com' }).url).toBe('https://a:3000,https://b.example.com');
    expect(parseOptions(['--machine-key', 'k', '--url', 'https://c'], URL_ENV).url).toBe('https://c');
  });

  it('refuses plain HTTP to another host unless allowed, and takes keys from the environment or a file rather than the command line', () => {
    expect(() => parseOptions(['--machine-key', 'k'], { SVC_URL: 'https://a:3000, http://b.example.com' })).toThrow(/"http:\/\/b.example.com" is plain HTTP to another host/);
    for (const local of ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000', 'http://127.8.9.10']) {
      expect(parseOptions(['--machine-key', 'k'], { SVC_URL: local }).allowInsecure).toBe(false);
    }
    expect(parseOptions(['--machine-key', 'k', '--allow-insecure'], { SVC_URL: 'http://api:3000' }).url).toBe('http://api:3000');
    expect(parseOptions(['--machine-key', 'k'], { SVC_URL: 'http://api:3000', AGENT_ALLOW_INSECURE: '1' }).allowInsecure).toBe(true);

    const keys = tempFile('keys.txt');
    writeFileSync(keys, '# robots of site A\nsvc_mk_one\r\n\n  svc_mk_two  \n');
    const ca = tempFile('ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const fromFile = parseOptions(['--machine-key-file', keys, '--ca-file', ca], { ...URL_ENV, AGENT_MACHINE_KEYS: 'svc_mk_env' });
    expect(fromFile).toMatchObject({ machineKeys: ['svc_mk_env', 'svc_mk_one', 'svc_mk_two'], keysOnCommandLine: false, ca: expect.stringContaining('BEGIN CERTIFICATE') });
    expect(parseOptions([], { ...URL_ENV, AGENT_MACHINE_KEYS_FILE: keys }).machineKeys).toEqual(['svc_mk_one', 'svc_mk_two']);
    expect(parseOptions(['--machine-key', 'svc_mk_cli'], URL_ENV).keysOnCommandLine).toBe(true);
    expect(() => parseOptions(['--machine-key-file', `${keys}.missing`], URL_ENV)).toThrow(/cannot read the machine key file/);
    expect(() => parseOptions(['--machine-key', 'k', '--ca-file', `${ca}.missing`], URL_ENV)).toThrow(/cannot read the CA file/);
  });

  it('reads durations as fixed values and uniform ranges', () => {
    expect(parseDistribution('250ms')).toEqual({ dist: 'fixed', ms: 250 });
    expect(parseDistribution('2s')).toEqual({ dist: 'fixed', ms: 2000 });
    expect(parseDistribution('100-500ms')).toEqual({ dist: 'uniform', min_ms: 100, max_ms: 500 });
    expect(parseDistribution('1s-3s')).toEqual({ dist: 'uniform', min_ms: 1000, max_ms: 3000 });
    expect(parseDistribution(40)).toEqual({ dist: 'fixed', ms: 40 });
    expect(() => parseDistribution('soon')).toThrow(/not a duration/);
  });

  it('reads --input-rate and the question per process, and refuses a rate outside 0..1', () => {
    const config = tempFile('input.json');
    writeFileSync(config, JSON.stringify({ processes: { approvals: { input_rate: 1, input_options: { schema: { type: 'number' } } } } }));
    const opts = parseOptions(['--machine-key', 'svc_mk_x', '--input-rate', '0.25', '--config', config], URL_ENV);
    expect(opts.defaults).toMatchObject({ input_rate: 0.25, input_options: { choices: ['continuar', 'cancelar'] } });
    expect(behaviourFor(opts, { id: 'p1', name: 'approvals' })).toMatchObject({ input_rate: 1, input_options: { schema: { type: 'number' } } });
    expect(() => parseOptions(['--machine-key', 'svc_mk_x', '--input-rate', '2'], URL_ENV)).toThrow(/input_rate must be between 0 and 1/);
  });

  it('samples every distribution within its bounds, repeatably with a seed', () => {
    const r1 = createRandom(5);
    const r2 = createRandom(5);
    const a = Array.from({ length: 50 }, () => sample({ dist: 'uniform', min_ms: 10, max_ms: 20 }, r1));
    const b = Array.from({ length: 50 }, () => sample({ dist: 'uniform', min_ms: 10, max_ms: 20 }, r2));
    expect(a).toEqual(b);
    expect(a.every((x) => x >= 10 && x <= 20)).toBe(true);
    expect(sample({ dist: 'normal', mean_ms: 100, stddev_ms: 500 }, r1)).toBeGreaterThanOrEqual(0);
    expect(sample({ dist: 'exponential', mean_ms: 100 }, r1)).toBeGreaterThanOrEqual(0);
  });

  it('simulates the contract’s ResourceMetrics', () => {
    const m = simulateMetrics(DEFAULT_BEHAVIOUR, 2500, createRandom(1));
    expect(Object.keys(m).sort()).toEqual(['cpu_percent_avg', 'cpu_percent_peak', 'disk_read_mb', 'disk_write_mb', 'duration_seconds', 'ram_mb_avg', 'ram_mb_peak', 'sample_count']);
    expect(m.duration_seconds).toBe(2.5);
    expect(m.sample_count).toBe(3);
    expect(m.ram_mb_peak).toBeGreaterThanOrEqual(m.ram_mb_avg);
  });

  it('reports metrics while a run goes on: one profile, disk volumes growing with progress', () => {
    const p = metricsProfile({ ...DEFAULT_BEHAVIOUR, metrics: { ...DEFAULT_BEHAVIOUR.metrics, disk_read_mb: { min: 10, max: 10 } } }, createRandom(2));
    const half = metricsAt(p, 1000, 2000);
    const end = metricsAt(p, 2000, 2000);
    expect(half.disk_read_mb).toBe(5);
    expect(end.disk_read_mb).toBe(10);
    expect(half.cpu_percent_avg).toBe(end.cpu_percent_avg);
    expect(end.sample_count).toBe(2);
  });

  it('reads --business-failure-rate: 0 by default; file defaults ← AGENT_BUSINESS_FAILURE_RATE ← the flag ← the process entry; refused outside 0..1', () => {
    expect(DEFAULT_BEHAVIOUR.business_failure_rate).toBe(0);
    const k = ['--machine-key', 'k'];
    expect(parseOptions(k, URL_ENV).defaults.business_failure_rate).toBe(0);
    expect(parseOptions([...k, '--business-failure-rate', '0.3'], URL_ENV).defaults).toMatchObject({ business_failure_rate: 0.3, failure_rate: 0 });
    expect(parseOptions([...k, '--business-failure-rate=.5'], URL_ENV).defaults.business_failure_rate).toBe(0.5);
    expect(parseOptions(k, { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.05' }).defaults.business_failure_rate).toBe(0.05);
    // an empty variable is an unset one
    expect(parseOptions(k, { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '' }).defaults.business_failure_rate).toBe(0);
    expect(parseOptions([...k, '--business-failure-rate', '0.5'], { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: 'lots' }).defaults.business_failure_rate).toBe(0.5);
    const config = tempFile('business.json');
    writeFileSync(config, JSON.stringify({ defaults: { business_failure_rate: 0.25 }, processes: { 'invoice-bot': { business_failure_rate: 0.75 } } }));
    expect(parseOptions([...k, '--config', config], URL_ENV).defaults.business_failure_rate).toBe(0.25);
    const layered = parseOptions([...k, '--config', config], { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.5' });
    expect(layered.defaults.business_failure_rate).toBe(0.5);
    expect(behaviourFor(layered, { id: 'x', name: 'invoice-bot' }).business_failure_rate).toBe(0.75);
    expect(parseOptions([...k, '--config', config, '--business-failure-rate', '0.9'], { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '0.5' }).defaults.business_failure_rate).toBe(0.9);
    for (const bad of ['-0.1', '1.5', 'often', 'NaN', 'true', '', ' ', '0x1', 'Infinity']) {
      expect(() => parseOptions([...k, '--business-failure-rate', bad], URL_ENV)).toThrow(new UsageError('business_failure_rate must be between 0 and 1'));
    }
    expect(() => parseOptions(k, { ...URL_ENV, AGENT_BUSINESS_FAILURE_RATE: '2' })).toThrow('business_failure_rate must be between 0 and 1');
    for (const bad of [true, null, [], [0.5], '0x1', -1]) {
      const file = tempFile('bad-business.json');
      writeFileSync(file, JSON.stringify({ defaults: { business_failure_rate: bad } }));
      expect(() => parseOptions([...k, '--config', file], URL_ENV)).toThrow('business_failure_rate must be between 0 and 1');
    }
  });

  it('decides an end on one draw: application failure, then business failure, then (an item) review, then completed', () => {
    const b = { failure_rate: 0.1, business_failure_rate: 0.2, review_rate: 0.3 };
    expect([0, 0.099, 0.1, 0.299, 0.301, 0.599, 0.601, 0.999].map((r) => drawEnd(b, r, true))).toEqual(['application', 'application', 'business', 'business', 'review', 'review', 'completed', 'completed']);
    expect([0.05, 0.15, 0.35].map((r) => drawEnd(b, r, false))).toEqual(['application', 'business', 'completed']);
    // bands past 1: the later ones get only what is left
    expect([0.7, 0.85, 0.99].map((r) => drawEnd({ failure_rate: 0.8, business_failure_rate: 0.5, review_rate: 0.5 }, r, true))).toEqual(['application', 'business', 'business']);
  });

  it('layers defaults ← file defaults ← flags ← the process entry (by id or by name)', () => {
    const file = tempFile('agent.json');
    writeFileSync(file, JSON.stringify({
      machine_keys: ['svc_mk_from_file'],
      defaults: { failure_rate: 0.2, log_lines: 7 },
      processes: { 'invoice-bot': { failure_rate: 0.9, item_duration: '1-2ms' }, 'b6d7c7f0-0000-4000-8000-000000000001': { crash: 'mid-job' } },
    }));
    const opts = parseOptions(['--machine-key', 'svc_mk_a', '--config', file, '--failure-rate', '0.5', '--prefetch=4'], { ...URL_ENV, AGENT_MACHINE_KEYS: 'svc_mk_b, svc_mk_a' });
    expect(opts.machineKeys).toEqual(['svc_mk_a', 'svc_mk_b', 'svc_mk_from_file']);
    expect(opts.defaults).toMatchObject({ failure_rate: 0.5, log_lines: 7, prefetch: 4 });
    expect(behaviourFor(opts, { id: 'x', name: 'invoice-bot' })).toMatchObject({ failure_rate: 0.9, log_lines: 7, item_duration: { dist: 'uniform', min_ms: 1, max_ms: 2 } });
    expect(behaviourFor(opts, { id: 'b6d7c7f0-0000-4000-8000-000000000001', name: 'other' }).crash).toBe('mid-job');
    expect(behaviourFor(opts, { id: 'y', name: 'unknown' }).failure_rate).toBe(0.5);
  });

  it('refuses a missing key, an unknown option and a bad value with one sentence', () => {
    expect(() => parseOptions([], URL_ENV)).toThrow(UsageError);
    expect(() => parseOptions(['--machine-key', 'k', '--speed', '3'], URL_ENV)).toThrow(/unknown option --speed/);
    expect(() => parseOptions(['--machine-key', 'k', '--failure-rate', '2'], URL_ENV)).toThrow(/between 0 and 1/);
    expect(() => parseOptions(['--machine-key', 'k', '--crash', 'sometimes'], URL_ENV)).toThrow(/crash must be/);
    expect(() => parseOptions(['--machine-key', 'k', '--prefetch', '0'], URL_ENV)).toThrow('prefetch must be auto or an integer from 1 to 100');
    expect(() => parseOptions(['--machine-key', 'k', '--prefetch', '101'], URL_ENV)).toThrow('prefetch must be auto or an integer from 1 to 100');
    expect(() => parseOptions(['--machine-key', 'k', '--prefetch', 'lots'], URL_ENV)).toThrow('prefetch must be auto or an integer from 1 to 100');
  });

  it('reads the command line as it always has: --flag value and --flag=value, the next argument whatever it looks like, repeated flags', () => {
    const k = ['--machine-key', 'k'];
    // a value is the next argument even when it starts with a dash: the rate's own rule refuses it, not the parser
    expect(() => parseOptions([...k, '--review-rate', '-0.1'], URL_ENV)).toThrow(new UsageError('review_rate must be between 0 and 1'));
    expect(parseOptions([...k, '--seed', '-5'], URL_ENV).seed).toBe(-5);
    expect(parseOptions(['--machine-key', '--seed'], URL_ENV).machineKeys).toEqual(['--seed']);
    expect(parseOptions(['--machine-key', '--'], URL_ENV).machineKeys).toEqual(['--']);
    // --flag=value: split at the first `=`, the rest is the value (an empty one too)
    expect(parseOptions(['--machine-key=a=b', '--url=https://c/?x=1'], {}).machineKeys).toEqual(['a=b']);
    expect(parseOptions(['--machine-key=a', '--url=https://c/?x=1'], {}).url).toBe('https://c/?x=1');
    expect(parseOptions([...k, '--journal='], URL_ENV).journal).toBe('');
    expect(parseOptions([...k, '--journal='], { ...URL_ENV, AGENT_JOURNAL: '/tmp/env.jsonl' }).journal).toBe('');
    // repeated: keys add up (a key once), settings take the last
    expect(parseOptions(['--machine-key', 'a', '--machine-key=b', '--machine-key', 'a'], URL_ENV)).toMatchObject({ machineKeys: ['a', 'b'], keysOnCommandLine: true });
    expect(parseOptions([...k, '--seed', '1', '--seed=2', '--log-lines=1', '--log-lines', '5'], URL_ENV)).toMatchObject({ seed: 2, defaults: { log_lines: 5 } });
    // a switch takes no value; one given inline is ignored
    for (const on of ['--allow-insecure', '--allow-insecure=', '--allow-insecure=0', '--allow-insecure=no']) {
      expect(parseOptions([...k, on], { SVC_URL: 'http://api:3000' }).allowInsecure).toBe(true);
    }
    // the first refusal in the command line's order
    expect(() => parseOptions([...k, '--failure-rate', '2', '--crash', 'sometimes'], URL_ENV)).toThrow(new UsageError('failure_rate must be between 0 and 1'));
    expect(() => parseOptions([...k, '--crash', 'sometimes', '--failure-rate', '2'], URL_ENV)).toThrow(/^crash must be/);
    // a setting given again keeps its first place: the last value, checked where the flag first came
    expect(() => parseOptions([...k, '--failure-rate', '0', '--crash', 'sometimes', '--failure-rate=3'], URL_ENV)).toThrow(new UsageError('failure_rate must be between 0 and 1'));
    expect(() => parseOptions([...k, '--failure-rate', '2', '--crash', 'sometimes', '--failure-rate=0'], URL_ENV)).toThrow(/^crash must be/);
    expect(() => parseOptions([...k, '--speed', '3', '--duration'], URL_ENV)).toThrow(/^unknown option --speed\n/);
    expect(() => parseOptions([...k, '--duration', '1s', '--url'], URL_ENV)).toThrow(new UsageError('--url needs a value'));
  });

  it('refuses positional arguments, unknown and grouped short options with the argument as typed, and answers --help or -h with the usage', () => {
    const k = ['--machine-key', 'k'];
    const unknown = (argv: string[], flag: string) => expect(() => parseOptions([...k, ...argv], URL_ENV)).toThrow(new UsageError(`unknown option ${flag}\n\n${HELP}`));
    unknown(['extra'], 'extra');
    unknown(['a=b'], 'a');
    unknown(['-'], '-');
    unknown(['-='], '-');
    unknown(['--', '--seed', '1'], '--');
    unknown(['--=x'], '--');
    unknown(['---seed', '1'], '---seed');
    unknown(['-x'], '-x');
    unknown(['-hx'], '-hx');
    unknown(['-x=1'], '-x');
    unknown(['--speed=3'], '--speed');
    unknown(['--allow-insecure', 'yes'], 'yes');
    unknown(['--constructor'], '--constructor');
    unknown(['--__proto__'], '--__proto__');
    unknown(['--machine_key', 'k'], '--machine_key');
    unknown(['-seed', '1'], '-seed');
    for (const help of [['--help'], ['-h'], ['-h=1'], ['--help=no'], ['--seed', '1', '-h', '--speed']]) {
      expect(() => parseOptions(help, {})).toThrow(new UsageError(HELP));
    }
    expect(() => parseOptions(['--speed', '-h'], {})).toThrow(/^unknown option --speed/);
    // a flag that wants a value names itself as typed
    for (const flag of ['--machine-key', '--machine-key-file', '--ca-file', '--url', '--config', '--seed', '--heartbeat-ms', '--journal', '--duration', '--item-duration', '--failure-rate', '--business-failure-rate', '--review-rate', '--progress-steps', '--log-lines', '--prefetch', '--crash', '--crash-after-items', '--failure-message', '--input-rate']) {
      expect(() => parseOptions([...k, flag], URL_ENV)).toThrow(new UsageError(`${flag} needs a value`));
    }
  });

  it('takes prefetch auto by default, and auto or a number from a flag', () => {
    expect(parseOptions(['--machine-key', 'k'], URL_ENV).defaults.prefetch).toBe('auto');
    expect(parseOptions(['--machine-key', 'k', '--prefetch', '1'], URL_ENV).defaults.prefetch).toBe(1);
    expect(parseOptions(['--machine-key', 'k', '--prefetch', '7', '--prefetch', 'auto'], URL_ENV).defaults.prefetch).toBe('auto');
  });
});
