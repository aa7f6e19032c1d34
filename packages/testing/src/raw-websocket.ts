import { randomBytes } from 'node:crypto';
import net from 'node:net';

/**
 * A WebSocket client written by hand on a TCP socket, for clients no library would be: it
 * never answers the server's close frame (and answers pings only when asked to), so a test can
 * play a robot that ignores the server's close or its pings. It speaks just enough of RFC 6455:
 * the upgrade, masked frames out (up to 64 KiB), unmasked frames in.
 */
export interface RawWebSocket {
  /** frames received so far (opcode 0x1 text, 0x8 close, 0x9 ping) */
  readonly frames: Array<{ opcode: number; payload: Buffer; at: number }>;
  /** texts received, parsed as JSON */
  readonly messages: Array<Record<string, unknown>>;
  sendText(text: string): void;
  /** whether the server ended the TCP connection */
  readonly ended: boolean;
  /** resolves when the TCP connection is gone */
  readonly closed: Promise<void>;
  /** stops reading the socket: what the server sends piles up (a robot that does not read) */
  pause(): void;
  destroy(): void;
}

export async function openRawWebSocket(baseUrl: string, path: string, authorization: string, options: { answerPings?: boolean } = {}): Promise<RawWebSocket> {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => undefined);
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nAuthorization: ${authorization}\r\n\r\n`,
  );
  const frames: RawWebSocket['frames'] = [];
  const messages: RawWebSocket['messages'] = [];
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  let ended = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => {
    ended = true;
    resolve();
  }));
  const opened = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString();
        buffer = buffer.subarray(end + 4);
        if (!head.startsWith('HTTP/1.1 101')) {
          reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
          return;
        }
        upgraded = true;
        resolve();
      }
      for (;;) {
        const frame = readFrame(buffer);
        if (!frame) break;
        buffer = buffer.subarray(frame.size);
        frames.push({ opcode: frame.opcode, payload: frame.payload, at: Date.now() });
        if (frame.opcode === 0x1) messages.push(JSON.parse(frame.payload.toString()) as Record<string, unknown>);
        if (frame.opcode === 0x9 && options.answerPings && !socket.destroyed) socket.write(maskedFrame(0xa, frame.payload));
      }
    });
    socket.once('close', () => reject(new Error('closed before the upgrade')));
  });
  await opened;
  return {
    frames,
    messages,
    sendText(text) {
      if (!socket.destroyed) socket.write(maskedFrame(0x1, Buffer.from(text)));
    },
    get ended() {
      return ended;
    },
    closed,
    pause: () => socket.pause(),
    destroy: () => socket.destroy(),
  };
}

/** A server frame (unmasked) at the start of `buf`, or null while it is incomplete. */
function readFrame(buf: Buffer): { opcode: number; payload: Buffer; size: number } | null {
  if (buf.length < 2) return null;
  const opcode = buf[0]! & 0x0f;
  let length = buf[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (buf.length < 4) return null;
    length = buf.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (buf.length < 10) return null;
    length = Number(buf.readBigUInt64BE(2));
    offset = 10;
  }
  if (buf.length < offset + length) return null;
  return { opcode, payload: buf.subarray(offset, offset + length), size: offset + length };
}

function maskedFrame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const head = payload.length < 126
    ? Buffer.from([0x80 | opcode, 0x80 | payload.length])
    : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 126]), Buffer.from([payload.length >> 8, payload.length & 0xff])]);
  const body = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([head, mask, body]);
}
