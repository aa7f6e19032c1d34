import WebSocket from 'ws';
import { agentProtocolChecker, Children, seedWorkspace, waitFor } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { serveHub, type ServedHub } from './agent-hub-support';

/**
 * The kind of failure a robot reports (docs/agent-protocol.md, `exception` on item outcomes and
 * job.finish), from a robot that writes the protocol by hand: `exception` is refused on anything
 * but status failed and with anything but business or application, each time naming the field,
 * and a refused message stores nothing (not even its valid outcomes). The same robot then reports
 * both kinds correctly and they are stored.
 */
jest.setTimeout(60_000);

let t: ApiTestContext;
let served: ServedHub;
const children = new Children();

beforeAll(async () => {
  t = await createApiTestContext();
  served = await serveHub(t);
  // consumer jobs and triggered jobs reach the robot through a dispatcher
  children.dispatcher(t);
});
afterAll(async () => {
  await children.stopAll();
  await served.close();
  await t.close();
});

type Reply = { result?: any; error?: { code: string; message: string; details?: Array<{ field: string; message: string }> } };

/** A robot driven message by message; what the server sends is read against the protocol document. */
async function rawRobot(machineKey: string) {
  const sock = new WebSocket(`${served.url.replace('http', 'ws')}/api/v1/agent/connect`, { headers: { Authorization: `Bearer ${machineKey}` } });
  const messages: Array<Record<string, any>> = [];
  const offProtocol: string[] = [];
  const protocol = agentProtocolChecker();
  sock.on('message', (d) => {
    const message = JSON.parse(d.toString()) as Record<string, any>;
    try {
      protocol.server(message);
    } catch (err) {
      offProtocol.push((err as Error).message);
    }
    messages.push(message);
  });
  await new Promise((resolve, reject) => { sock.once('open', resolve); sock.once('error', reject); });
  await waitFor('the welcome', async () => messages.some((m) => m.type === 'welcome'));
  let next = 1;
  const request = async (message: Record<string, unknown>): Promise<Reply> => {
    const id = next++;
    protocol.request({ id, ...message } as { id: number; type: string });
    sock.send(JSON.stringify({ id, ...message }));
    return waitFor(`the reply to ${String(message.type)} ${id}`, async () => messages.find((m) => m.type === 'reply' && m.re === id) ?? null);
  };
  const pushed = (type: string, pred: (m: Record<string, any>) => boolean) =>
    waitFor(`a ${type} push`, async () => messages.find((m) => m.type === type && pred(m)) ?? null);
  expect((await request({ type: 'heartbeat', fresh: true, running: [] })).error).toBeUndefined();
  return { sock, request, pushed, offProtocol };
}

/**
 * Each message refused as a validation error whose first detail names `field` (its path inside the
 * message). The root the server puts before it differs today: `message` for the misplaced check
 * (an exception with another status), `body` for what the message's schema refuses (an unknown
 * kind); either names the request's own field.
 */
async function expectRefused(robot: Awaited<ReturnType<typeof rawRobot>>, cases: Array<[Record<string, unknown>, string]>) {
  for (const [message, field] of cases) {
    const { error } = await robot.request(message);
    const [root, ...path] = (error?.details?.[0]?.field ?? '').split(' → ');
    expect([JSON.stringify(message), error?.code, ['message', 'body'].includes(root!), path.join(' → ')])
      .toEqual([JSON.stringify(message), 'VALIDATION_ERROR', true, field]);
  }
}

