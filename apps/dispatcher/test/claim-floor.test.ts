import { seedQueue, seedTenant, type TestContext, processSuite, waitFor } from '@svc/testing';

/**
 * The claim floors as a running dispatcher keeps them (CLAIM_FLOOR=on, docs/decisions/claim-floor.md):
 * its pass, every CLAIM_FLOOR_EVERY_MS, follows the oldest ready item without a deadline up as
 * items are taken, and down again when a postponed older item becomes due.
 */
jest.setTimeout(60_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;

beforeAll(() => {
  ({ ctx } = suite);
});

async function floorOf(queueId: string): Promise<number | null> {
  const [row] = await ctx.sql<Array<{ floor: Date }>>`select floor from queue_ready_floor where queue_id = ${queueId}`;
  return row ? row.floor.getTime() : null;
}

async function createdAt(queueId: string, ref: string): Promise<number> {
  const [row] = await ctx.sql<Array<{ created_at: Date }>>`select created_at from queue_items where queue_id = ${queueId} and reference = ${ref}`;
  return row!.created_at.getTime();
}

describe('a running dispatcher with CLAIM_FLOOR=on', () => {
  it('recomputes each queue\'s floor from its ready items on its claim-floor tick', async () => {
    const tenant = await seedTenant(ctx.sql);
    const queue = await seedQueue(ctx.sql, tenant.id);
    const qid = queue.id as string;
    await ctx.sql`
      insert into queue_item_records (tenant_id, queue_id, data, reference, created_at) values
        (${tenant.id}, ${qid}, '{}'::jsonb, 'a', now() - interval '5 minutes'),
        (${tenant.id}, ${qid}, '{}'::jsonb, 'b', now() - interval '4 minutes')`;

    children.dispatcher(ctx, { CLAIM_FLOOR: 'on', CLAIM_FLOOR_EVERY_MS: '200' });
    const scheduler = await waitFor('the claim-floor scheduler', () => suite.bull.dispatchQueue.getJobScheduler('claim-floor'));
    expect(scheduler.every).toBe(200);

    const a = await createdAt(qid, 'a');
    await waitFor('the floor at the oldest ready item', async () => (await floorOf(qid)) === a);

    await ctx.sql`update queue_items set status = 'completed' where queue_id = ${qid} and reference = 'a'`;
    const b = await createdAt(qid, 'b');
    await waitFor('the floor up to the next one', async () => (await floorOf(qid)) === b);

    // an older item postponed for a moment: not ready when written (nothing lowers the floor then),
    // it becomes due with time alone, and the next pass brings the floor down to it
    await ctx.sql`
      insert into queue_item_records (tenant_id, queue_id, data, reference, postpone, created_at)
      values (${tenant.id}, ${qid}, '{}'::jsonb, 'postponed', now() + interval '2 seconds', now() - interval '10 minutes')`;
    const postponed = await createdAt(qid, 'postponed');
    await waitFor('the floor down to the item that became due', async () => (await floorOf(qid)) === postponed);
  });
});
