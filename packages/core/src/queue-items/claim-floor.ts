import type { Queryable } from '../db/sql';
import type { ClaimFloorMode } from '../config';
import { PRIORITIES_DESC } from './take';

/**
 * The claim floors (docs/decisions/claim-floor.md). A queue's floor F is a lower bound on the
 * created_at of its ready items without a deadline, so that the take (CLAIM_FLOOR=on,
 * queue-items/take.ts) starts its range of queue_items_ready_idx at F instead of at the
 * head, past the entries of items taken since vacuum last ran. A floor too low is only slower; a
 * floor too high would hide items, and two things keep it from staying so:
 *
 * - this recomputation, every CLAIM_FLOOR_EVERY_MS, sets F from the items themselves, so an item
 *   the floor passed over (its insert committed long after its created_at, its postpone became due)
 *   is taken at most one period late;
 * - the trigger of migration 0025 lowers F in the very transaction that makes an older item ready
 *   again (retry, release, approval, re-drive, a postpone cleared).
 */

/**
 * How far behind the present a floor stays at most. An item's created_at is its transaction's
 * start, so an insert that commits within this long of it is never passed over, whenever the
 * floor was recomputed meanwhile.
 */
export const CLAIM_FLOOR_LAG = '5 seconds';

/**
 * Whether a transaction older than `engageSeconds` holds vacuum back in this database: a client
 * session of this database whose oldest snapshot (`backend_xmin`) or own transaction id
 * (`backend_xid`: a session idle in a transaction after a write) began that long ago (a report in
 * repeatable read, a `pg_dump`, a forgotten session), or a prepared transaction that old. Sessions
 * of other databases do not hold this one's tables back. Postgres shows another role's sessions
 * only to a role with `pg_read_all_stats`: a deployment whose reports run as another role grants
 * it to the platform's role, or sets CLAIM_FLOOR=on (docs/decisions/claim-floor.md).
 */
export async function vacuumHeldBack(sql: Queryable, engageSeconds: number): Promise<boolean> {
  const [row] = await sql<Array<{ held: boolean }>>`
    select exists (
      select 1 from pg_stat_activity
       where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()
         and (backend_xmin is not null or backend_xid is not null)
         and xact_start < now() - make_interval(secs => ${engageSeconds}::float8)
    ) or exists (
      select 1 from pg_prepared_xacts
       where database = current_database() and prepared < now() - make_interval(secs => ${engageSeconds}::float8)
    ) as held`;
  return row!.held;
}

export interface RecomputeOptions {
  mode: ClaimFloorMode;
  /** CLAIM_FLOOR=auto: the age of the oldest snapshot from which floors are kept */
  engageSeconds?: number;
  /**
   * Search each priority from the head of the index (true, the default), or from a little below
   * the queue's current floor (false): see CLAIM_FLOOR_SEARCH_BELOW.
   */
  full?: boolean;
}

/**
 * How far below its current floor a pass that is not full searches a queue's ready items. Such a
 * pass runs nearly every time (the dispatcher makes one in CLAIM_FLOOR_FULL_EVERY full): from the
 * head it would walk, every second, the entries of every item taken while vacuum is held back,
 * the very walk the floors spare the takes. What it cannot see below that margin: an insert that
 * committed longer than this after its created_at, found by the next full pass. Items made ready
 * again lower the floor themselves (the trigger), and postponed items that came due are searched
 * on their own index.
 */
export const CLAIM_FLOOR_SEARCH_BELOW = '60 seconds';
/** One pass in this many searches from the head of the index. */
export const CLAIM_FLOOR_FULL_EVERY = 60;

/**
 * Every queue with `new` items gets F = least(the oldest ready item without a deadline, now() -
 * CLAIM_FLOOR_LAG). Each priority's oldest is the head of its range of queue_items_ready_idx (one
 * walk per queue and priority per pass, where a take used to walk from the head every time).
 * Queues without `new` items keep their floor: any item they get later is newer than it, or
 * lowers it by the trigger. With the setting off, and in `auto` while no old snapshot holds
 * vacuum back, the floors are removed: the takes then read from the head, which costs nothing
 * more while vacuum keeps the head clean, and none is left to go stale. Returns how many floors
 * were written (or removed).
 */
