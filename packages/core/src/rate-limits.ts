/**
 * Per-route rate limits of the public API, requests per one-minute window.
 * Route ids are `METHOD path-template` as mounted under /api/v1.
 */
export const RATE_LIMIT_WINDOW_SECONDS = 60;
export const DEFAULT_RATE_LIMIT = 120;

export const ROUTE_RATE_LIMITS: Readonly<Record<string, number>> = {
  'GET /jobs/list': 60,
  'GET /jobs/:job_id': 60,
  'POST /jobs/trigger': 30,
  'POST /jobs/:job_id/stop': 30,
  'GET /processes/list': 60,
  'GET /machines/list': 60,
  'GET /assets/by-name/:name': 30,
  'POST /queues/by-name/:name/items': 60,
  'GET /queues/by-name/:name/items': 60,
  'POST /queues/by-name/:name/items/bulk': 20,
  'POST /webhooks/trigger/:process_id': 60,
};

export function rateLimitFor(routeId: string): number {
  return ROUTE_RATE_LIMITS[routeId] ?? DEFAULT_RATE_LIMIT;
}
