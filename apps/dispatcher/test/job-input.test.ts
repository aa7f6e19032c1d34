import { writeFileSync } from 'node:fs';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { readJournal, seedWorkspace, tempFile, waitFor } from '@svc/testing';

/**
 * Human input end to end (docs/decisions/human-input.md): the in-process API, a real dispatcher
 * and a real agent-sim process. A robot asks (per process in the agent's config, or forced by a
 * job's `_sim.input`), the job waits in `waiting_input`, an admin answers through the API and
 * the robot goes on with the value; stop works while waiting; the timeout is paused meanwhile.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the status shows
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let machineId: string;
let journal: string;
let asking: { id: string; name: string };
let quiet: { id: string };
let short: { id: string };

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
  asking = (await ws.process()) as { id: string; name: string };
  quiet = (await ws.process()) as { id: string };
  // 8 s: room on a loaded host both to ask before the timeout and to finish in the time left after
  // the answer (2 s was sometimes spent before the robot even asked)
  short = (await ws.process({ timeout_seconds: 8 })) as { id: string };
  const machine = await ws.machine({ slots: 3 });
  machineId = machine.row.id as string;
  journal = tempFile('journal.jsonl');
  const config = tempFile('agent.json');
  // the per-process setting: every job of `asking` asks; the others only when a job says so
  writeFileSync(config, JSON.stringify({ processes: { [asking.name]: { input_rate: 1, input_prompt: '¿Aprobar el pago?', input_options: { choices: ['aprobar', 'rechazar'] } } } }));
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--config', config, '--duration', '400ms', '--journal', journal]);
});

const admin = () => ({ Authorization: `Bearer ${ws.adminToken}` });

/** Well-formed calls whose answers the tests read: through the typed client (@svc/client), as an integrator and the console make them. */
const integrator = () => apiClient(ctx, { apiKey: ws.key });
const console_ = () => apiClient(ctx, { token: ws.adminToken });

async function trigger(processId: string, inputData: Record<string, unknown> | null = null): Promise<string> {
  return (await integrator().call('triggerJob', { body: { process_id: processId, machine_id: machineId, input_data: inputData } })).id;
}

const readJob = (id: string) => console_().call('getWorkspaceJob', { path: { job_id: id } });
const answer = (id: string, value: unknown) => console_().call('answerJobInput', { path: { job_id: id }, body: { value } });
const outputOf = (job: { output_data: unknown }) => job.output_data as Record<string, unknown>;
const statusIs = (id: string, status: string) => waitFor(`job ${id} ${status}`, async () => {
  const job = await readJob(id);
  return job.status === status ? job : null;
}, 60_000, 200);

it('a robot asks, an admin answers through the API, and the job resumes and completes with the value', async () => {
  const id = await trigger(asking.id);
  const waiting = await statusIs(id, 'waiting_input');
  expect(waiting).toMatchObject({ pending_input_prompt: '¿Aprobar el pago?', pending_input_options: { choices: ['aprobar', 'rechazar'] }, progress_percent: 50 });

  const wrong = await ctx.http.post(`/api/v1/settings/jobs/${id}/input`).set(admin()).send({ value: 'tal vez' });
  expect(wrong.status).toBe(422);
  const answered = await answer(id, 'rechazar');
  expect([answered.status, answered.pending_input_prompt]).toEqual(['running', null]);

  const done = await statusIs(id, 'completed');
  expect(done.output_data).toMatchObject({ input_value: 'rechazar', simulated: true });
  expect(done.logs).toContain('Respuesta recibida: "rechazar"');
  const events = readJournal(journal).filter((e) => e.job_id === id).map((e) => e.event);
  expect(events).toEqual(['job-start', 'input-asked', 'input-answered', 'job-end']);
});

it('a job whose input_data asks for a schema answer gets the value the schema accepts', async () => {
  const schema = { type: 'object', required: ['amount'], properties: { amount: { type: 'number', minimum: 0 } } };
  const id = await trigger(quiet.id, { _sim: { input: { prompt: 'Importe a pagar', options: { schema } } } });
  await statusIs(id, 'waiting_input');
  expect((await ctx.http.post(`/api/v1/settings/jobs/${id}/input`).set(admin()).send({ value: { amount: -5 } })).status).toBe(422);
  expect((await answer(id, { amount: 42.5 })).status).toBe('running');
  const done = await statusIs(id, 'completed');
  expect(outputOf(done).input_value).toEqual({ amount: 42.5 });
});

it('stop ends a waiting job `stopped` at once, and its robot stops waiting', async () => {
  const id = await trigger(quiet.id, { _sim: { input: true } });
  await statusIs(id, 'waiting_input');
  expect((await console_().call('stopWorkspaceJob', { path: { job_id: id } })).status).toBe('stopped');
  // the robot stopped waiting and ended its run without an answer: as `stopped` when the stop
  // message came first, as `refused` (the job was no longer its own) when its lease renewal did
  const end = await waitFor('the robot ended its run', async () => readJournal(journal).find((e) => e.job_id === id && e.event === 'job-end'), 60_000);
  expect(['stopped', 'refused']).toContain(end.status);
  expect(readJournal(journal).some((e) => e.job_id === id && e.event === 'input-answered')).toBe(false);
  const job = await readJob(id);
  expect(job).toMatchObject({ status: 'stopped', pending_input_prompt: null, pending_input_options: null });
  expect(job.logs === null || !job.logs.includes('Terminado correctamente')).toBe(true);
});

it('a job waiting longer than its timeout is not timed out, and completes once answered', async () => {
  // timeout_seconds 8: it asks after about 200 ms and then waits past the 8 s
  const id = await trigger(short.id, { _sim: { input: true } });
  await statusIs(id, 'waiting_input');
  // the deadline it had when it started passes (database clock), then a sweep that began after
  // that ends: had the wait not paused the timeout, that sweep would have timed the job out
  await waitFor('the 8 s since the job started to pass', async () =>
    (await ctx.sql`select started_at + interval '8 seconds' < now() as past from jobs where id = ${id}`)[0]!.past === true, 30_000, 200);
  await suite.dispatcher.passBegunAfter('sweep');
  const still = await readJob(id);
  expect([still.status, still.error_message]).toEqual(['waiting_input', null]);
  expect((await answer(id, 'continuar')).status).toBe('running');
  const done = await statusIs(id, 'completed');
  expect(outputOf(done).input_value).toBe('continuar');
});