export async function recomputeClaimFloors(sql: Queryable, opts: RecomputeOptions): Promise<number> {
  const keep = opts.mode === 'on' || (opts.mode === 'auto' && await vacuumHeldBack(sql, opts.engageSeconds ?? 30));
  if (!keep) return (await sql`delete from queue_ready_floor`).count;
  const full = opts.full ?? true;
  const lower = full ? sql`'-infinity'::timestamptz`
    : sql`coalesce((select f0.floor from queue_ready_floor f0 where f0.queue_id = w.queue_id), '-infinity'::timestamptz) - ${sql.unsafe(`interval '${CLAIM_FLOOR_SEARCH_BELOW}'`)}`;
  const oldest = PRIORITIES_DESC.map((p) => sql`(
        select created_at from queue_items
         where queue_id = w.queue_id and status = 'new' and priority = ${sql.unsafe(String(p))} and deadline is null
           and (postpone is null or postpone <= now()) and created_at >= ${lower}
         order by priority desc, deadline asc nulls last, created_at asc, id
         limit 1)`).reduce((all, part) => sql`${all}, ${part}`);
  // postponed items that came due, whatever their age: on queue_items_postponed_idx, which holds
  // only the queue's postponed items
  const dueOldest = sql`(
        select min(created_at) from queue_items
         where queue_id = w.queue_id and status = 'new' and postpone is not null and postpone <= now() and deadline is null)`;
  const [row] = await sql<Array<{ n: number }>>`
    with computed as (
      select w.queue_id, least(${oldest}, ${dueOldest}, now() - ${sql.unsafe(`interval '${CLAIM_FLOOR_LAG}'`)}) as floor
        from (select queue_id from queue_item_counts where status = 'new' group by queue_id having sum(n) > 0) w
       where exists (select 1 from queues q where q.id = w.queue_id)
    ), locked as (
      -- a floor another transaction holds (the trigger lowering it for an item made ready again) is
      -- left to the next pass: the pass never waits for a floor, so it is never part of a cycle
      select f.queue_id from queue_ready_floor f join computed c using (queue_id)
       order by f.queue_id
         for update of f skip locked
    ), moved as (
      update queue_ready_floor f set floor = c.floor, updated_at = now()
        from computed c join locked l using (queue_id)
       -- a floor that did not move leaves no row version behind for the take's look-up to step over
       where f.queue_id = c.queue_id and f.floor is distinct from c.floor
      returning f.queue_id
    ), added as (
      insert into queue_ready_floor (queue_id, floor, updated_at)
      select c.queue_id, c.floor, now() from computed c
       where not exists (select 1 from queue_ready_floor f where f.queue_id = c.queue_id)
       order by c.queue_id
      on conflict (queue_id) do nothing
      returning queue_id
    )
    select ((select count(*) from moved) + (select count(*) from added))::int as n`;
  return row!.n;
}

/**
 * Whether this process's takes read past the floors: always with `on`, never with `off`, and
 * with `auto` while the table has any floor (the dispatcher writes them only while vacuum is held
 * back). The answer is read again at most every `everyMs`, in the background: a take never waits
 * for it, and a stale answer is safe either way (a take past a missing floor reads from the head;
 * a take from the head while floors exist is only slower).
 */
export function claimFloorSwitch(sql: Queryable, mode: ClaimFloorMode, everyMs = 1000): { current(): boolean } {
  if (mode !== 'auto') return { current: () => mode === 'on' };
  let engaged = false;
  let readAt = -Infinity;
  let reading = false;
  return {
    current() {
      if (!reading && Date.now() - readAt >= everyMs) {
        reading = true;
        void sql<Array<{ any: boolean }>>`select exists (select 1 from queue_ready_floor) as any`
          .then(([row]) => { engaged = row!.any; readAt = Date.now(); }, () => { readAt = Date.now(); })
          .finally(() => { reading = false; });
      }
      return engaged;
    },
  };
}
