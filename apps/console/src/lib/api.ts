import { createClient, type Client, type components, type DataOf, type ItemOf } from '@svc/client';
import { t } from '../i18n';
import { consoleError, toApiError } from './errors';
import { parseEventStream, type FeedEvent } from './events';

/*
 * The console calls the API through the platform's typed client (@svc/client,
 * docs/decisions/typed-client.md): every call names its operation (`listWorkspaceJobs`) and its
 * parameters and answer are the OpenAPI document's, so the console declares no response type of
 * its own. What the console adds: the session's bearer token, a 401 that ends the session, and
 * errors as its pages show them (lib/errors.ts).
 */

/** Called when the API refuses the session's token (401): the session is over. */
let onUnauthorized: () => void = () => undefined;
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

/** The calls the pages make: the client's `call` (the answer's `data`) and `request` (the whole body, `meta` too). */
export type ConsoleApi = Pick<Client, 'call' | 'request'>;

/**
 * The client of a session (or of the sign-in page, without a token). It does not retry by itself:
 * React Query's retry policy (main.tsx) decides what is asked again, as before the client.
 */
export function consoleApi(token?: string): ConsoleApi {
  const client = createClient({ baseUrl: window.location.origin, token, retries: 0 });
  // each call's error as the pages show it; a 401 with a token ends the session
  const guarded = <F extends (...args: never[]) => Promise<unknown>>(send: F): F =>
    (async (...args: Parameters<F>) => {
      try {
        return await send(...args);
      } catch (err) {
        const error = consoleError(err, { networkError: t.common.networkError, unexpectedError: t.common.unexpectedError });
        if (error.status === 401 && token) onUnauthorized();
        throw error;
      }
    }) as F;
  return { call: guarded(client.call), request: guarded(client.request) };
}

/**
 * Follows the event stream (`GET /settings/events/stream`) until it ends or `signal` aborts it.
 * The stream takes the bearer header, which EventSource cannot send, so it is read through fetch
 * (same origin: the CSP's `connect-src 'self'` allows it). Resolves when the server ends the
 * stream (its token lapsed, a shutdown, Postgres away: the caller reconnects after the last id);
 * a refusal throws the console's ApiError, and a 401 ends the session as any other call's does.
 */
export async function followEventStream(
  token: string,
  from: { after?: string; types?: string },
  onEvents: (events: FeedEvent[]) => void,
  signal: AbortSignal,
  onOpen: () => void = () => undefined,
): Promise<void> {
  const query = new URLSearchParams(setFilters({ types: from.types }));
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
  if (from.after) headers['Last-Event-ID'] = from.after;
  let res: Response;
  try {
    res = await fetch(`${window.location.origin}/api/v1/settings/events/stream${query.size ? `?${query}` : ''}`, { headers, signal, cache: 'no-store' });
  } catch (err) {
    if (signal.aborted) return;
    throw consoleError(err, { networkError: t.common.networkError, unexpectedError: t.common.unexpectedError });
  }
  if (res.status !== 200 || !res.body) {
    const body: unknown = await res.json().catch(() => null);
    if (res.status === 401) onUnauthorized();
    throw toApiError(res.status, body, t.common.unexpectedError);
  }
  onOpen();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      const parsed = parseEventStream(rest + value);
      rest = parsed.rest;
      const events = parsed.messages.map((m) => JSON.parse(m.data) as FeedEvent);
      if (events.length) onEvents(events);
    }
  } catch (err) {
    // an abort (pause, leaving the page) is the caller's own doing; a cut connection ends the stream
    if (signal.aborted) return;
    if (err instanceof SyntaxError) throw toApiError(0, null, t.common.unexpectedError);
  }
}

/** The filters that are set (empty ones are left out of the query string). */
export function setFilters<Q extends Record<string, string | number | boolean | null | undefined>>(query: Q): { [K in keyof Q]?: Exclude<Q[K], '' | null> } {
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== '')) as { [K in keyof Q]?: Exclude<Q[K], '' | null> };
}

/** What a read answers, as the pages keep it: `data` and, for a list, its page's `meta`. */
export interface Answer<T> {
  data: T;
  meta?: PageMeta;
}

/* The records the pages show, as the API's OpenAPI document declares them. */

export type PageMeta = components['schemas']['PageMeta'];
export type CursorMeta = components['schemas']['CursorMeta'];
export type LoginAnswer = DataOf<'logIn'>;
export type User = LoginAnswer['user'];
export type Queue = DataOf<'getQueue'>;
export type QueueStats = DataOf<'getQueueStats'>;
export type QueueItem = ItemOf<'listWorkspaceQueueItems'>;
export type ItemStatus = QueueItem['status'];
export type Machine = ItemOf<'listWorkspaceMachines'>;
export type Job = DataOf<'getWorkspaceJob'>;
export type JobLogs = DataOf<'readJobLogs'>;
export type Process = ItemOf<'listWorkspaceProcesses'>;
export type Folder = ItemOf<'listWorkspaceFolders'>;
export type Asset = ItemOf<'listWorkspaceAssets'>;
export type MachineWithKey = DataOf<'createMachine'>;
export type ApiKey = ItemOf<'listWorkspaceApiKeys'>;
export type ApiKeyWithSecret = DataOf<'createApiKey'>;
export type AuditEntry = ItemOf<'readAuditLog'>;
export type Schedule = DataOf<'getSchedule'>;
export type SchedulePreview = DataOf<'previewSchedule'>;
export type Trigger = DataOf<'getQueueTrigger'>;
export type BulkAction = DataOf<'getWorkspaceBulkAction'>;
export type WorkspaceUser = ItemOf<'listUsers'>;
export type WorkspaceUserWithPassword = DataOf<'createUser'>;

/** The choices the forms and filters offer, checked against the document's enums. */
export const ENVIRONMENTS = ['dev', 'staging', 'production'] as const satisfies ReadonlyArray<NonNullable<ApiKey['environments']>[number]>;
export type Environment = (typeof ENVIRONMENTS)[number];
export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'system', 'machine'] as const satisfies ReadonlyArray<AuditEntry['actor_type']>;
export const USER_ROLES = ['member', 'admin'] as const satisfies ReadonlyArray<WorkspaceUser['role']>;
export const MISSED_RUNS = ['skip', 'run_once'] as const satisfies ReadonlyArray<Schedule['missed_runs']>;
// the statuses' list is core's, bundled from a module without dependencies
export { QUEUE_ITEM_STATUSES as ITEM_STATUSES } from '@svc/core/queue-items/statuses';
export type QueueSeries = DataOf<'getQueueSeries'>;
export type MachineSeries = DataOf<'getMachineSeries'>;
export type SeriesWindow = QueueSeries['window'];
