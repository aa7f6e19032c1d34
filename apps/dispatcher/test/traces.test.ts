import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  freePort, ROOT, seedWorkspace, startOtlpReceiver, testSuite, waitFor, waitForHttp, type OtlpReceiver, type ReceivedSpan,
} from '@svc/testing';

/**
 * OpenTelemetry traces across the processes (docs/decisions/observability.md): one API call that
 * triggers a job yields one trace with the API's request span, its Postgres statements, the
 * dispatcher's publication of the job, the start of the job by the API replica holding the
 * robot's connection, the robot's run of it and the platform's statements for the robot's
 * requests (its end among them), each under the one before; the
 * API's log lines of the request carry its trace_id and span_id. The processes export over
 * OTLP/HTTP (JSON) to a receiver this test runs on loopback. Off, the SDK is not even loaded.
 */
jest.setTimeout(120_000);
const suite = testSuite();
const { children } = suite;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await children.stopAll();
  await receiver?.close();
});

it('one API call that triggers a job is one trace across the API, the dispatcher and the agent', async () => {
  const ctx = suite.ctx;
  const ws = await seedWorkspace(ctx.sql);
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', HOST: '127.0.0.1' };
  const port = await freePort();
  const api = children.api(ctx, port, { ...env, LOG_LEVEL: 'info' });
  children.dispatcher(ctx, env);
  const machine = await ws.machine();
  await waitForHttp(`http://127.0.0.1:${port}/health`);
  // the robot's connection is held by this same API process
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '100ms'], env, { url: `http://127.0.0.1:${port}` });
  const proc = await ws.process();
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/jobs/trigger`, {
    method: 'POST',
    headers: { 'X-API-Key': ws.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ process_id: proc.id, machine_id: machine.row.id }),
  });
  expect(res.status).toBe(201);
  const jobId = ((await res.json()) as { data: { id: string } }).data.id;

  const byName = (spans: ReceivedSpan[], service: string, name: string) => spans.find((s) => s.service === service && s.name === name);
  const found = await waitFor('the API, dispatcher and agent spans of the call', async () => {
    const request = receiver.spans.find((s) => s.service === 'api' && s.name === 'POST /api/v1/jobs/trigger');
    if (!request) return null;
    const trace = receiver.spans.filter((s) => s.traceId === request.traceId);
    // published at once by the API after its commit, and again by the dispatcher's relay
    const publishedAtOnce = byName(trace, 'api', 'outbox publish jobs-created');
    const publish = byName(trace, 'dispatcher', 'outbox publish jobs-created');
    const start = byName(trace, 'api', 'machine job start');
    const run = byName(trace, 'agent-sim', 'job run');
    const finish = byName(trace, 'api', 'machine job.finish');
    // the platform's statements of the robot's end, exported after its span
    const finishStatements = finish && trace.filter((s) => s.parentSpanId === finish.spanId);
    return publishedAtOnce && publish && start && run && finish && finishStatements!.length >= 1
      ? { request, trace, publishedAtOnce, publish, start, run, finish, finishStatements: finishStatements! }
      : null;
  }, 60_000, 100);
  const { request, trace, publishedAtOnce, publish, start, run, finish, finishStatements } = found;

  expect(request.parentSpanId).toBeUndefined();
  expect(request.kind).toBe(2); // SERVER
  expect(request.attributes['http.route']).toBe('/api/v1/jobs/trigger');
  const apiStatements = trace.filter((s) => s.service === 'api' && s.name.startsWith('pg ') && s.parentSpanId === request.spanId);
  expect(apiStatements.length).toBeGreaterThan(0);
  const statement = (text: string) => apiStatements.some((s) => String(s.attributes['db.statement']).includes(text));
  expect(statement('insert into jobs')).toBe(true);
  expect(statement('insert into outbox')).toBe(true);
  expect(publishedAtOnce.parentSpanId).toBe(request.spanId);
  expect(publish.parentSpanId).toBe(request.spanId);
  // the run starts from whichever publication put the job on its machine's queue first (the same BullMQ id)
  expect([publishedAtOnce.spanId, publish.spanId]).toContain(start.parentSpanId);
  expect(start.attributes['svc.job.id']).toBe(jobId);
  expect(trace.some((s) => s.parentSpanId === start.spanId && String(s.attributes['db.statement']).includes('update jobs'))).toBe(true);
  expect(run.parentSpanId).toBe(start.spanId);
  expect(run.attributes['svc.job.id']).toBe(jobId);
  expect(finish.parentSpanId).toBe(run.spanId);
  for (const s of finishStatements) expect(s.name).toMatch(/^pg /);
  // the robot's spans are its own: it touches no database
  expect(trace.filter((s) => s.service === 'agent-sim' && s.name.startsWith('pg '))).toEqual([]);
  expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['api', 'dispatcher', 'agent-sim']));

  // every log line of the traced request names its trace and span
  const lines = await waitFor('the access log line of the call', async () => {
    const all = api.output().split('\n').filter((l) => l.includes('"path":"/api/v1/jobs/trigger"'));
    return all.length ? all : null;
  }, 20_000);
  for (const line of lines) {
    const entry = JSON.parse(line) as { trace_id?: string; span_id?: string };
    expect(entry).toMatchObject({ trace_id: request.traceId, span_id: request.spanId });
  }
});

it('off (no OTEL_EXPORTER_OTLP_ENDPOINT), a process loads no OpenTelemetry SDK and its pool is not wrapped', () => {
  const script = `
    const core = { ...require(${JSON.stringify(path.join(ROOT, 'packages/core/dist/index.js'))}),
      ...require(${JSON.stringify(path.join(ROOT, 'packages/core/dist/observability.js'))}) };
    core.startTracing({}, 'api');
    core.createLogger({ service: 'api', silent: true });
    const sql = core.createSql('postgres://127.0.0.1:1/none', { max: 1 });
    const sdk = Object.keys(require.cache).filter((k) => /@opentelemetry[\\\\/](sdk|exporter|instrumentation|resources)/.test(k));
    console.log(JSON.stringify({ enabled: core.tracingEnabled(), sdk: sdk.length, proxied: require('node:util').types.isProxy(sql) }));
    sql.end({ timeout: 0 });`;
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '' } });
  expect(out.stderr).toBe('');
  expect(JSON.parse(out.stdout.trim().split('\n').pop()!)).toEqual({ enabled: false, sdk: 0, proxied: false });
});
