import http from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from '../logger';
import { renderMetrics } from './registry';

/** True when the Authorization header carries `Bearer <token>` (no token configured: always). */
export function metricsAuthorized(token: string | undefined, authorization: string | undefined): boolean {
  if (!token) return true;
  const given = Buffer.from(authorization ?? '');
  const wanted = Buffer.from(`Bearer ${token}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /metrics` on its own port, for the processes that serve no HTTP otherwise (dispatcher,
 * agent): started only when METRICS_PORT is set. Anything else answers 404; a missing or wrong
 * METRICS_TOKEN 401.
 */
export async function startMetricsServer(opts: { port: number; host: string; token?: string; logger: Logger }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (!metricsAuthorized(opts.token, req.headers.authorization)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('unauthorized\n');
      return;
    }
    renderMetrics().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err: Error) => {
        opts.logger.warn('metrics scrape failed', { err: err.message });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('error\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const addr = server.address() as { port: number };
  const url = `http://${opts.host}:${addr.port}/metrics`;
  opts.logger.info('metrics listening', { url });
  return {
    url,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
