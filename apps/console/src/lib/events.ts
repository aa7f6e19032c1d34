/**
 * Pure helpers of the webhooks and events pages: the event types the API knows, the parsing of
 * the event stream (Server-Sent Events read through fetch, since the stream wants the bearer
 * header that EventSource cannot send) and the pace of the live announcement. No DOM, no texts:
 * jest tests them as they are.
 */
import type { BodyOf, DataOf, ItemOf } from '@svc/client';
import { createParser } from 'eventsource-parser';

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
 *
 * The fields are read by eventsource-parser (LF, CRLF and CR line ends, `data` lines joined, `id`,
 * `event`, `retry`, comments, unknown fields ignored). It keeps an unfinished message inside itself,
 * where this function's callers keep it in `rest`: so each call parses with a new parser, and the
 * rest is what follows the last blank line (the end of the last complete message).
 */
export function parseEventStream(buffer: string): { messages: StreamMessage[]; rest: string } {
  const messages: StreamMessage[] = [];
  const parser = createParser({ onEvent: ({ id, event, data }) => messages.push({ id: id ?? null, event: event ?? null, data }) });
  // a CR at the very end may be the first half of a CRLF cut by the network: it waits for the next
  // chunk. The parser, fed all the rest, dispatches the messages that end before `end`, the end of
  // the last blank line, and keeps the unfinished one to itself (a parser thrown away)
  const text = buffer.endsWith('\r') ? buffer.slice(0, -1) : buffer;
  parser.feed(text);
  let end = 0;
  let lineStart = 0;
  for (const eol of text.matchAll(/\r\n|\r|\n/g)) {
    if (eol.index === lineStart) end = eol.index + eol[0].length;
    lineStart = eol.index + eol[0].length;
  }
  return { messages, rest: buffer.slice(end) };
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
