import { noopDispatch, type DispatchPort, type Queryable } from '@svc/core/internals';
import { seedApiKey, seedMachine, seedProcess, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/**
 * Shared set-up of the job endpoint tests. The field lists are copied from the public JobResponse by
 * hand on purpose: they check the schemas and serializers instead of being derived from them.
 */
export const CONTRACT_JOB_FIELDS = [
  'id', 'tenant_id', 'process_id', 'machine_id', 'status', 'priority', 'input_data', 'output_data', 'logs',
  'error_message', 'exception_type', 'started_at', 'finished_at', 'retry_count', 'stop_requested', 'logs_archived', 'logs_archive_key',
  'is_attended', 'pending_input_prompt', 'pending_input_options', 'progress_percent', 'progress_message', 'created_at',
  'updated_at', 'process_name', 'machine_name', 'resource_metrics', 'trigger_id', 'schedule_id',
].sort();

export const CONTRACT_STOP_FIELDS = [
  'id', 'tenant_id', 'process_id', 'machine_id', 'status', 'priority', 'retry_count', 'stop_requested', 'logs_archived',
  'is_attended', 'created_at', 'updated_at', 'resource_metrics',
].sort();

export const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A DispatchPort that records the nudges the API sends. */
export function recordingDispatch() {
  const created: Array<{ id: string; tenant_id: string; machine_id: string; priority: number }> = [];
  const stops: Array<{ id: string; machine_id: string }> = [];
  const port: DispatchPort = {
    ...noopDispatch,
    jobsCreated: async (jobs) => {
      created.push(...jobs.map((j) => ({ id: j.id, tenant_id: j.tenant_id, machine_id: j.machine_id, priority: j.priority })));
    },
    jobStopRequested: async (job) => {
      stops.push({ id: job.id, machine_id: job.machine_id });
    },
  };
  return { port, created, stops };
}

export interface Workspace {
  tenant: Awaited<ReturnType<typeof seedTenant>>;
  key: string;
  keyId: string;
  process: Record<string, any>;
  machine: Record<string, any>;
}

/** A tenant with a key (all scopes unless told), an active process and an online machine. */
export async function seedWorkspace(
  sql: Queryable,
  opts: { tenant?: Parameters<typeof seedTenant>[1]; scopes?: string[]; process?: Record<string, unknown>; machine?: Record<string, unknown> } = {},
): Promise<Workspace> {
  const tenant = await seedTenant(sql, opts.tenant);
  const k = await seedApiKey(sql, tenant.id, opts.scopes ? { scopes: opts.scopes } : {});
  const process = await seedProcess(sql, tenant.id, opts.process);
  const { row: machine } = await seedMachine(sql, tenant.id, opts.machine);
  return { tenant, key: k.key, keyId: k.row.id, process, machine };
}

/** The JobResponse of a job just created for `w`'s process and machine (pending, nothing run yet). */
export function expectedNewJob(w: Workspace, fields: { priority: number; input_data: unknown }) {
  return {
    id: expect.stringMatching(UUID_RE),
    tenant_id: w.tenant.id,
    process_id: w.process.id,
    machine_id: w.machine.id,
    status: 'pending',
    priority: fields.priority,
    input_data: fields.input_data,
    output_data: null,
    logs: null,
    error_message: null,
    exception_type: null,
    started_at: null,
    finished_at: null,
    retry_count: 0,
    stop_requested: false,
    logs_archived: false,
    logs_archive_key: null,
    is_attended: false,
    pending_input_prompt: null,
    pending_input_options: null,
    progress_percent: null,
    progress_message: null,
    created_at: expect.stringMatching(ISO_RE),
    updated_at: expect.stringMatching(ISO_RE),
    process_name: w.process.name,
    machine_name: w.machine.name,
    resource_metrics: null,
    trigger_id: null,
    schedule_id: null,
  };
}

export async function jobCount(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from jobs where tenant_id = ${tenantId}`;
  return row!.n;
}

export async function quotaUsed(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select quota_used as n from tenants where id = ${tenantId}`;
  return row!.n;
}

/**
 * The set-up of a job route's test file: one test context whose dispatch port records what the
 * API asks of the engine, and a fresh workspace for each test.
 */
export function jobRouteSuite() {
  const suite = {} as { t: ApiTestContext; w: Workspace; rec: ReturnType<typeof recordingDispatch> };
  beforeAll(async () => {
    suite.t = await createApiTestContext();
    suite.rec = recordingDispatch();
    suite.t.deps.dispatch = suite.rec.port;
  });
  afterAll(() => suite.t.close());
  beforeEach(async () => {
    suite.w = await seedWorkspace(suite.t.sql);
  });
  return suite;
}
