import type { Queryable } from '../db/sql';
import { ValidationError } from '../errors';
import { EVENT_TYPES, type EventFeedQuery, type EventResponse } from '../webhooks/schemas';
import { es } from '../messages/server-messages';

/**
 * The tenant's event feed (docs/decisions/events.md). Events are read in (xid, seq) order and only
 * below the horizon of the oldest transaction still running, so an event that commits late
 * always sorts after the cursor a client already holds: keeping the last cursor misses nothing.
 */

export interface FeedPosition {
  xid: string;
  seq: string;
}

/** The position an event id (32 hex digits) stands for; the start of the feed for none. */
export function decodeEventCursor(cursor: string | undefined): FeedPosition {
  if (cursor === undefined) return { xid: '0', seq: '0' };
  if (!/^[0-9a-f]{32}$/.test(cursor)) {
    throw ValidationError.single(['query', 'after'], es.feeds.notAnEventIdHint, 'invalid_cursor');
  }
  return { xid: BigInt(`0x${cursor.slice(0, 16)}`).toString(), seq: BigInt(`0x${cursor.slice(16)}`).toString() };
}

export function parseEventTypes(types: string | undefined): string[] | null {
  if (types === undefined) return null;
  const list = [...new Set(types.split(','))];
  const unknown = list.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw ValidationError.single(['query', 'types'], es.feeds.unknownEventType(unknown[0]!), 'enum');
  return list;
}

export interface EventRow extends EventResponse {
  xid: string;
  seq: string;
}

/** An event's columns as the feed shows it, with its position (xid, seq) for cursors. */
function eventColumns(sql: Queryable) {
  return sql`event_cursor(xid, seq) as id, type, event_iso(occurred_at) as occurred_at, tenant_id, data, xid::text as xid, seq::text as seq`;
}

/**
 * Events of the tenant after `after`, oldest first, committed and below the horizon. The same
 * statement serves the feed, the stream and the webhook deliveries.
 */
export async function readEventsAfter(
  sql: Queryable,
  tenantId: string,
  after: FeedPosition,
  opts: { types: string[] | null; limit: number; withSecretOf?: string; newest?: boolean },
): Promise<Array<EventRow & { secret_sealed?: Buffer | null }>> {
  // the deliverer's page carries its subscription's signing secret as of the same snapshot: an
  // event that committed after a rotation is never signed with the secret it replaced
  const secret = opts.withSecretOf
    ? sql`, (select s.secret_sealed from webhook_subscriptions s where s.id = ${opts.withSecretOf}) as secret_sealed`
    : sql``;
  // the newest page is the primary key's index read backwards, returned in feed order
  const rows = await sql<Array<EventRow & { secret_sealed?: Buffer | null }>>`
    select ${eventColumns(sql)} ${secret}
    from events
    where tenant_id = ${tenantId}
      and (xid, seq) > (${after.xid}::text::xid8, ${after.seq}::bigint)
      and xid < pg_snapshot_xmin(pg_current_snapshot())
      ${opts.types ? sql`and type = any(${opts.types}::text[])` : sql``}
    order by ${opts.newest ? sql`events.xid desc, events.seq desc` : sql`events.xid, events.seq`}
    limit ${opts.limit}`;
  return opts.newest ? rows.reverse() : rows;
}

/** One event by its position (a redelivery rebuilds its body); null once the retention purged it. */
export async function readEvent(sql: Queryable, tenantId: string, at: FeedPosition): Promise<EventRow | null> {
  const [row] = await sql<EventRow[]>`
    select ${eventColumns(sql)}
    from events
    where tenant_id = ${tenantId} and xid = ${at.xid}::text::xid8 and seq = ${at.seq}::bigint`;
  return row ?? null;
}

/** The body a webhook carries for an event: the event as the feed shows it. */
export function eventBody(e: EventResponse): string {
  return JSON.stringify({ id: e.id, type: e.type, occurred_at: e.occurred_at, tenant_id: e.tenant_id, data: e.data });
}

export interface FeedPage {
  rows: EventResponse[];
  meta: { limit: number; next_cursor: string | null };
}

const publicEvent = ({ xid: _x, seq: _s, ...event }: EventRow): EventResponse => event;

/**
 * One page of the feed. `next_cursor` is the last event's id, or the cursor given when there is
 * nothing new (so a client always has a cursor to come back with). `newest` gives the last page
 * instead of the first: a live view starts there, where the oldest kept event may be days old.
 */
export async function readEventFeed(sql: Queryable, tenantId: string, query: EventFeedQuery): Promise<FeedPage> {
  const limit = query.limit ?? 100;
  const rows = await readEventsAfter(sql, tenantId, decodeEventCursor(query.after), { types: parseEventTypes(query.types), limit, newest: query.newest === true });
  const last = rows[rows.length - 1];
  return { rows: rows.map(publicEvent), meta: { limit, next_cursor: last ? last.id : query.after ?? null } };
}

/** Events older than the retention go (the engine's sweep), with the deliveries finished with them. */
export async function purgeOldEvents(sql: Queryable, retentionDays: number): Promise<number> {
  const cutoff = sql`now() - make_interval(secs => ${retentionDays * 86400})`;
  const res = await sql`delete from events where occurred_at < ${cutoff}`;
  await sql`delete from webhook_deliveries where created_at < ${cutoff} and status <> 'pending'`;
  return res.count;
}
