import { IDEMPOTENCY_PURGE_EVERY_MS, type BullDispatch } from '@svc/core';
import { seedMachine, seedQueue, seedTenant, type TestContext, processSuite, waitFor } from '@svc/testing';

/**
 * Housekeeping that the dispatcher schedules as a BullMQ job scheduler (one replica runs each
 * tick): expired Idempotency-Keys are purged by a running dispatcher; its sweep samples the
 * queues' backlog and the machines' busy slots for the charts, whose buckets it keeps a day.
 */
jest.setTimeout(60_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;
let bull: BullDispatch;

beforeAll(() => ({ ctx, bull } = suite));

describe('a running dispatcher', () => {
  it('schedules the Idempotency-Key purge every ten minutes and purges expired keys, keeping live ones', async () => {
    const tenant = await seedTenant(ctx.sql);
    await ctx.sql`
      insert into idempotency_keys (tenant_id, scope, key, request_hash, status, response, created_at)
      select ${tenant.id}, 'queue-items.add', case when g <= 40 then 'expired-' else 'live-' end || g,
             sha256(convert_to(g::text, 'utf8')), 201, '{}'::json,
             case when g <= 40 then now() - interval '24 hours 1 minute' - g * interval '1 minute' else now() - interval '1 hour' end
      from generate_series(1, 45) g`;

    // what the charts read: a queue with a backlog, a busy machine, buckets of 26 and 23 hours ago
    const queue = await seedQueue(ctx.sql, tenant.id);
    await ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenant.id}, ${queue.id as string}, '{}' from generate_series(1, 3)`;
    const machine = (await seedMachine(ctx.sql, tenant.id, { slots: 2 })).row;
    await ctx.sql`update machines set running_jobs = 1 where id = ${machine.id}`;
    await ctx.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                  values (${queue.id as string}, date_trunc('minute', now()) - interval '26 hours', 0, 1, 0, 0, 0),
                         (${queue.id as string}, date_trunc('minute', now()) - interval '23 hours', 0, 2, 0, 0, 0)`;

    children.dispatcher(ctx);

    const scheduler = await waitFor('the purge scheduler', () => bull.dispatchQueue.getJobScheduler('purge-idempotency-keys'));
    expect(scheduler.every).toBe(IDEMPOTENCY_PURGE_EVERY_MS);
    expect(IDEMPOTENCY_PURGE_EVERY_MS).toBe(600_000);

    // a scheduler's first tick runs at once: the new dispatcher's purge removes the expired keys
    await waitFor('the expired keys purged', async () => {
      const [r] = await ctx.sql<Array<{ n: number }>>`select count(*)::int as n from idempotency_keys where key like 'expired-%'`;
      return r!.n === 0;
    });
    const left = await ctx.sql<Array<{ key: string }>>`select key from idempotency_keys order by key`;
    expect(left.map((r) => r.key)).toEqual(['live-41', 'live-42', 'live-43', 'live-44', 'live-45']);
    // the same job purges the buckets past the day (after the keys): the one of 23 hours stays
    await waitFor('the old bucket purged', async () => {
      const buckets = await ctx.sql`select completed::int from queue_item_minutes where queue_id = ${queue.id as string}`;
      return buckets.length === 1;
    });
    const buckets = await ctx.sql`select completed::int from queue_item_minutes where queue_id = ${queue.id as string}`;
    expect(buckets.map((b) => b.completed)).toEqual([2]);

    // the sweep's sample of the minute: the queue's waiting items, the machine's busy slots
    const sample = await waitFor('the minute sampled', async () => {
      const [q] = await ctx.sql`select backlog::int from queue_minute_samples where queue_id = ${queue.id as string}`;
      const [m] = await ctx.sql`select busy, slots from machine_minute_samples where machine_id = ${machine.id}`;
      return q && m ? { backlog: q.backlog, busy: m.busy, slots: m.slots } : null;
    });
    expect(sample).toEqual({ backlog: 3, busy: 1, slots: 2 });
  });
});
