import {
  assertNoItemProcessedTwiceAtOnce, freePort, itemStatusCounts, readJournal, seedWorkspace, sleep, startTcpProxy, tempFile, testSuite, waitFor,
  waitForHttp, type Child, type TestContext,
} from '@svc/testing';

/**
 * Faults of the robots' link to the platform (docs/decisions/agent-protocol.md), with the API,
 * the dispatcher and the robots (agent-sim on the machine protocol) as separate processes:
 * the API process holding the robots killed and started again, one of two replicas killed for
 * good, and a robot cut off for longer than its lease.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(180_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;

beforeAll(() => ({ ctx } = suite));

/**
 * The shipped silence before a machine is offline (30 s): the restart case measures the platform
 * coming back, and on a loaded host an API process's start plus the robots' reconnect backoff can
 * outlast the tests' quick 10 s, which would fail runs for the platform's own outage.
 */
const SHIPPED_OFFLINE = { MACHINE_OFFLINE_AFTER_SECONDS: '30' };
/** The other cases' dispatcher, with the tests' quick engine settings (started once). */
let quick: Child | null = null;
const quickDispatcher = () => (quick ??= children.dispatcher(ctx));

async function consumerLoad(items: number) {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2 });
  const machines = [await ws.machine({ slots: 2 }), await ws.machine({ slots: 2 })];
  const add = async (base: string, n: number, from: number) => {
    const res = await fetch(`${base}/api/v1/queues/by-name/${queue.name}/items/bulk`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key },
      body: JSON.stringify({ items: Array.from({ length: n }, (_, i) => ({ n: from + i })) }),
    });
    expect(res.status).toBe(200);
  };
  const allCompleted = () => waitFor('every item completed', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) === items ? c : null;
  }, 120_000);
  return { ws, proc, queue, machines, add, allCompleted };
}

function checkJournal(journal: string, items: number): void {
  const entries = readJournal(journal);
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(items);
  // a run outlives its connection: no job started twice
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  expect([...starts.values()].filter((n) => n > 1)).toEqual([]);
}

it('the API process holding the robots is SIGKILLed and started again 3 s later: they reconnect, nothing is lost or run twice at once', async () => {
  const dispatcher = children.dispatcher(ctx, SHIPPED_OFFLINE);
  const load = await consumerLoad(400);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let api = children.api(ctx, port, SHIPPED_OFFLINE);
  await waitForHttp(`${base}/health`);
  const journal = tempFile('api-kill.jsonl');
  await children.agent(ctx, [...load.machines.flatMap((m) => ['--machine-key', m.machineKey]), '--item-duration', '10-20ms', '--journal', journal], {}, { url: base });
  await load.add(base, 400, 0);
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, load.queue.id)).completed ?? 0) >= 40, 60_000);

  expect(await api.stop('SIGKILL')).toBe(-1);
  await sleep(3_000);
  api = children.api(ctx, port, SHIPPED_OFFLINE);
  await waitForHttp(`${base}/health`);
  await load.allCompleted();
  await waitFor('every job final', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where tenant_id = ${load.ws.tenant.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  // the consumers went on through the outage: none of their jobs failed for it
  const failed = await ctx.sql`select error_message from jobs where tenant_id = ${load.ws.tenant.id} and status = 'failed'`;
  expect(failed).toEqual([]);
  checkJournal(journal, 400);
  await dispatcher.stop();
});

it('one of two API replicas is killed for good: its robots move to the other (SVC_URL names both)', async () => {
  quickDispatcher();
  const load = await consumerLoad(300);
  const [pa, pb] = [await freePort(), await freePort()];
  const [a, b] = [`http://127.0.0.1:${pa}`, `http://127.0.0.1:${pb}`];
  const apiA = children.api(ctx, pa);
  children.api(ctx, pb);
  await Promise.all([waitForHttp(`${a}/health`), waitForHttp(`${b}/health`)]);
  const journal = tempFile('replica-kill.jsonl');
  // both robots try A first
  await children.agent(ctx, [...load.machines.flatMap((m) => ['--machine-key', m.machineKey]), '--item-duration', '10-20ms', '--journal', journal], {}, { url: `${a},${b}` });
  await load.add(b, 300, 0);
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, load.queue.id)).completed ?? 0) >= 40, 60_000);
  await apiA.stop('SIGKILL');
  await load.allCompleted();
  checkJournal(journal, 300);
});

it('a robot cut off longer than its lease loses its job to a retry, and its late writes change nothing', async () => {
  quickDispatcher();
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process({ max_retries: 1, auto_retry: true, retry_delay_seconds: 0 });
  const cutOff = await ws.machine();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  children.api(ctx, port);
  await waitForHttp(`${base}/health`);
  const proxy = await startTcpProxy(port);
  try {
    const journal = tempFile('cut-off.jsonl');
    await children.agent(ctx, ['--machine-key', cutOff.machineKey, '--duration', '20s', '--progress-steps', '40', '--journal', journal], {}, { url: proxy.url });
    const res = await fetch(`${base}/api/v1/jobs/trigger`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key },
      body: JSON.stringify({ process_id: proc.id, machine_id: cutOff.row.id }),
    });
    expect(res.status).toBe(201);
    const jobId = ((await res.json()) as { data: { id: string } }).data.id;
    // running on the robot (its start reached it), not only started by the platform
    await waitFor('the robot running the job', async () => readJournal(journal).some((e) => e.event === 'job-start' && e.job_id === jobId), 30_000);
    await waitFor('its first progress', async () => (await ctx.sql`select progress_percent from jobs where id = ${jobId}`)[0]!.progress_percent !== null, 30_000);

    proxy.cut();
    // the platform declares the run lost once the robot's silence outlasts its lease
    const lost = await waitFor('the job given up', async () => {
      const [j] = await ctx.sql`select status, error_message, attempt, finished_at from jobs where id = ${jobId}`;
      return j!.status === 'failed' ? j! : null;
    }, 60_000);
    const retry = await waitFor('its retry created', async () => (await ctx.sql`select id from jobs where parent_job_id = ${jobId}`)[0] ?? null, 30_000);

    proxy.restore();
    // back: its first heartbeat finds the run no longer its own; the retry runs on it
    await waitFor('the robot dropped the lost run', async () =>
      readJournal(journal).some((e) => e.event === 'job-end' && e.job_id === jobId && e.status === 'refused'), 60_000);
    const [after] = await ctx.sql`select status, error_message, attempt, finished_at from jobs where id = ${jobId}`;
    expect(after).toEqual(lost);
    await waitFor('the retry running on the robot', async () =>
      ['running', 'completed'].includes((await ctx.sql`select status from jobs where id = ${retry.id as string}`)[0]!.status as string), 60_000);
  } finally {
    await proxy.close();
  }
});
