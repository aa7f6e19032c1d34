import type { Counter, Histogram } from 'prom-client';
import { counter, FAST_BUCKETS, histogram } from './registry';

/** The label of every request no route matched: random 404 paths add no series. */
export const UNMATCHED_ROUTE = 'unmatched';

const requests = counter<'route' | 'method' | 'status'>({
  name: 'svc_http_requests_total',
  help: 'HTTP requests answered, by route template, method and status.',
  labelNames: ['route', 'method', 'status'],
});

const durations = histogram<'route' | 'method' | 'status'>({
  name: 'svc_http_request_duration_seconds',
  help: 'HTTP request duration, by route template, method and status.',
  labelNames: ['route', 'method', 'status'],
  buckets: FAST_BUCKETS,
});

export const rateLimitRejections = counter<'route' | 'method'>({
  name: 'svc_rate_limit_rejections_total',
  help: 'Requests refused by a rate limit (429), by route template and method.',
  labelNames: ['route', 'method'],
});

export const apiKeyCacheLookups = counter<'result'>({
  name: 'svc_api_key_cache_lookups_total',
  help: 'X-API-Key look-ups, by whether the in-process cache answered (hit) or Postgres was asked (miss).',
  labelNames: ['result'],
});

interface Pair {
  count: Counter.Internal;
  time: Histogram.Internal<'route' | 'method' | 'status'>;
}

/** The label children of each (route, method, status), made once: the per-request cost is two increments. */
const children = new Map<string, Pair>();
/** Methods outside this set share one label, so odd methods grow nothing. */
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/** Counts one answered request; `route` is a template (`/api/v1/jobs/:job_id`) or UNMATCHED_ROUTE. */
export function observeHttpRequest(route: string, method: string, status: number, seconds: number): void {
  const m = METHODS.has(method) ? method : 'OTHER';
  const key = `${route} ${m} ${status}`;
  let pair = children.get(key);
  if (!pair) {
    const labels = { route, method: m, status: String(status) };
    pair = { count: requests.labels(labels), time: durations.labels(labels) };
    children.set(key, pair);
  }
  pair.count.inc();
  pair.time.observe(seconds);
}
