import type { Sql } from '../db/sql';

/**
 * Which subscriptions a deliverer takes next (docs/decisions/webhook-fairness.md): those with work
 * whose lease is free, taken in turns across tenants. Within a tenant, the one served least
 * recently goes first (a turn ends with `lease_until` set to its end, so the subscription just
 * served goes to the back); across tenants, every tenant's first in line goes before any tenant's
 * second. A tenant never holds more than `perTenant` leases at once, counted over every replica
 * (the leases are rows), so its receivers, however many and however slow, leave the others room.
 * Claims take turns under one transaction-level advisory lock: two replicas counting a tenant's
 * leases at once would each see room for the same places. A claim is one short statement a poll.
 */

export interface ClaimedSubscription {
  id: string;
  tenant_id: string;
  url: string;
  event_types: string[];
  secret_sealed: Buffer;
  cursor_xid: string;
  cursor_seq: string;
  failing_since: Date | null;
}

export interface ClaimLimits {
  /** this deliverer's free slots */
  free: number;
  /** leases a tenant may hold at once, across replicas */
  perTenant: number;
  leaseMs: number;
  /** subscriptions whose turn is still under way here (one whose lease ran out is not taken twice by the same deliverer) */
  running: string[];
}

export async function claimSubscriptions(sql: Sql, owner: string, limits: ClaimLimits): Promise<ClaimedSubscription[]> {
  if (limits.free <= 0) return [];
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('webhook_subscriptions:claim', 0))`;
    return tx<ClaimedSubscription[]>`
      with busy as (
        select tenant_id, count(*)::int as n from webhook_subscriptions
        where lease_owner is not null and lease_until >= now()
        group by tenant_id
      ), ready as (
        select c.id, c.tenant_id, c.lease_until,
          row_number() over (partition by c.tenant_id order by c.lease_until nulls first, c.id) as place
        from webhook_subscriptions c
        where c.is_active and (c.lease_until is null or c.lease_until < now()) and c.id <> all(${limits.running}::uuid[])
          and (exists (select 1 from webhook_deliveries d where d.subscription_id = c.id and d.status = 'pending' and d.next_attempt_at <= now())
            or exists (select 1 from events e where e.tenant_id = c.tenant_id and (e.xid, e.seq) > (c.cursor_xid, c.cursor_seq)
                         and e.xid < pg_snapshot_xmin(pg_current_snapshot())))
      ), picked as (
        select r.id from ready r left join busy b on b.tenant_id = r.tenant_id
        where r.place + coalesce(b.n, 0) <= ${limits.perTenant}
        order by r.place, r.lease_until nulls first, r.id
        limit ${limits.free}
      )
      update webhook_subscriptions s set lease_owner = ${owner}, lease_until = now() + make_interval(secs => ${limits.leaseMs / 1000})
      where s.id in (
        select c.id from webhook_subscriptions c
        where c.id in (select id from picked) and (c.lease_until is null or c.lease_until < now())
        for update skip locked)
      returning s.id, s.tenant_id, s.url, s.event_types, s.secret_sealed, s.cursor_xid::text as cursor_xid, s.cursor_seq::text as cursor_seq, s.failing_since`;
  }) as Promise<ClaimedSubscription[]>;
}

/** Ends a turn: the lease is given back, and its end is kept so that the others of the tenant go first next time. */
export async function releaseSubscription(sql: Sql, owner: string, id: string): Promise<void> {
  await sql`update webhook_subscriptions set lease_owner = null, lease_until = now() where id = ${id} and lease_owner = ${owner}`;
}
