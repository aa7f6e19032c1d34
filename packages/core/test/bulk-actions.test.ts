import { CLI_ACTOR, createEngine, createLogger, createSql, type Engine, type Sql } from '@svc/core';
import { BULK_ACTION_CHUNK } from '@svc/core/schemas';
import { databaseSuite, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, waitFor } from '@svc/testing';

/**
 * Bulk actions' chunks on a real Postgres (docs/decisions/bulk-actions.md): a chunk commits with
 * its cursor, so a runner that dies mid-chunk leaves every row done or untouched and another
 * runner resumes where the last commit left off. The routes: apps/api/test/bulk-actions.test.ts.
 */
const db = databaseSuite();
let sql: Sql;
let engine: Engine;
let tenantId: string;

beforeAll(async () => {
  sql = db.sql;
  engine = createEngine({ sql, logger: createLogger({ service: 'bulk-test', level: 'error' }) });
  tenantId = (await seedTenant(sql)).id;
});

async function deadItems(queueId: string, n: number, retryCount = 3): Promise<void> {
  await sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, retry_count, created_at)
    select ${tenantId}, ${queueId}, 'dead_letter', jsonb_build_object('n', g), ${retryCount}, now() - make_interval(secs => 10000 - g)
    from generate_series(1, ${n}) g`;
}

async function counts(queueId: string) {
  const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function action(id: string) {
  return engine.bulk.get(tenantId, id);
}

describe('chunks', () => {
  it('one pass of a budget commits whole chunks; the next pass resumes from the cursor', async () => {
    const q = await seedQueue(sql, tenantId);
    const n = BULK_ACTION_CHUNK * 2 + 7;
    await deadItems(q.id, n);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'retry', filter: {} });
    if (asked.dryRun) throw new Error('not a dry run');
    expect(asked.action).toMatchObject({ status: 'pending', total: n, done: 0 });

    expect(await engine.bulk.run({ budgetMs: 0 })).toBe(1);
    expect(await action(asked.action.id)).toMatchObject({ status: 'running', done: BULK_ACTION_CHUNK, changed: BULK_ACTION_CHUNK });
    expect(await counts(q.id)).toEqual({ new: BULK_ACTION_CHUNK, dead_letter: n - BULK_ACTION_CHUNK });
    // the oldest first: the cursor walks (created_at, id)
    const [oldestLeft] = await sql`select min((data->>'n')::int) as n from queue_item_records where queue_id = ${q.id} and status = 'dead_letter'`;
    expect(oldestLeft!.n).toBe(BULK_ACTION_CHUNK + 1);

    await engine.bulk.run({ budgetMs: 60_000 });
    expect(await action(asked.action.id)).toMatchObject({ status: 'completed', done: n, changed: n });
    expect(await counts(q.id)).toEqual({ new: n });
    // retry keeps retry_count (one more attempt); redrive would reset it
    const [rc] = await sql`select min(retry_count) as lo, max(retry_count) as hi from queue_items where queue_id = ${q.id}`;
    expect(rc).toMatchObject({ lo: 3, hi: 3 });
  });

  it('a small action asked to run here is leased to its asker: the pass leaves it, and takes it over once the lease lapses', async () => {
    const q = await seedQueue(sql, tenantId);
    await deadItems(q.id, 5);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'redrive', filter: {} }, { runHere: true });
    if (asked.dryRun) throw new Error('not a dry run');
    expect(asked.inlineToken).toEqual(expect.any(String));
    expect(asked.action).toMatchObject({ status: 'running', total: 5, done: 0 });
    // the dispatcher's pass between the ask's commit and the asker's run: it takes nothing
    expect(await engine.bulk.run({ budgetMs: 0 })).toBe(0);
    await engine.bulk.runAsked(asked.action.id, asked.inlineToken!);
    expect(await action(asked.action.id)).toMatchObject({ status: 'completed', done: 5, changed: 5 });
    expect(await counts(q.id)).toEqual({ new: 5 });

    // an asker that died before running it: the pass resumes the action once its lease lapses
    await deadItems(q.id, 3);
    const orphan = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'redrive', filter: { status: 'dead_letter' } }, { runHere: true });
    if (orphan.dryRun) throw new Error('not a dry run');
    expect(await engine.bulk.run({ budgetMs: 0 })).toBe(0);
    await sql`update bulk_actions set lease_until = now() - interval '1 second' where id = ${orphan.action.id}`;
    expect(await engine.bulk.run({ budgetMs: 0 })).toBe(1);
    expect(await action(orphan.action.id)).toMatchObject({ status: 'completed', done: 3, changed: 3 });
    // the dead asker's token no longer runs anything
    await engine.bulk.runAsked(orphan.action.id, orphan.inlineToken!);
    expect(await counts(q.id)).toEqual({ new: 8 });

    // without runHere (the CLI, which follows whoever runs it) a small action waits for any runner
    const open = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'set_priority', priority: 4, filter: {} });
    if (open.dryRun) throw new Error('not a dry run');
    expect(open).toMatchObject({ inlineToken: null, action: { status: 'pending' } });
  });

  it('a runner killed inside a chunk leaves its rows untouched; the next runner does each row once', async () => {
    const q = await seedQueue(sql, tenantId);
    const n = BULK_ACTION_CHUNK + 20;
    await deadItems(q.id, n, 2);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'redrive', filter: {} });
    if (asked.dryRun) throw new Error('not a dry run');

    // a row of the first chunk is held by another transaction: the runner's chunk waits on it
    const holder = createSql(db.ctx.databaseUrl, { max: 1 });
    const runnerSql = createSql(db.ctx.databaseUrl, { max: 1 });
    const runner = createEngine({ sql: runnerSql, logger: createLogger({ service: 'bulk-runner', level: 'error' }) });
    try {
      let releaseHold!: () => void;
      const held = new Promise<void>((resolve) => { releaseHold = resolve; });
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => { locked = resolve; });
      const holding = holder.begin(async (tx) => {
        await tx`select id from queue_item_records where queue_id = ${q.id} and (data->>'n')::int = 3 for update`;
        locked();
        await held;
      });
      await isLocked;
      const run = runner.bulk.run({ budgetMs: 60_000 });
      const [waiting] = await waitFor('the runner to wait on the held row', async () => {
        const rows = await sql<{ pid: number }[]>`
          select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike '%queue_items%for update%'`;
        return rows.length ? rows : null;
      });
      // the runner's process dies mid-chunk: its transaction never commits
      await sql`select pg_terminate_backend(${waiting!.pid})`;
      await run.catch(() => undefined);
      releaseHold();
      await holding;
    } finally {
      await runnerSql.end({ timeout: 1 }).catch(() => undefined);
      await holder.end({ timeout: 1 });
    }
    expect(await counts(q.id)).toEqual({ dead_letter: n });
    const after = await action(asked.action.id);
    expect(after).toMatchObject({ status: 'running', done: 0, changed: 0 });

    // its lease lapses; another runner takes the action over from the last commit
    await sql`update bulk_actions set lease_until = now() - interval '1 second' where id = ${asked.action.id}`;
    await engine.bulk.run({ budgetMs: 60_000 });
    expect(await action(asked.action.id)).toMatchObject({ status: 'completed', done: n, changed: n, error_message: null });
    expect(await counts(q.id)).toEqual({ new: n });
    const [rc] = await sql`select max(retry_count) as hi from queue_items where queue_id = ${q.id}`;
    expect(rc!.hi).toBe(0);
  });

  it('an action leased by a live runner is not taken by another', async () => {
    const q = await seedQueue(sql, tenantId);
    await deadItems(q.id, BULK_ACTION_CHUNK * 2);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'delete', filter: {} });
    if (asked.dryRun) throw new Error('not a dry run');
    // a first runner holds a lease that has not lapsed: a second finds nothing to take
    await sql`update bulk_actions set status = 'running', lease_token = gen_random_uuid(), lease_until = now() + interval '1 hour' where id = ${asked.action.id}`;
    expect(await engine.bulk.run({ budgetMs: 60_000 })).toBe(0);
    expect(await counts(q.id)).toEqual({ dead_letter: BULK_ACTION_CHUNK * 2 });
  });

  it('rows created after the action was asked for are left alone; rows that moved on are gone through, not changed', async () => {
    const q = await seedQueue(sql, tenantId);
    await deadItems(q.id, 10);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'set_priority', priority: 5, filter: {} });
    if (asked.dryRun) throw new Error('not a dry run');
    await sql`insert into queue_item_records (tenant_id, queue_id, status, data, priority) values (${tenantId}, ${q.id}, 'new', '{"late":true}', 1)`;
    // two of the counted items were taken by a robot meanwhile: never edited under it
    await sql`update queue_items set status = 'in_progress' where id in (select id from queue_item_records where queue_id = ${q.id} and data ? 'n' order by id limit 2)`;
    await engine.bulk.run({ actionId: asked.action.id });
    expect(await action(asked.action.id)).toMatchObject({ status: 'completed', total: 10, done: 8, changed: 8 });
    const rows = await sql<{ status: string; priority: number; late: boolean }[]>`
      select status, priority, data ? 'late' as late from queue_item_records where queue_id = ${q.id}`;
    expect(rows.filter((r) => r.priority === 5)).toHaveLength(8);
    expect(rows.find((r) => r.late)!.priority).toBe(1);
    expect(rows.filter((r) => r.status === 'in_progress').every((r) => r.priority === 3)).toBe(true);
  });

  it('a cancelled action ends before its next chunk and keeps what it did', async () => {
    const q = await seedQueue(sql, tenantId);
    await deadItems(q.id, BULK_ACTION_CHUNK * 2);
    const asked = await engine.bulk.askItems(CLI_ACTOR, q as { id: string; tenant_id: string }, { action: 'redrive', filter: {} });
    if (asked.dryRun) throw new Error('not a dry run');
    await engine.bulk.run({ budgetMs: 0 });
    const cancelled = await engine.bulk.cancel(CLI_ACTOR, tenantId, asked.action.id);
    expect(cancelled).toMatchObject({ status: 'running', cancel_requested: true });
    await engine.bulk.run({ budgetMs: 60_000 });
    expect(await action(asked.action.id)).toMatchObject({ status: 'cancelled', done: BULK_ACTION_CHUNK });
    expect(await counts(q.id)).toEqual({ new: BULK_ACTION_CHUNK, dead_letter: BULK_ACTION_CHUNK });
    await expect(engine.bulk.cancel(CLI_ACTOR, tenantId, asked.action.id)).rejects.toMatchObject({ status: 409 });
  });
});

describe('jobs', () => {
  it('retry makes one new pending job per ended job, once, and stop ends what is active', async () => {
    const p = await seedProcess(sql, tenantId);
    const m = (await seedMachine(sql, tenantId)).row;
    const failed = await seedJob(sql, tenantId, { process_id: p.id, machine_id: m.id, status: 'failed', input_data: { k: 1 } });
    const timedOut = await seedJob(sql, tenantId, { process_id: p.id, machine_id: m.id, status: 'timed_out' });
    await seedJob(sql, tenantId, { process_id: p.id, machine_id: m.id, status: 'completed' });
    const asked = await engine.bulk.askJobs(CLI_ACTOR, tenantId, { action: 'retry', filter: { process_id: p.id } });
    if (asked.dryRun) throw new Error('not a dry run');
    expect(asked.action.total).toBe(2);
    await engine.bulk.run({ actionId: asked.action.id });
    const retries = await sql`select parent_job_id, status, retry_count, input_data, source from jobs where parent_job_id is not null and process_id = ${p.id}`;
    expect(retries).toHaveLength(2);
    expect(retries.find((r) => r.parent_job_id === failed.id)).toMatchObject({ status: 'pending', retry_count: 1, input_data: { k: 1 }, source: 'retry' });
    expect(retries.some((r) => r.parent_job_id === timedOut.id)).toBe(true);
    // asked again: both already have their retry
    const again = await engine.bulk.askJobs(CLI_ACTOR, tenantId, { action: 'retry', filter: { process_id: p.id }, dry_run: true });
    expect(again).toEqual({ dryRun: true, total: 0 });

    const stop = await engine.bulk.askJobs(CLI_ACTOR, tenantId, { action: 'stop', filter: { process_id: p.id, status: 'pending' } });
    if (stop.dryRun) throw new Error('not a dry run');
    expect(stop.action.total).toBe(2);
    await engine.bulk.run({ actionId: stop.action.id });
    const [left] = await sql`select count(*)::int as n from jobs where process_id = ${p.id} and status = 'pending'`;
    expect(left!.n).toBe(0);
    const [stopped] = await sql`select count(*)::int as n from jobs where process_id = ${p.id} and status = 'stopped' and stop_requested`;
    expect(stopped!.n).toBe(2);
  });
});
