import { randomUUID } from 'node:crypto';
import type { Sql } from '@svc/core';
import { renderMetrics } from '@svc/core/observability';
import { applyItemRetryPolicy, finishJob, requestRunningJobStop, settleAndClaimItems, startJob } from '@svc/core/internals';
import { createTestContext, sampleValue, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, type TestContext } from '@svc/testing';

/**
 * The domain's counters and histograms move where the work happens (packages/core/src/metrics/):
 * items taken, settled, completed and dead-lettered; jobs started, ended and stopped. Read from
 * this process's registry, the way a scrape of the process would.
 */
let ctx: TestContext;
let sql: Sql;
let tenantId: string;
let processId: string;
let machineId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId)).id;
  machineId = (await seedMachine(sql, tenantId)).row.id;
});
afterAll(() => ctx.close());

async function value(name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleValue((await renderMetrics()).body, name, labels) ?? 0;
}

it('counts item attempts, outcomes, the created → completed time and dead letters', async () => {
  const queue = await seedQueue(sql, tenantId, { max_retries: 0 });
  for (let i = 0; i < 2; i++) {
    await sql`insert into queue_item_records (tenant_id, queue_id, data) values (${tenantId}, ${queue.id as string}, ${sql.json({ i })})`;
  }
  const jobId = randomUUID();
  await sql`insert into jobs (id, tenant_id, process_id, machine_id, status, attempt, started_at, source, queue_id)
            values (${jobId}, ${tenantId}, ${processId}, ${machineId}, 'running', 1, now(), 'queue', ${queue.id as string})`;
  const before = {
    attempts: await value('svc_queue_item_attempts_total'),
    completed: await value('svc_queue_items_settled_total', { status: 'completed' }),
    failed: await value('svc_queue_items_settled_total', { status: 'failed' }),
    ages: await value('svc_queue_item_completion_seconds_count'),
    dead: await value('svc_queue_item_retry_policy_total', { outcome: 'dead_letter' }),
  };
  const req = { queueId: queue.id as string, jobId, jobAttempt: 1, machineId };
  const { claimed } = await settleAndClaimItems(sql, { ...req, outcomes: [], take: 2 });
  expect(claimed).toHaveLength(2);
  expect(await value('svc_queue_item_attempts_total')).toBe(before.attempts + 2);
  await settleAndClaimItems(sql, {
    ...req,
    take: 0,
    outcomes: [
      { id: claimed[0]!.id, attempt: claimed[0]!.attempt, status: 'completed' },
      { id: claimed[1]!.id, attempt: claimed[1]!.attempt, status: 'failed', error_message: 'x' },
    ],
  });
  expect(await value('svc_queue_items_settled_total', { status: 'completed' })).toBe(before.completed + 1);
  expect(await value('svc_queue_items_settled_total', { status: 'failed' })).toBe(before.failed + 1);
  expect(await value('svc_queue_item_completion_seconds_count')).toBe(before.ages + 1);
  const r = await applyItemRetryPolicy(sql, queue.id as string);
  expect(r.deadLettered).toBe(1);
  expect(await value('svc_queue_item_retry_policy_total', { outcome: 'dead_letter' })).toBe(before.dead + 1);
});

it('observes a job start, its end by status and the stop → stopped latency', async () => {
  const job = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
  const before = {
    starts: await value('svc_job_start_latency_seconds_count'),
    stopped: await value('svc_jobs_ended_total', { status: 'stopped' }),
    durations: await value('svc_job_duration_seconds_count', { status: 'stopped' }),
    stops: await value('svc_job_stop_latency_seconds_count'),
  };
  const holder = randomUUID();
  const start = await startJob(sql, job.id as string, machineId, { holder, leaseSeconds: 30 });
  if (!('started' in start)) throw new Error('not started');
  // the same holder asking again (a lost answer) gets the same run: observed once
  await startJob(sql, job.id as string, machineId, { holder, leaseSeconds: 30 });
  expect(await value('svc_job_start_latency_seconds_count')).toBe(before.starts + 1);
  expect(await requestRunningJobStop(sql, job.id as string)).not.toBeNull();
  expect(await finishJob(sql, job.id as string, start.started.attempt, { to: 'stopped' })).not.toBeNull();
  expect(await value('svc_jobs_ended_total', { status: 'stopped' })).toBe(before.stopped + 1);
  expect(await value('svc_job_duration_seconds_count', { status: 'stopped' })).toBe(before.durations + 1);
  expect(await value('svc_job_stop_latency_seconds_count')).toBe(before.stops + 1);
});