it('refuses exception on an item outcome that is not failed, or of an unknown kind, naming the field and storing nothing', async () => {
  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process();
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey);
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 1, max_retries: 2 });
  const res = await t.http.post(`/api/v1/queues/by-name/${queue.name}/items/bulk`).set('X-API-Key', ws.key).send({ items: [{ n: 1 }, { n: 2 }] });
  expect(res.status).toBe(200);
  const start = await robot.pushed('job.start', (m) => m.job.queue_id === queue.id);
  const run = { job_id: start.job.id as string, attempt: start.job.attempt as number };
  expect((await robot.request({ type: 'job.started', ...run })).error).toBeUndefined();
  const taken = await robot.request({ type: 'items.take', ...run, outcomes: [], take: 2 });
  const [a, b] = taken.result.items as Array<{ id: string; attempt: number }>;
  const held = async () => t.sql`select id, status, attempt, retry_count, exception_type, error_message from queue_items where queue_id = ${queue.id} order by id`;
  const before = await held();
  expect(before.map((r) => [r.status, r.exception_type])).toEqual([['in_progress', null], ['in_progress', null]]);

  const take = (outcomes: Array<Record<string, unknown>>) => ({ type: 'items.take', ...run, take: 0, outcomes });
  const outcome = (item: { id: string; attempt: number }, fields: Record<string, unknown>) => ({ id: item.id, attempt: item.attempt, ...fields });
  await expectRefused(robot, [
    // a kind of failure on a success, or on a request for review
    [take([outcome(a!, { status: 'completed', result: { ok: true }, exception: 'business' })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'completed', exception: 'application' })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'pending_review', exception: 'business' })]), 'outcomes → 0 → exception'],
    // a kind that does not exist, of the wrong type, or null
    [take([outcome(a!, { status: 'failed', error_message: 'x', exception: 'fatal' })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'failed', error_message: 'x', exception: 'Business' })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'failed', error_message: 'x', exception: 1 })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'failed', error_message: 'x', exception: null })]), 'outcomes → 0 → exception'],
    [take([outcome(a!, { status: 'failed', error_message: 'x', exception: ['business'] })]), 'outcomes → 0 → exception'],
    // a valid outcome next to a hostile one: the whole message is refused, the valid one too
    [take([outcome(a!, { status: 'failed', error_message: 'pagada', exception: 'business' }), outcome(b!, { status: 'completed', exception: 'business' })]),
      'outcomes → 1 → exception'],
    [take([outcome(a!, { status: 'completed' }), outcome(b!, { status: 'failed', exception: 'fatal' })]), 'outcomes → 1 → exception'],
  ]);
  // nothing stored: both items still held by this run, as they were
  expect(await held()).toEqual(before);
  expect(await t.sql`select type from events where tenant_id = ${ws.tenant.id} and type in ('item.failed', 'item.completed', 'item.dead_letter')`).toHaveLength(0);

  // the same robot, speaking correctly: each kind is stored and its retry policy applied
  const settled = await robot.request(take([
    outcome(a!, { status: 'failed', error_message: 'La factura ya está pagada', exception: 'business' }),
    outcome(b!, { status: 'failed', error_message: 'El portal no responde', exception: 'application' }),
  ]));
  expect(settled.error).toBeUndefined();
  expect(settled.result.settled).toEqual(expect.arrayContaining([{ id: a!.id, status: 'failed' }, { id: b!.id, status: 'failed' }]));
  const [ra] = await t.sql`select status, retry_count, exception_type, error_message from queue_items where id = ${a!.id}`;
  expect(ra).toEqual({ status: 'failed', retry_count: 0, exception_type: 'business', error_message: 'La factura ya está pagada' });
  // the application failure goes back to new for its retry (the queue allows two)
  await waitFor('the application failure retried', async () => {
    const [r] = await t.sql`select status, retry_count, exception_type from queue_items where id = ${b!.id}`;
    return r!.status === 'new' && r!.retry_count === 1 && r!.exception_type === 'application';
  });
  expect(robot.offProtocol).toEqual([]);
  robot.sock.close();
});

it('refuses exception on job.finish that is not failed, or of an unknown kind, naming the field and leaving the job running', async () => {
  const ws = await seedWorkspace(t.sql);
  const proc = await ws.process({ auto_retry: true, max_retries: 2, retry_delay_seconds: 0 });
  const machine = await ws.machine();
  const robot = await rawRobot(machine.machineKey);
  const triggered = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: proc.id, machine_id: machine.row.id });
  expect(triggered.status).toBe(201);
  const jobId = triggered.body.data.id as string;
  const start = await robot.pushed('job.start', (m) => m.job.id === jobId);
  const run = { job_id: jobId, attempt: start.job.attempt as number };
  expect((await robot.request({ type: 'job.started', ...run })).error).toBeUndefined();

  const finish = (fields: Record<string, unknown>) => ({ type: 'job.finish', ...run, ...fields });
  await expectRefused(robot, [
    [finish({ status: 'completed', output_data: { ok: true }, exception: 'business' }), 'exception'],
    [finish({ status: 'completed', exception: 'application' }), 'exception'],
    [finish({ status: 'stopped', exception: 'business' }), 'exception'],
    [finish({ status: 'timed_out', exception: 'application' }), 'exception'],
    [finish({ status: 'failed', error_message: 'x', exception: 'fatal' }), 'exception'],
    [finish({ status: 'failed', error_message: 'x', exception: 1 }), 'exception'],
    [finish({ status: 'failed', error_message: 'x', exception: null }), 'exception'],
    [finish({ status: 'failed', error_message: 'x', exception: { kind: 'business' } }), 'exception'],
  ]);
  // nothing stored: the job still runs, with no result and no kind of failure
  const [still] = await t.sql`select status, output_data, error_message, exception_type, finished_at from jobs where id = ${jobId}`;
  expect(still).toEqual({ status: 'running', output_data: null, error_message: null, exception_type: null, finished_at: null });

  // a business failure told correctly is stored as one, and its process does not retry it
  const done = await robot.request(finish({ status: 'failed', error_message: 'Cliente inexistente', exception: 'business' }));
  expect(done.result).toEqual({ status: 'failed' });
  const [ended] = await t.sql`select status, error_message, exception_type from jobs where id = ${jobId}`;
  expect(ended).toEqual({ status: 'failed', error_message: 'Cliente inexistente', exception_type: 'business' });
  // follow-ups are made in the transaction that ended it
  expect(await t.sql`select id from jobs where parent_job_id = ${jobId}`).toHaveLength(0);
  expect(robot.offProtocol).toEqual([]);
  robot.sock.close();
});
