import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { seedWorkspace, startProtocolRelay, waitFor, type ProtocolRelay } from '@svc/testing';

/**
 * The simulated robot speaks the machine protocol as docs/agent-protocol.schema.json describes it:
 * a relay reads every message between it and the platform while it runs ordinary jobs, a
 * question answered by a person, a stop, a failure and a queue's items (completed, reviewed,
 * failed), and finds nothing the document does not describe. Run with each simulator
 * (protocol-conformance.python.test.ts: the Python SDK's).
 */
jest.setTimeout(120_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;
let relay: ProtocolRelay;

beforeAll(async () => {
  ({ ctx } = suite);
  relay = await startProtocolRelay(await children.gateway(ctx));
});
afterAll(async () => {
  await relay?.close();
});

it('every request, result, error and push between the robot and the platform is one the protocol document describes', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const consumer = await ws.process();
  const queue = await ws.queue({ consumer_process_id: consumer.id, max_retries: 0 });
  const machine = await ws.machine({ slots: 3 });
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '300ms', '--progress-steps', '3', '--log-lines', '5', '--item-duration', '5ms'], {}, { url: relay.url });
  const integrator = apiClient(ctx, { apiKey: ws.key });
  const admin = apiClient(ctx, { token: ws.adminToken });
  const trigger = async (input: Record<string, unknown> | null) =>
    (await integrator.call('triggerJob', { body: { process_id: proc.id, machine_id: machine.row.id, input_data: input } })).id;
  const status = (id: string, wanted: string) => waitFor(`job ${id} ${wanted}`, async () => {
    const job = await admin.call('getWorkspaceJob', { path: { job_id: id } });
    return job.status === wanted ? job : null;
  }, 60_000, 100);

  const plain = await trigger(null);
  const failing = await trigger({ _sim: { outcome: 'fail', error_message: 'Factura ilegible' } });
  const asking = await trigger({ _sim: { input: { prompt: '¿Aprobar?', options: { choices: ['sí', 'no'] } } } });
  await status(plain, 'completed');
  await status(failing, 'failed');
  await status(asking, 'waiting_input');
  await admin.call('answerJobInput', { path: { job_id: asking }, body: { value: 'sí' } });
  expect((await status(asking, 'completed')).output_data).toMatchObject({ input_value: 'sí' });

  const long = await trigger({ _sim: { duration_ms: 60_000 } });
  await status(long, 'running');
  await admin.call('stopWorkspaceJob', { path: { job_id: long } });
  await status(long, 'stopped');

  for (const outcome of ['complete', 'review', 'fail']) {
    const res = await ctx.http.post(`/api/v1/queues/by-name/${queue.name as string}/items`).set('X-API-Key', ws.key).send({ data: { _sim: { outcome } } });
    expect(res.status).toBe(200);
  }
  await waitFor('the queue\'s items settled', async () => {
    const rows = await ctx.sql`select status from queue_items where queue_id = ${queue.id}`;
    // a failure with no retry left goes on to the dead letters
    return rows.map((r) => (r.status === 'dead_letter' ? 'failed' : r.status as string)).sort().join() === 'completed,failed,pending_review' ? true : null;
  }, 60_000);

  expect(relay.violations).toEqual([]);
  expect(relay.checked()).toEqual(expect.arrayContaining([
    'push.welcome', 'push.job.start', 'push.job.stop', 'push.job.input',
    'request.heartbeat', 'result.heartbeat', 'request.job.started', 'result.job.started',
    'request.job.progress', 'result.job.progress', 'request.job.finish', 'result.job.finish',
    'request.job.input.ask', 'result.job.input.ask', 'request.job.input.read', 'result.job.input.read',
    'request.items.take', 'result.items.take',
  ]));
});
