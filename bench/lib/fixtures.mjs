// Data set-up for the bench through direct SQL (fast, and independent of the code under test).
import { core } from './core.mjs';

/** A tenant with every plan feature and a quota no scenario reaches. */
export async function seedTenant(sql, name = 'bench') {
  const [row] = await sql`
    insert into tenants (name, plan_features, subscription_status, monthly_quota)
    values (${name}, ${['api_keys', 'webhooks']}, 'active', 100000000)
    returning *`;
  return row;
}

/**
 * `count` API keys with every scope. The contract's rate limits (per key, per minute) are kept
 * as they are: a load of thousands of requests per second is many clients, so each request of
 * the load generator uses the next key of the list, round robin.
 */
export async function seedApiKeys(sql, tenantId, count) {
  const keys = [];
  const rows = [];
  for (let i = 0; i < count; i++) {
    const s = core.issueSecret(core.API_KEY_PREFIX);
    keys.push(s.value);
    rows.push({ tenant_id: tenantId, name: `bench-${i}`, prefix: s.prefix, key_hash: s.hash, scopes: [...core.SCOPE_NAMES] });
  }
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000);
    await sql`insert into api_keys ${sql(chunk, 'tenant_id', 'name', 'prefix', 'key_hash', 'scopes')}`;
  }
  return keys;
}

/**
 * A member of the tenant and `count` access tokens of theirs, for the settings routes the console
 * reads (Bearer). Like the API keys, one token per request of the load generator, round robin: the
 * default limit of 120 requests per minute is per token.
 */
export async function seedAccessTokens(sql, tenantId, count, email = `bench-${tenantId}@example.com`) {
  const [user] = await sql`
    insert into users (tenant_id, email, name, password_hash, role)
    values (${tenantId}, ${email}, 'bench', 'not-a-password-hash', 'member')
    returning id`;
  const tokens = [];
  const rows = [];
  for (let i = 0; i < count; i++) {
    const s = core.issueSecret(core.ACCESS_TOKEN_PREFIX);
    tokens.push(s.value);
    rows.push({ tenant_id: tenantId, user_id: user.id, token_hash: s.hash, prefix: s.prefix, expires_at: new Date(Date.now() + 24 * 3600_000) });
  }
  for (let i = 0; i < rows.length; i += 1000) {
    await sql`insert into access_tokens ${sql(rows.slice(i, i + 1000), 'tenant_id', 'user_id', 'token_hash', 'prefix', 'expires_at')}`;
  }
  return tokens;
}

export async function seedProcess(sql, tenantId, name, fields = {}) {
  const [row] = await sql`
    insert into processes (tenant_id, name, timeout_seconds, max_retries)
    values (${tenantId}, ${name}, ${fields.timeout_seconds ?? 3600}, ${fields.max_retries ?? 0})
    returning *`;
  return row;
}

export async function seedQueue(sql, tenantId, name, fields = {}) {
  const [row] = await sql`
    insert into queues (tenant_id, name, max_retries, consumer_process_id, max_consumers)
    values (${tenantId}, ${name}, ${fields.max_retries ?? 3}, ${fields.consumer_process_id ?? null}, ${fields.max_consumers ?? 1})
    returning *`;
  return row;
}

/** Machines start offline; the simulated agents bring them online with their heartbeats. */
export async function seedMachines(sql, tenantId, count, { slots = 1, prefix = 'bench-machine' } = {}) {
  const machines = [];
  // a statement per 500 machines (B8 seeds 1,000)
  for (let from = 0; from < count; from += 500) {
    const batch = [];
    for (let i = from; i < Math.min(count, from + 500); i++) {
      const s = core.issueSecret(core.MACHINE_KEY_PREFIX);
      batch.push({ tenant_id: tenantId, name: `${prefix}-${i + 1}`, machine_key_hash: s.hash, machine_key_prefix: s.prefix, slots, status: 'offline', key: s.value });
    }
    const rows = await sql`
      insert into machines ${sql(batch, 'tenant_id', 'name', 'machine_key_hash', 'machine_key_prefix', 'slots', 'status')}
      returning id, name`;
    const ids = new Map(rows.map((r) => [r.name, r.id]));
    for (const m of batch) machines.push({ id: ids.get(m.name), name: m.name, machineKey: m.key });
  }
  return machines;
}

/** The payload every item of the bench carries (same rows for the platform and the baselines). */
export function itemPayload(i) {
  return { invoice: `INV-${i}`, amount: 100 + (i % 1000) / 10, customer: { id: i % 977, country: 'ES' }, lines: [1, 2, 3] };
}

/**
 * `total` items in one statement (the statement-level counter triggers count them as they go):
 * statuses in fixed shares so the filtered list has a known total too (no `failed`: the running
 * dispatcher would send those back to `new`).
 */
