import http from 'node:http';

export interface OnceResponse {
  status: number;
  headers: { get(name: string): string | null };
  json(): Promise<unknown>;
}

/**
 * One HTTP request on a connection of its own. `fetch` (undici) sends an idempotent request again
 * by itself when a kept connection turns out closed, and a rate limiter rightly counts both: a
 * test that counts exactly the requests it sends uses this instead.
 */
export function requestOnce(url: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<OnceResponse> {
  return new Promise((resolve, reject) => {
    http.request(url, { method: opts.method ?? 'GET', agent: false, headers: opts.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({
        status: res.statusCode ?? 0,
        headers: { get: (name) => { const v = res.headers[name.toLowerCase()]; return v === undefined ? null : String(v); } },
        json: async () => JSON.parse(body) as unknown,
      }));
      res.on('error', reject);
    }).on('error', reject).end();
  });
}
