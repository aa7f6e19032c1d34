/**
 * How often a page that refreshes by itself may read again. The API allows an access token 120
 * requests a minute (docs/endpoints.md); the overview makes two reads per queue (its figures and its
 * line) besides its three others, so with many queues it slows down rather than reach the limit, keeping a fifth
 * of the budget for what the operator does meanwhile.
 */
export const RATE_LIMIT_PER_MINUTE = 120;
export const FASTEST_REFRESH_MS = 5_000;
const SHARE_FOR_REFRESH = 0.8;

export function refreshIntervalMs(requestsPerRefresh: number): number {
  const perMinute = RATE_LIMIT_PER_MINUTE * SHARE_FOR_REFRESH;
  return Math.max(FASTEST_REFRESH_MS, Math.ceil((requestsPerRefresh * 60_000) / perMinute));
}
