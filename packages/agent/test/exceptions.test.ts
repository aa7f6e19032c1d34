import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { BusinessError, connect, endJob, isBusinessError, type ConnectOptions, type Robot } from '@svc/agent';
import { waitFor } from '@svc/testing';

/**
 * What a handler throws names the kind of failure the robot reports (docs/agent-protocol.md,
 * "Kinds of failure"): a BusinessError (or an error named so: a bundled copy of the package) is
 * `exception: 'business'`, anything else `application`, sent explicitly. A scripted platform that
 * records the robot's messages, so that the exact outcomes and ends can be read.
 */
const JOB = { attempt: 1, process_id: 'p1', process_name: 'proceso', input_data: null, queue_id: null, timeout_seconds: 60, retry_count: 0, timeout_at: null };

async function scripted(jobs: Array<Record<string, unknown>>, items: Array<{ id: string; data: Record<string, unknown> }>, handlers: Pick<ConnectOptions, 'onJob' | 'onItem'>) {
  const sent: Array<Record<string, unknown>> = [];
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  let next = 0;
  server.on('connection', (ws: WebSocket) => {
    ws.send(JSON.stringify({ type: 'welcome', machine: { id: 'm1', name: 'robot-01', slots: 1 }, heartbeat_ms: 200, lease_seconds: 30, ping_ms: 15_000 }));
    const answer = (msg: { id: number }, result: unknown) => ws.send(JSON.stringify({ type: 'reply', re: msg.id, result }));
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as { id: number; type: string; running?: Array<{ job_id: string }>; outcomes?: Array<{ id: string; status: string }>; take?: number; status?: string };
      sent.push(msg);
      if (msg.type === 'heartbeat') {
        answer(msg, { slots: 1, is_active: true, runs: (msg.running ?? []).map((r) => ({ job_id: r.job_id, owned: true, stop_requested: false })) });
        if (sent.filter((m) => m.type === 'heartbeat').length === 1) {
          for (const job of jobs) ws.send(JSON.stringify({ type: 'job.start', job: { ...JOB, ...job, started_at: new Date().toISOString() } }));
        }
      } else if (msg.type === 'job.started') answer(msg, { stop_requested: false });
      else if (msg.type === 'items.take') {
        const taken = items.slice(next, next + (msg.take ?? 0)).map((i) => ({ id: i.id, attempt: 1, reference: null, data: i.data, retry_count: 0 }));
        next += taken.length;
        answer(msg, { settled: (msg.outcomes ?? []).map((o) => ({ id: o.id, status: o.status })), items: taken, released_unknown: 0 });
      } else if (msg.type === 'jobs.waiting') answer(msg, { waiting: false });
      else if (msg.type === 'job.finish') answer(msg, { status: msg.status });
      else answer(msg, {});
    });
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const ended: string[] = [];
  let robot: Robot | null = null;
  try {
    robot = connect({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      machineKey: 'svc_mk_test',
      ...handlers,
      onJobEnd: (job) => void ended.push(job.id),
    });
    await robot.ready;
    await waitFor('every run to end', async () => ended.length === jobs.length);
  } finally {
    await robot?.close(100);
    for (const c of server.clients) c.terminate();
    await new Promise((resolve) => server.close(resolve));
  }
  const finishes = Object.fromEntries(sent.filter((m) => m.type === 'job.finish').map((m) => [m.job_id as string, m]));
  const outcomes = sent.filter((m) => m.type === 'items.take').flatMap((m) => m.outcomes as Array<Record<string, unknown>>);
  return { finishes, outcomes };
}

/** An error of a second copy of the package, as a robot's bundler may hold: not this BusinessError. */
class BundledBusinessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BusinessError';
  }
}

describe('the kind of a failure', () => {
  it('is business for a BusinessError thrown by an item handler (or one named so), application for any other error', async () => {
    const { outcomes } = await scripted([{ id: 'j1', queue_id: 'q1' }], [
      { id: 'A', data: { throw: 'business' } },
      { id: 'B', data: { throw: 'plain' } },
      { id: 'C', data: { throw: 'bundled' } },
      { id: 'D', data: {} },
    ], {
      onJob: async () => {
        throw new Error('a consumer job goes to onItem');
      },
      onItem: async (item) => {
        if (item.data.throw === 'business') throw new BusinessError('La factura ya está pagada');
        if (item.data.throw === 'plain') throw new Error('El portal no responde');
        if (item.data.throw === 'bundled') throw new BundledBusinessError('El cliente no existe');
        return { ok: true };
      },
    });
    expect(outcomes).toEqual([
      { id: 'A', attempt: 1, status: 'failed', error_message: 'La factura ya está pagada', exception: 'business' },
      { id: 'B', attempt: 1, status: 'failed', error_message: 'El portal no responde', exception: 'application' },
      { id: 'C', attempt: 1, status: 'failed', error_message: 'El cliente no existe', exception: 'business' },
      { id: 'D', attempt: 1, status: 'completed', result: { ok: true } },
    ]);
  });

  it('is business for a BusinessError thrown by a job handler (or one named so), application for any other error; endJob can name it', async () => {
    const { finishes } = await scripted(['business', 'plain', 'bundled', 'ended', 'ended-plain', 'completed'].map((kind) => ({ id: kind, input_data: { kind } })), [], {
      onJob: async ({ job }) => {
        const kind = job.input?.kind;
        if (kind === 'business') throw new BusinessError('El cliente no existe', { cause: new Error('404') });
        if (kind === 'plain') throw new Error('El portal no responde');
        if (kind === 'bundled') throw new BundledBusinessError('La factura ya está pagada');
        if (kind === 'ended') return endJob({ status: 'failed', error: 'Datos incompletos', exception: 'business' });
        if (kind === 'ended-plain') return endJob({ status: 'failed', error: 'Sin conexión' });
        // a kind with a success means nothing: it is not sent (the platform would refuse the end)
        return endJob({ status: 'completed', output: { ok: true }, exception: 'business' });
      },
    });
    const kinds = Object.fromEntries(Object.entries(finishes).map(([id, m]) => [id, { status: m.status, error_message: m.error_message, exception: m.exception }]));
    expect(kinds).toEqual({
      business: { status: 'failed', error_message: 'El cliente no existe', exception: 'business' },
      plain: { status: 'failed', error_message: 'El portal no responde', exception: 'application' },
      bundled: { status: 'failed', error_message: 'La factura ya está pagada', exception: 'business' },
      ended: { status: 'failed', error_message: 'Datos incompletos', exception: 'business' },
      'ended-plain': { status: 'failed', error_message: 'Sin conexión', exception: 'application' },
      completed: { status: 'completed', error_message: null, exception: undefined },
    });
    expect('exception' in finishes.completed!).toBe(false);
  });

  it('BusinessError is an Error named BusinessError, with its cause; isBusinessError knows it by class or by name', () => {
    const cause = new Error('404');
    const err = new BusinessError('El cliente no existe', { cause });
    expect(err).toBeInstanceOf(Error);
    expect([err.name, err.message, err.cause]).toEqual(['BusinessError', 'El cliente no existe', cause]);
    class InvoicePaid extends BusinessError {}
    expect([isBusinessError(err), isBusinessError(new InvoicePaid('x')), isBusinessError(new BundledBusinessError('x')), isBusinessError({ name: 'BusinessError' })]).toEqual([true, true, true, true]);
    expect([isBusinessError(new Error('x')), isBusinessError('BusinessError'), isBusinessError(null), isBusinessError(undefined)]).toEqual([false, false, false, false]);
  });
});
