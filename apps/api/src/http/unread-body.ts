import type { IncomingMessage, ServerResponse } from 'node:http';
import { BODY_LIMIT_BYTES } from './body';

/** At most this much of a body nobody read is discarded to keep its connection… */
export const UNREAD_BODY_DISCARD_BYTES = 2 * BODY_LIMIT_BYTES;
/** …and for at most this long. */
export const UNREAD_BODY_DISCARD_MS = 2_000;

/**
 * A request body not read to its end — a route that takes none, an answer given before reading
 * it (401, 403, 429, 404 for an unknown route, 413 from Content-Length), a read stopped midway (a
 * chunked or compressed body past the limit) — stands between the response and the next request
 * on the connection. Left to itself, Node discards an untouched body however long it is (a caller
 * could stream without end), and never finishes one whose reading started and stopped: the next
 * request hung until the keep-alive timeout.
 *
 * So before the response goes out, the rest of the body is discarded, unparsed: one that ends
 * within UNREAD_BODY_DISCARD_BYTES and UNREAD_BODY_DISCARD_MS keeps the connection for the next
 * request; past either bound (or declared longer) the response says `Connection: close` and
 * Node closes the connection after it. Discarding first rather than closing at once matters to the client: a
 * socket closed with bytes still arriving is reset by the kernel, and a client still sending its
 * body can lose the answer to that reset (most clients read the answer only once they have sent
 * the body). Returns undefined, without waiting, when the body was read.
 */
export function settleUnreadBody(req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
  if (req.complete) return undefined;
  if (Number(req.headers['content-length']) > UNREAD_BODY_DISCARD_BYTES) {
    // too long to discard, as declared: no use reading any of it
    if (!res.headersSent) res.setHeader('Connection', 'close');
    return undefined;
  }
  const socket = req.socket;
  return new Promise((resolve) => {
    let left = UNREAD_BODY_DISCARD_BYTES;
    const settle = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      socket.off('close', onGone);
      if (!ended && !res.headersSent) res.setHeader('Connection', 'close');
      resolve();
    };
    const onData = (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) settle(false);
    };
    const onEnd = () => settle(true);
    const onGone = () => settle(false);
    const timer = setTimeout(onGone, UNREAD_BODY_DISCARD_MS);
    req.on('data', onData);
    req.once('end', onEnd);
    socket.once('close', onGone);
    // read here, not by Node's own discarding, which cannot be bounded; a decompressor the body
    // reader stopped consuming would otherwise hold the request back
    req.unpipe();
    req.resume();
  });
}