const REF_PREFIX = 'REF-';
/** Seeded items carry references `REF-0` … `REF-(n-1)`, ten items each (a business key names a few items). */
export function referenceCount(total) {
  return Math.max(1, Math.floor(total / 10));
}
/** The seeded items that carry `REF-k` (g ≡ k mod n, for g in 1..total). */
export function itemsWithReference(total, k) {
  const n = referenceCount(total);
  if (k === 0) return Math.floor(total / n);
  return k > total ? 0 : Math.floor((total - k) / n) + 1;
}
export const referenceOf = (k) => `${REF_PREFIX}${k}`;

export async function seedItems(sql, queue, total) {
  // an item's state and its payload, each in its own table (migration 0029), one statement
  await sql`
    with src as materialized (
      select gen_random_uuid() as id, g from generate_series(1, ${total}::int) as g),
    ins as (
      insert into queue_items (id, tenant_id, queue_id, status, priority, reference, created_at, processed_at)
      select id, ${queue.tenant_id}, ${queue.id},
             case when g % 10 < 7 then 'completed' when g % 10 < 9 then 'new' else 'dead_letter' end,
             1 + g % 5,
             ${REF_PREFIX} || (g % ${referenceCount(total)}),
             now() - make_interval(secs => (${total} - g) / 1000.0),
             case when g % 10 < 7 then now() end
      from src order by g)
    insert into queue_item_payloads (id, queue_id, data)
    select id, ${queue.id}, jsonb_build_object('invoice', 'INV-' || g, 'amount', g % 1000, 'lines', jsonb_build_array(1, 2, 3))
    from src order by g`;
  const byStatus = { completed: 0, new: 0, dead_letter: 0 };
  // the same shares, computed here rather than counted back
  for (const [status, share] of [['completed', [0, 7]], ['new', [7, 9]], ['dead_letter', [9, 10]]]) {
    const full = Math.floor(total / 10) * (share[1] - share[0]);
    let rest = 0;
    for (let g = Math.floor(total / 10) * 10 + 1; g <= total; g++) if (g % 10 >= share[0] && g % 10 < share[1]) rest++;
    byStatus[status] = full + rest;
  }
  await sql`vacuum analyze queue_items`;
  await sql`vacuum analyze queue_item_payloads`;
  return byStatus;
}

/**
 * A queue named `name` holding `count` completed items that ended 40 days ago, past the default
 * retention, for the retention pass to delete while a scenario measures something else; vacuumed,
 * as a quiet table. `left()` counts what the pass has not removed yet. The platform's processes
 * get EXPIRED_QUEUE_ENV so that the dispatcher passes every second. With `expired: false` the
 * queue keeps its items a year: the same table, with nothing for the pass to remove (the
 * comparison's other side, so that it measures the pass rather than the table's size).
 *
 * With `flowPerSec: R` the items ended 1/R seconds apart and nothing has expired yet:
 * `startExpiring()` sets the queue's retention so that the oldest expires at that instant and the
 * next ones at R a second after it, as in a deployment whose items expire at the rate they once
 * completed (a pass at its steady state, not one removing a backlog).
 */
export async function seedExpiredQueue(sql, tenantId, name, count, { expired = true, flowPerSec = 0 } = {}) {
  const queue = await seedQueue(sql, tenantId, name);
  if (!expired || flowPerSec) await sql`update queues set retention_completed_days = 365 where id = ${queue.id}`;
  const apart = flowPerSec ? 1000 / flowPerSec : 1;
  for (let from = 1; from <= count; from += 200_000) {
    await sql`
      with src as materialized (
        select gen_random_uuid() as id, g from generate_series(${from}::int, ${Math.min(count, from + 199_999)}::int) g),
      ins as (
        insert into queue_items (id, tenant_id, queue_id, status, created_at, updated_at, processed_at)
        select id, ${tenantId}, ${queue.id}, 'completed',
               now() - interval '60 days', now() - interval '40 days' + g * ${apart}::float8 * interval '1 ms', now() - interval '40 days'
        from src order by g)
      insert into queue_item_payloads (id, queue_id, data)
      select id, ${queue.id}, jsonb_build_object('invoice', 'OLD-' || g, 'amount', g % 1000) from src order by g`;
  }
  await sql`vacuum analyze queue_items`;
  await sql`vacuum analyze queue_item_payloads`;
  return {
    queue,
    left: async () => (await sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`)[0].n,
    // the status lets the ended-rows index answer (the scenario's CPU meter is already running)
    startExpiring: async () => {
      await sql`
        update queues set retention_completed_days =
          extract(epoch from now() - (select min(updated_at) from queue_items where queue_id = ${queue.id} and status = 'completed')) / 86400
        where id = ${queue.id}`;
    },
  };
}

export const EXPIRED_QUEUE_ENV = { RETENTION_EVERY_MS: '1000' };
