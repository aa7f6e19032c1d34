/**
 * Pure helpers of the webhooks and events pages: the event types the API knows, the parsing of
 * the event stream (Server-Sent Events read through fetch, since the stream wants the bearer
 * header that EventSource cannot send) and the pace of the live announcement. No DOM, no texts:
 * jest tests them as they are.
 */
import type { BodyOf, DataOf, ItemOf } from '@svc/client';

export type Webhook = ItemOf<'listWorkspaceWebhooks'>;
export type WebhookWithSecret = DataOf<'createWebhook'>;
export type Delivery = ItemOf<'listWebhookDeliveries'>;
export type FeedEvent = ItemOf<'readEvents'>;

type EventTypeChoice = BodyOf<'createWebhook'>['event_types'][number];
export type EventType = Exclude<EventTypeChoice, '*'>;

/** Every event type of the OpenAPI document's enum, in its order. */
export const EVENT_TYPES = [
  'item.added', 'item.completed', 'item.failed', 'item.pending_review', 'item.reviewed', 'item.dead_letter',
  'job.created', 'job.started', 'job.completed', 'job.failed', 'job.stopped', 'job.timed_out', 'job.waiting_input',
  'machine.online', 'machine.offline', 'api_key.created', 'api_key.rotated', 'api_key.revoked',
  'queue.retention', 'jobs.retention',
] as const satisfies ReadonlyArray<EventType>;
// a type the API adds fails this line until it is listed above (and named in the i18n file)
const allListed: Exclude<EventType, (typeof EVENT_TYPES)[number]> extends never ? true : never = true;
void allListed;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const satisfies ReadonlyArray<Delivery['status']>;

/** The event types of a subscription form: `["*"]` for all, else those ticked in the enum's order. */
export function eventTypesBody(all: boolean, ticked: ReadonlySet<string>): EventTypeChoice[] {
  if (all) return ['*'];
  return EVENT_TYPES.filter((type) => ticked.has(type));
}

/** A type filter from the address: a known type, or none (an unknown one would earn a 422). */
export function typeFilter(value: string | null): EventType | '' {
  return value && (EVENT_TYPES as readonly string[]).includes(value) ? (value as EventType) : '';
}

export interface StreamMessage {
  id: string | null;
  event: string | null;
  data: string;
}

/**
 * Reads Server-Sent Events out of the text received so far: the messages complete in it and the
 * rest (an unfinished message) to prepend to the next chunk. Comments (`: keep-alive`) and
 * messages without data are dropped, as EventSource drops them.
 */
export function parseEventStream(buffer: string): { messages: StreamMessage[]; rest: string } {
  // a CR at the very end may be the first half of a CRLF cut by the network: it waits for the next chunk
  const held = buffer.endsWith('\r') ? '\r' : '';
  const text = (held ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, '\n');
  const blocks = text.split('\n\n');
  const rest = (blocks.pop() ?? '') + held;
  const messages: StreamMessage[] = [];
  for (const block of blocks) {
    let id: string | null = null;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) messages.push({ id, event, data: data.join('\n') });
  }
  return { messages, rest };
}

/**
 * The events shown, newest first: `incoming` (oldest first, as the feed gives them) before the
 * ones already shown, without repeating an id, at most `max` of them.
 */
export function mergeNewest(shown: readonly FeedEvent[], incoming: readonly FeedEvent[], max: number): FeedEvent[] {
  const seen = new Set(shown.map((e) => e.id));
  const fresh = incoming.filter((e) => !seen.has(e.id) && (seen.add(e.id), true)).reverse();
  return [...fresh, ...shown].slice(0, max);
}

/** The wait before reconnecting to the stream after `failures` ends in a row: 1 s doubling to 30 s. */
export function reconnectDelayMs(failures: number): number {
  return Math.min(1000 * 2 ** Math.max(0, failures - 1), 30_000);
}
