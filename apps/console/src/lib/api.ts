import { t } from '../i18n';
import { ApiError, toApiError } from './errors';
import type { PageMeta } from './types';

export const API_BASE = '/api/v1';

/** Called when the API refuses the session's token (401): the session is over. */
let onUnauthorized: () => void = () => undefined;
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

export interface Answer<T> {
  data: T;
  meta?: PageMeta;
}

/**
 * One request to the API: JSON in, the `{success, data, meta}` wrapper out, or an ApiError with
 * the envelope's Spanish message and field issues.
 */
export async function apiRequest<T>(path: string, opts: { method?: string; body?: unknown; token?: string } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  let res: Response;
  try {
    res = await fetch(`${API_BASE}${path}`, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', t.common.networkError);
  }
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const err = toApiError(res.status, body, t.common.unexpectedError);
    if (res.status === 401 && opts.token) onUnauthorized();
    throw err;
  }
  return body as Answer<T>;
}

/** Query string of the filters that are set (empty ones are left out). */
export function queryString(params: Record<string, string | number | undefined | null>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return s ? `?${s}` : '';
}
