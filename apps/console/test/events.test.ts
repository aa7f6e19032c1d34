import { EVENT_TYPES as CORE_EVENT_TYPES } from '@svc/core/schemas';
import { EVENT_TYPES, eventTypesBody, mergeNewest, parseEventStream, reconnectDelayMs, typeFilter, type FeedEvent, type StreamMessage } from '../src/lib/events';

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

  /** Reads the chunks as followEventStream does (lib/api.ts): each chunk after the rest of the previous ones. */
  function read(chunks: readonly string[]): { messages: StreamMessage[]; rest: string } {
    const messages: StreamMessage[] = [];
    let rest = '';
    for (const chunk of chunks) {
      const parsed = parseEventStream(rest + chunk);
      messages.push(...parsed.messages);
      rest = parsed.rest;
    }
    return { messages, rest };
  }

  /** The same messages whole, one character at a time, and cut in two at every place (inside a line, a field name, a CRLF). */
  function expectEverywhere(wire: string, messages: StreamMessage[], rest = ''): void {
    expect(read([wire])).toEqual({ messages, rest });
    expect(read([...wire])).toEqual({ messages, rest });
    for (let at = 1; at < wire.length; at++) expect({ at, ...read([wire.slice(0, at), wire.slice(at)]) }).toEqual({ at, messages, rest });
  }

  const msg = (data: string, id: string | null = null, event: string | null = null): StreamMessage => ({ id, event, data });

  it('ends lines with LF, CRLF or CR, mixed in one stream, wherever the chunks are cut', () => {
    expectEverywhere('id: 1\ndata: a\n\n', [msg('a', '1')]);
    expectEverywhere('id: 1\r\ndata: a\r\n\r\nid: 2\r\ndata: b\r\n\r\n', [msg('a', '1'), msg('b', '2')]);
    // the CR ending the last message waits for what follows it (below)
    expectEverywhere('id: 1\rdata: a\r\rid: 2\rdata: b\r\r', [msg('a', '1')], 'id: 2\rdata: b\r\r');
    expectEverywhere('id: 1\rdata: a\r\rid: 2\rdata: b\r\r:', [msg('a', '1'), msg('b', '2')], ':');
    expectEverywhere('data: a\r\n\ndata: b\r\rdata: c\n\r\ndata: d\r\n\rdata: e\n\n', [msg('a'), msg('b'), msg('c'), msg('d'), msg('e')]);
    // a CRLF is one line end, not a line end and a blank line
    expectEverywhere('data: a\r\ndata: b\r\n\r\n', [msg('a\nb')]);
  });

  it('holds a CR at the very end until the next chunk says whether it is half of a CRLF', () => {
    expect(parseEventStream('data: a\n\r')).toEqual({ messages: [], rest: 'data: a\n\r' });
    expect(parseEventStream('data: a\n\r\n')).toEqual({ messages: [msg('a')], rest: '' });
    expect(parseEventStream('data: a\n\rdata: b')).toEqual({ messages: [msg('a')], rest: 'data: b' });
    expect(parseEventStream('data: a\r\r')).toEqual({ messages: [], rest: 'data: a\r\r' });
    expect(read(['data: a\r\r', '\ndata: b\n', '\n'])).toEqual({ messages: [msg('a'), msg('b')], rest: '' });
  });

  it('joins data lines with LF, keeps everything after "data:" but one space, and sends an empty data too', () => {
    expectEverywhere('data: {"a":\ndata:  1,\ndata:"b": 2}\n\n', [msg('{"a":\n 1,\n"b": 2}')]);
    expectEverywhere('data\n\ndata:\n\ndata: \ndata\n\n', [msg(''), msg(''), msg('\n')]);
    expectEverywhere('data: a: b : c\n\n', [msg('a: b : c')]);
  });

  it('skips comments, also between the lines of a message, and messages without data', () => {
    expectEverywhere(':\n: keep-alive\n\n:data: no\ndata: a\n: between\ndata: b\n\n', [msg('a\nb')]);
    expectEverywhere('id: 7\nevent: item.added\n\n: only a comment\n\nretry: 1000\n\ndata: x\n\n', [msg('x')]);
  });

  it('reads id and event per message, ignores retry, unknown fields and field names of another case', () => {
    expectEverywhere(
      'retry: 5000\nid: 01\nevent: job.failed\ndata: a\n\ndata: b\n\nid:02\nevent:\nfoo: bar\nData: no\nretry: soon\ndata: c\n\n',
      [msg('a', '01', 'job.failed'), msg('b'), msg('c', '02')],
    );
    // an id holding NUL is no id; an empty one is an empty one; the last of each field wins
    expectEverywhere('id: a\0b\ndata: a\n\nid\ndata: b\n\nid: 1\nid: 2\nevent: x\nevent: y\ndata: c\n\n', [msg('a'), msg('b', ''), msg('c', '2', 'y')]);
  });

  it('reads a stream that starts with a byte order mark: the stream\'s decoder takes it off, even cut in the middle', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('data: {"id":"01"}\r\n\r\ndata: ñ\n\n')]);
    const whole = new TextDecoder().decode(bytes);
    expect(read([whole])).toEqual({ messages: [msg('{"id":"01"}'), msg('ñ')], rest: '' });
    // the TextDecoderStream of followEventStream, chunks cut inside the mark and inside a character
    for (let at = 1; at < bytes.length; at++) {
      const decoder = new TextDecoder();
      const chunks = [decoder.decode(bytes.slice(0, at), { stream: true }), decoder.decode(bytes.slice(at), { stream: true })];
      expect({ at, ...read(chunks) }).toEqual({ at, messages: [msg('{"id":"01"}'), msg('ñ')], rest: '' });
    }
  });

  it('keeps an unfinished message, with what it holds so far, for the next chunk', () => {
    expect(parseEventStream('data: a\n\nid: 2\ndata: b\n')).toEqual({ messages: [msg('a')], rest: 'id: 2\ndata: b\n' });
    expect(parseEventStream('data: a\n\n: keep-alive\n\n')).toEqual({ messages: [msg('a')], rest: '' });
    expect(parseEventStream('')).toEqual({ messages: [], rest: '' });
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
