import { createBullDispatch } from '@svc/core';
import { freePort, seedJob, seedWorkspace, testSuite, waitFor, type Child, type TestContext } from '@svc/testing';

/**
 * The three long-running processes stop on SIGTERM/SIGINT through core's onShutdownSignals: they
 * drain, log it and exit 0; the agent's drain marks its machine offline at once.
 */
// liveness bounds for a loaded host (each case starts three processes one after the other)
jest.setTimeout(120_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;
const INFO = { LOG_LEVEL: 'info' };

beforeAll(() => ({ ctx } = suite));

/**
 * Resolves the moment a process writes its readiness line, so the signal that follows comes as
 * early as a supervisor's could: the line must mean "signal handlers installed and connections
 * open" (a signal right after it once killed the process, or hit a BullMQ worker whose connection
 * was still opening and crashed the drain).
 */
function ready(child: Child, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!child.output().includes(line)) return;
      child.proc.stdout!.off('data', check);
      resolve();
    };
    child.proc.stdout!.on('data', check);
    void child.exited.then((code) => reject(new Error(`${child.name} exited (${code}) before "${line}":\n${child.output()}`)));
    check();
  });
}

/** each case a few times: the race it guards against is a matter of milliseconds */
const TIMES = 3;

async function drainedBy(child: Child, signal: NodeJS.Signals) {
  const code = await child.stop(signal);
  expect({ process: child.name, code }).toEqual({ process: child.name, code: 0 });
  const lines = child.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { message?: string; signal?: string });
  expect(lines).toContainEqual(expect.objectContaining({ message: 'draining', signal }));
  expect(lines).toContainEqual(expect.objectContaining({ message: 'stopped' }));
}

describe('a signalled process', () => {
  it('the dispatcher drains on SIGTERM and exits 0', async () => {
    for (let i = 0; i < TIMES; i++) {
      const d = children.dispatcher(ctx, INFO);
      await ready(d, 'dispatcher started');
      await drainedBy(d, 'SIGTERM');
    }
  });

  it('agent-sim drains on SIGINT, marks its machine offline and exits 0', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const machine = await ws.machine();
    for (let i = 0; i < TIMES; i++) {
      const a = await children.agent(ctx, ['--machine-key', machine.machineKey], INFO);
      await ready(a, 'agent-sim running');
      await drainedBy(a, 'SIGINT');
      const [row] = await ctx.sql`select status from machines where id = ${machine.row.id}`;
      // what the robot and the API said, should the goodbye be missing
      expect({ status: row!.status, ...(row!.status !== 'offline' ? { output: children.tails(4000) } : {}) }).toEqual({ status: 'offline' });
    }
  });

  it('agent-sim lets its running job finish on SIGINT, then leaves its machine offline', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const machine = await ws.machine({ slots: 1 });
    const proc = await ws.process();
    const bull = createBullDispatch({ redis: ctx.redisTarget, prefix: ctx.redisPrefix });
    try {
      for (let i = 0; i < TIMES; i++) {
        const a = await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '300ms'], INFO);
        await ready(a, 'agent-sim running');
        const job = await seedJob(ctx.sql, ws.tenant.id, { process_id: proc.id, machine_id: machine.row.id });
        await bull.jobsCreated([{ id: job.id, tenant_id: ws.tenant.id, machine_id: machine.row.id, priority: 3 }]);
        // the robot holds it (a start it had not yet heard of when signalled would go back to pending)
        await waitFor('the robot to acknowledge the run', async () => (await ctx.sql`select acknowledged_at from jobs where id = ${job.id}`)[0]!.acknowledged_at);
        await drainedBy(a, 'SIGINT');
        // its end frees the slot (a load report) just before the goodbye: the goodbye has the last word
        const [row] = await ctx.sql`select m.status, j.status as job_status from machines m, jobs j where m.id = ${machine.row.id} and j.id = ${job.id}`;
        const ok = row!.status === 'offline' && row!.job_status === 'completed';
        expect({ ...row, ...(ok ? {} : { output: children.tails(4000) }) }).toEqual({ status: 'offline', job_status: 'completed' });
      }
    } finally {
      await bull.close();
    }
  });

  it('the API drains on SIGTERM and exits 0', async () => {
    for (let i = 0; i < TIMES; i++) {
      const api = children.api(ctx, await freePort(), INFO);
      await ready(api, 'api listening');
      await drainedBy(api, 'SIGTERM');
    }
  });

  it('the API drains on SIGTERM while an event stream is open, ending the stream', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const port = await freePort();
    const api = children.api(ctx, port, INFO);
    await ready(api, 'api listening');
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/settings/events/stream`, { headers: { Authorization: `Bearer ${ws.adminToken}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await drainedBy(api, 'SIGTERM');
    // the stream ended (the client would reconnect with its Last-Event-ID)
    const rest = await waitFor('the stream to end', async () => ((await reader.read().catch(() => ({ done: true }))).done ? true : null));
    expect(rest).toBe(true);
  });
});
