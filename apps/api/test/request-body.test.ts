import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { seedApiKey, seedQueue, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const MiB = 1024 * 1024;

interface Exchange {
  /** everything the server sent, as latin1 text */
  text: string;
  /** whether the server closed the connection before `waitMs` */
  closed: boolean;
}

/**
 * One TCP connection to the server: `send` writes raw HTTP/1.1; resolves when the server closes
 * the connection, when what it sent satisfies `until`, or after `waitMs` with `closed: false`
 * (the connection was left hanging; 25 s: a liveness bound, the server answers in well under a second)
 */
function exchange(port: number, send: (socket: net.Socket) => void, until?: (text: string) => boolean, waitMs = 25_000): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (until?.(text)) finish(false);
    });
    socket.on('error', () => undefined); // EPIPE / ECONNRESET while still writing: the server closed
    socket.on('close', () => finish(true));
    socket.on('connect', () => send(socket));
  });
}

// a response follows the previous body directly, so a status line need not start a line
/** A POST of raw bytes over the real server (supertest would serialise a Buffer as JSON). */
function postBytes(port: number, path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const statusLines = (text: string) => text.match(/HTTP\/1\.1 \d{3}/g) ?? [];
const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;

/**
 * The body of a request is read only once the caller is known (401, 429 and 403 come without
 * reading it), is limited to 2 MiB however it arrives, and a body left unread never leaves the
 * connection hanging: the answer then closes it.
 */
describe('request bodies', () => {
  let t: ApiTestContext;
  let server: http.Server;
  let port: number;
  let tenantId: string;
  let queue: string;
  const key = async (scopes?: string[]) => (await seedApiKey(t.sql, tenantId, scopes ? { scopes } : {})).key;
  const itemsPath = () => `/api/v1/queues/by-name/${queue}/items`;

  beforeAll(async () => {
    t = await createApiTestContext();
    server = http.createServer(t.app.callback());
    // long enough that a connection left hanging cannot be mistaken for one the server closed
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    tenantId = (await seedTenant(t.sql)).id;
    queue = (await seedQueue(t.sql, tenantId)).name;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await t.close();
  });

  describe('before the caller is known nothing is parsed', () => {
    it('answers malformed JSON without a key with 401, not 422', async () => {
      const res = await t.http.post(itemsPath()).set('Content-Type', 'application/json').send('{"data": ');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    });

    it('answers a 3 MiB body without a key with 401, discarding it unparsed, and then the next request on the connection', async () => {
      const { text } = await exchange(
        port,
        (s) => {
          s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${3 * MiB}\r\n\r\n`);
          s.write(`{"data":${'['.repeat(3 * MiB - 8)}`); // not even JSON: never parsed
          s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        },
        (sent) => statusLines(sent).length === 2,
      );
      expect(statusLines(text)).toEqual(['HTTP/1.1 401', 'HTTP/1.1 200']);
    });

    it('answers a body declared over 4 MiB without a key with 401 at once, closing the connection instead of reading it', async () => {
      const { text, closed } = await exchange(port, (s) => {
        s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${64 * MiB}\r\n\r\n`);
      });
      expect(statusLines(text)).toEqual(['HTTP/1.1 401']);
      expect(text).toMatch(/\r\nConnection: close\r\n/i);
      expect(closed).toBe(true);
    });

    it('answers a non-JSON body without a key with 401, not 415', async () => {
      const res = await t.http.post(itemsPath()).set('Content-Type', 'text/plain').send('hello');
      expect(res.status).toBe(401);
    });

    it('answers a gzip body that inflates past 2 MiB with 401 without a key', async () => {
      const bomb = gzipSync(`{"data":"${' '.repeat(8 * MiB)}"}`);
      const res = await postBytes(port, itemsPath(), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, bomb);
      expect(res.status).toBe(401);
    });

    it('answers 403 for a key without the scope before looking at the body', async () => {
      const res = await t.http.post(itemsPath()).set('X-API-Key', await key(['queues:read'])).set('Content-Type', 'application/json').send('{');
      expect(res.status).toBe(403);
    });

    it('answers an unauthenticated chunked body that never ends with 401 and Connection: close, within seconds', async () => {
      const { text, closed } = await exchange(port, (s) => {
        s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
        s.write(chunk(`{"data":"${'x'.repeat(64 * 1024)}`)); // and never the last chunk
      });
      expect(statusLines(text)).toEqual(['HTTP/1.1 401']);
      expect(text).toMatch(/\r\nConnection: close\r\n/i);
      expect(closed).toBe(true);
    });

    it('cuts off an unauthenticated chunked body streamed without pause', async () => {
      let streaming = true;
      const { closed } = await exchange(port, (s) => {
        s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
        const piece = chunk('x'.repeat(64 * 1024));
        const pump = () => {
          while (streaming && s.write(piece));
          if (streaming) s.once('drain', pump);
        };
        pump();
      });
      streaming = false;
      expect(closed).toBe(true);
    });
  });

  describe('once it is known', () => {
    it('refuses a Content-Length over 2 MiB with 413 before reading it, keeping the connection once the body is discarded', async () => {
      const k = await key();
      const { text } = await exchange(
        port,
        (s) => {
          s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${k}\r\nContent-Type: application/json\r\nContent-Length: ${3 * MiB}\r\n\r\n`);
          s.write('x'.repeat(3 * MiB));
          s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        },
        (sent) => statusLines(sent).length === 2,
      );
      expect(statusLines(text)).toEqual(['HTTP/1.1 413', 'HTTP/1.1 200']);
      expect(text).toContain('"code":"PAYLOAD_TOO_LARGE"');
    });

    it('refuses a non-JSON body with 415', async () => {
      const res = await t.http.post(itemsPath()).set('X-API-Key', await key()).set('Content-Type', 'text/plain').send('hello');
      expect(res.status).toBe(415);
      expect(res.body.error.code).toBe('HTTP_ERROR');
    });

    it('counts a compressed body after inflating it: 413 past 2 MiB; an unknown encoding is a 415, a corrupt stream a 422', async () => {
      const k = await key();
      const gzipped = { 'X-API-Key': k, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' };
      const bomb = gzipSync(`{"data":"${' '.repeat(8 * MiB)}"}`);
      expect(bomb.length).toBeLessThan(MiB);
      const big = await postBytes(port, itemsPath(), gzipped, bomb);
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      const fine = await postBytes(port, itemsPath(), gzipped, gzipSync('{"data":{"zipped":true}}'));
      expect(fine.status).toBe(200);
      expect(fine.body.data.data).toEqual({ zipped: true });
      const unknown = await postBytes(port, itemsPath(), { ...gzipped, 'Content-Encoding': 'zstd-x' }, Buffer.from('{"data":{}}'));
      expect(unknown.status).toBe(415);
      const corrupt = await postBytes(port, itemsPath(), gzipped, Buffer.from('not gzip at all'));
      expect(corrupt.status).toBe(422);
      expect(corrupt.body.error.details).toEqual([{ field: 'body', message: 'el cuerpo no se pudo decodificar' }]);
    });

    it('answers malformed JSON for a queue that does not exist with 404: parsing waits for the handler', async () => {
      const res = await t.http.post('/api/v1/queues/by-name/nope/items').set('X-API-Key', await key()).set('Content-Type', 'application/json').send('{"data": ');
      expect(res.status).toBe(404);
    });

    it('answers a chunked body over 2 MiB with 413, then the next request on the same connection', async () => {
      const k = await key();
      const { text } = await exchange(
        port,
        (s) => {
          s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${k}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
          s.write(chunk('{"data":"'));
          for (let i = 0; i < 48; i++) s.write(chunk('x'.repeat(64 * 1024)));
          s.write(chunk('"}'));
          s.write('0\r\n\r\n');
          s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        },
        (sent) => statusLines(sent).length === 2,
      );
      expect(statusLines(text)).toEqual(['HTTP/1.1 413', 'HTTP/1.1 200']);
      expect(text).toContain('"code":"PAYLOAD_TOO_LARGE"');
    });

    it('closes the connection of a chunked body over 2 MiB that does not end, after its 413', async () => {
      const k = await key();
      const { text, closed } = await exchange(port, (s) => {
        s.write(`POST ${itemsPath()} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${k}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
        for (let i = 0; i < 40; i++) s.write(chunk('x'.repeat(64 * 1024))); // and never the last chunk
      });
      expect(statusLines(text)).toEqual(['HTTP/1.1 413']);
      expect(text).toMatch(/\r\nConnection: close\r\n/i);
      expect(closed).toBe(true);
    });

    it('keeps the connection for a small body on a route that takes none, and answers the next request on it', async () => {
      const k = await key();
      const body = '{"unused":true}';
      const { text } = await exchange(
        port,
        (s) => {
          s.write(
            `POST /api/v1/jobs/00000000-0000-4000-8000-000000000000/stop HTTP/1.1\r\nHost: x\r\nX-API-Key: ${k}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          );
          s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        },
        (sent) => statusLines(sent).length === 2,
      );
      expect(statusLines(text)).toEqual(['HTTP/1.1 404', 'HTTP/1.1 200']);
      expect(text).not.toMatch(/Connection: close/i);
    });
  });
});
