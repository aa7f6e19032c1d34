import { EVENT_TYPES as CORE_EVENT_TYPES } from '@svc/core';
import { EVENT_TYPES, eventTypesBody, mergeNewest, parseEventStream, reconnectDelayMs, typeFilter, type FeedEvent } from '../src/lib/events';

/** The webhooks and events pages' pure logic: the stream's parsing, the shown list, the form's types. */
describe('the console\'s event helpers', () => {
  it('lists exactly core\'s event types, in its order', () => {
    expect([...EVENT_TYPES]).toEqual([...CORE_EVENT_TYPES]);
  });

  it('reads Server-Sent Events split anywhere, skipping comments and keeping an unfinished message for later', () => {
    const wire = ': events\n\nid: 01\nevent: item.added\ndata: {"id":"01"}\n\n: keep-alive\n\nid: 02\r\nevent: job.failed\r\ndata: {"id":\r\ndata: "02"}\r\n\r\n';
    const out: Array<{ id: string | null; event: string | null; data: string }> = [];
    // fed one character at a time, as the network may cut it
    let rest = '';
    for (const ch of wire) {
      const parsed = parseEventStream(rest + ch);
      out.push(...parsed.messages);
      rest = parsed.rest;
    }
    expect(rest).toBe('');
    expect(out).toEqual([
      { id: '01', event: 'item.added', data: '{"id":"01"}' },
      { id: '02', event: 'job.failed', data: '{"id":\n"02"}' },
    ]);
    expect(parseEventStream('id: 03\ndata: {"a"')).toEqual({ messages: [], rest: 'id: 03\ndata: {"a"' });
  });

  const ev = (id: string): FeedEvent => ({ id, type: 'item.added', occurred_at: '2026-01-01T00:00:00Z', tenant_id: 't', data: {} });

  it('shows the newest first, never twice, and at most the cap', () => {
    let shown = mergeNewest([], [ev('01'), ev('02')], 3);
    expect(shown.map((e) => e.id)).toEqual(['02', '01']);
    shown = mergeNewest(shown, [ev('02'), ev('03'), ev('03'), ev('04')], 3);
    expect(shown.map((e) => e.id)).toEqual(['04', '03', '02']);
  });

  it('sends ["*"] for every type, else the ticked ones in the enum\'s order; ignores unknown filters', () => {
    expect(eventTypesBody(true, new Set(['job.failed']))).toEqual(['*']);
    expect(eventTypesBody(false, new Set(['job.failed', 'item.added', 'nope']))).toEqual(['item.added', 'job.failed']);
    expect(typeFilter('job.failed')).toBe('job.failed');
    expect(typeFilter('job.nope')).toBe('');
    expect(typeFilter(null)).toBe('');
  });

  it('waits longer after each failed reconnection, up to 30 s', () => {
    expect([1, 2, 3, 6, 20].map(reconnectDelayMs)).toEqual([1000, 2000, 4000, 30_000, 30_000]);
  });
});
