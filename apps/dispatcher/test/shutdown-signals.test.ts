import { createTestContext, type TestContext } from '@svc/core/testing';
import { Children, freePort, seedWorkspace, waitFor, type Child } from './support';

/**
 * The three long-running processes stop on SIGTERM/SIGINT through core's onShutdownSignals: they
 * drain, log it and exit 0; the agent's drain marks its machine offline at once.
 */
jest.setTimeout(60_000);
let ctx: TestContext;
const children = new Children();
const INFO = { LOG_LEVEL: 'info' };

beforeAll(async () => {
  ctx = await createTestContext();
});

afterAll(async () => {
  await children.stopAll();
  await ctx?.close();
});

/** Waits for the log line a process writes right before it installs its signal handlers. */
function ready(child: Child, line: string) {
  return waitFor(`${child.name} ready`, async () => child.output().includes(line));
}

async function drainedBy(child: Child, signal: NodeJS.Signals) {
  const code = await child.stop(signal);
  expect({ process: child.name, code }).toEqual({ process: child.name, code: 0 });
  expect(child.output()).toMatch(new RegExp(`"message":"draining"[^\\n]*"signal":"${signal}"`));
  expect(child.output()).toContain('"message":"stopped"');
}

describe('a signalled process', () => {
  it('the dispatcher drains on SIGTERM and exits 0', async () => {
    const d = children.dispatcher(ctx, INFO);
    await ready(d, 'dispatcher started');
    await drainedBy(d, 'SIGTERM');
  });

  it('agent-sim drains on SIGINT, marks its machine offline and exits 0', async () => {
    const ws = await seedWorkspace(ctx.sql);
    const machine = await ws.machine();
    const a = children.agent(ctx, ['--machine-key', machine.machineKey], INFO);
    await ready(a, 'agent-sim running');
    await drainedBy(a, 'SIGINT');
    const [row] = await ctx.sql`select status from machines where id = ${machine.row.id}`;
    expect(row!.status).toBe('offline');
  });

  it('the API drains on SIGTERM and exits 0', async () => {
    const api = children.api(ctx, await freePort(), INFO);
    await ready(api, 'api listening');
    await drainedBy(api, 'SIGTERM');
  });
});
