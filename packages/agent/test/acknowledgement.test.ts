import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { connect, type Robot } from '@svc/agent';
import { waitFor } from '@svc/testing';

/**
 * A run starts only once its job.started is accepted: refused for any reason (here an error of the
 * platform's own), it never starts and nothing is finished for it, since the platform may hand the
 * job to another robot (docs/agent-protocol.md, "Ownership"). A scripted platform, to answer as
 * the real one only does in a fault.
 */
it('a run whose acknowledgement is refused with an error never starts and is never finished', async () => {
  const sent: Array<Record<string, unknown>> = [];
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  server.on('connection', (ws: WebSocket) => {
    ws.send(JSON.stringify({ type: 'welcome', machine: { id: 'm1', name: 'robot-01', slots: 1 }, heartbeat_ms: 200, lease_seconds: 30, ping_ms: 15_000 }));
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as { id: number; type: string; running?: Array<{ job_id: string }> };
      sent.push(msg);
      if (msg.type === 'heartbeat') {
        ws.send(JSON.stringify({ type: 'reply', re: msg.id, result: { slots: 1, is_active: true, runs: (msg.running ?? []).map((r) => ({ job_id: r.job_id, owned: true, stop_requested: false })) } }));
        if (sent.filter((m) => m.type === 'heartbeat').length === 1) {
          ws.send(JSON.stringify({ type: 'job.start', job: { id: 'j1', attempt: 1, process_id: 'p1', process_name: 'proceso', input_data: null, queue_id: null, timeout_seconds: 60, retry_count: 0, started_at: new Date().toISOString(), timeout_at: null } }));
        }
      } else if (msg.type === 'job.started') {
        ws.send(JSON.stringify({ type: 'reply', re: msg.id, error: { code: 'INTERNAL_ERROR', message: 'Error interno' } }));
      } else {
        ws.send(JSON.stringify({ type: 'reply', re: msg.id, result: {} }));
      }
    });
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const ran: string[] = [];
  const ends: Array<[string, string | null, boolean | undefined]> = [];
  let robot: Robot | null = null;
  try {
    robot = connect({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      machineKey: 'svc_mk_test',
      onJob: async (ctx) => void ran.push(ctx.job.id),
      onJobEnd: (job, status, lost) => void ends.push([job.id, status, lost]),
    });
    await robot.ready;
    await waitFor('the run to end', async () => ends.length > 0);
    expect(ends).toEqual([['j1', null, false]]);
    expect(ran).toEqual([]);
    expect(sent.filter((m) => m.type === 'job.finish')).toEqual([]);
  } finally {
    await robot?.close(100);
    for (const c of server.clients) c.terminate();
    await new Promise((resolve) => server.close(resolve));
  }
});
