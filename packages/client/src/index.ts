import createFetchClient from 'openapi-fetch';
import type { components, operations, paths } from './generated/openapi';
import { OPERATIONS, type OperationId } from './generated/operations';

export type { components, operations, paths, OperationId };
export { OPERATIONS };

/*
 * The platform's typed client (docs/decisions/typed-client.md). Every operation of the API is
 * called by its operationId with the parameters and body its OpenAPI declaration gives, and
 * answers the `data` of its success envelope; an error answer is thrown as an ApiError. Requests
 * that are safe to send again are retried on 429 and 5xx (honouring Retry-After) and on a lost
 * connection: reads, updates and deletes, and the POSTs that take an Idempotency-Key, which the
 * client generates, so a retried POST never adds twice.
 */

type Op<K extends OperationId> = operations[K];
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type SuccessStatus = 200 | 201 | 202;
/** The whole success body of an operation: `{success, data}`, with `meta` for a list. */
export type SuccessBody<K extends OperationId> = {
  [S in keyof Op<K>['responses']]: S extends SuccessStatus ? JsonOf<Op<K>['responses'][S]> : never;
}[keyof Op<K>['responses']];
/** What an operation answers: the `data` of its success body. */
export type DataOf<K extends OperationId> = SuccessBody<K> extends { data: infer D } ? D : SuccessBody<K>;
/** The element of a list operation's `data`. */
export type ItemOf<K extends OperationId> = DataOf<K> extends ReadonlyArray<infer I> ? I : never;
export type PathOf<K extends OperationId> = Op<K>['parameters'] extends { path: infer P } ? P : never;
export type QueryOf<K extends OperationId> = Op<K>['parameters'] extends { query?: infer Q } ? Exclude<Q, undefined> : never;
export type BodyOf<K extends OperationId> = Op<K> extends { requestBody: infer B } ? JsonOf<B> : Op<K> extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never;

/** The operations whose `data` is a page of a list. */
export type ListOperationId = { [K in OperationId]: (typeof OPERATIONS)[K]['paged'] extends false ? never : K }[OperationId];

export interface CallOptions {
  /** more request headers (the client sets authentication, content type and Idempotency-Key) */
  headers?: Record<string, string>;
  /** abandons the call (not retried) */
  signal?: AbortSignal;
  /** this call's own bound, for each try (default: the client's) */
  timeoutMs?: number;
  /** for an operation that takes one: this key instead of a generated one (to repeat a call of your own later) */
  idempotencyKey?: string;
}

/** The parameters of an operation: `path` when it has path parameters, `query`, `body` when it takes one. */
export type CallInit<K extends OperationId> =
  ([PathOf<K>] extends [never] ? { path?: undefined } : { path: PathOf<K> }) &
  ([QueryOf<K>] extends [never] ? { query?: undefined } : { query?: QueryOf<K> }) &
  ([BodyOf<K>] extends [never] ? { body?: undefined } : { body: BodyOf<K> }) &
  CallOptions;

/** What the implementation reads of any operation's init. */
type AnyInit = { path?: unknown; query?: unknown; body?: unknown } & CallOptions;

type InitArg<K extends OperationId> = [PathOf<K>] extends [never] ? ([BodyOf<K>] extends [never] ? [init?: CallInit<K>] : [init: CallInit<K>]) : [init: CallInit<K>];

export interface ClientOptions {
  /** where the API is, e.g. `https://svc.example.com` (the paths carry /api/v1) */
  baseUrl: string;
  /** an API key (`X-API-Key`), for the public operations */
  apiKey?: string;
  /** a user's access token (`Authorization: Bearer`), for the console's operations under /settings */
  token?: string;
  /** bound of each try, in milliseconds (default 30,000) */
  timeoutMs?: number;
  /** tries after the first for a call that may be sent again (default 3) */
  retries?: number;
  /** longest wait between two tries, whatever Retry-After says (default 60,000 ms) */
  maxRetryDelayMs?: number;
  /** another fetch (a proxy agent, a test's fault injection); default globalThis.fetch */
  fetch?: (request: Request) => Promise<Response>;
}

/** An error answer of the API: its `error.code`, Spanish `message`, `details` and `request_id`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
    readonly requestId: string | null,
    /** seconds the server asked to wait (429, 503): Retry-After's delta-seconds, or the seconds left until its HTTP-date; else null */
    readonly retryAfterSeconds: number | null,
    /** the answer's body as parsed (the envelope, or what a proxy sent instead), for callers that read it themselves */
    readonly body: unknown = null,
  ) {
    super(message);
  }
}

/** A try ran out of its time (the call was retried as long as it could). */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);

export interface Client {
  /** Calls an operation by its operationId; answers its `data`, throws ApiError for an error answer. */
  call<K extends OperationId>(operation: K, ...init: InitArg<K>): Promise<DataOf<K>>;
  /** As `call`, answering the whole success body (`data` and, for a list, `meta`). */
  request<K extends OperationId>(operation: K, ...init: InitArg<K>): Promise<SuccessBody<K>>;
  /** Every element of a list operation, page after page (by page number or by cursor), fetched as you iterate. */
  list<K extends ListOperationId>(operation: K, ...init: InitArg<K>): AsyncIterable<ItemOf<K>>;
  /** The underlying openapi-fetch client, typed by path, for what the calls above do not cover. */
  readonly raw: ReturnType<typeof createFetchClient<paths>>;
}

export function createClient(options: ClientOptions): Client {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const maxDelay = options.maxRetryDelayMs ?? 60_000;
  const headers: Record<string, string> = {};
  if (options.apiKey) headers['X-API-Key'] = options.apiKey;
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const raw = createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  async function request(operation: OperationId, init: AnyInit = {}): Promise<unknown> {
    const op = OPERATIONS[operation];
    if (!op) throw new TypeError(`unknown operation ${String(operation)}`);
    const callHeaders: Record<string, string> = { ...init.headers };
    if (op.idempotencyKey) callHeaders['Idempotency-Key'] = init.idempotencyKey ?? newIdempotencyKey();
    // a POST without an Idempotency-Key may have been applied when its answer is lost
    const repeatable = op.method !== 'POST' || 'Idempotency-Key' in callHeaders;
    for (let attempt = 0; ; attempt++) {
      init.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(init.timeoutMs ?? timeoutMs);
      const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      let res: { data?: unknown; error?: unknown; response: Response };
      try {
        res = await raw.request(op.method.toLowerCase() as never, op.path as never, {
          params: { path: init.path, query: init.query },
          body: init.body,
          headers: callHeaders,
          signal,
        } as never);
      } catch (err) {
        if (init.signal?.aborted) throw err;
        const timedOut = timeout.aborted;
        if (repeatable && attempt < retries) {
          await pause(backoff(attempt, null, maxDelay), init.signal);
          continue;
        }
        throw timedOut ? new TimeoutError(`${op.method} ${op.path}: no answer within ${init.timeoutMs ?? timeoutMs} ms`, { cause: err }) : err;
      }
      if (res.response.ok) return res.data;
      const error = apiError(res.response, res.error);
      // a 429 was refused before any work: sending it again is always safe
      if (RETRIED_STATUSES.has(error.status) && (repeatable || error.status === 429) && attempt < retries) {
        await pause(backoff(attempt, error.retryAfterSeconds, maxDelay), init.signal);
        continue;
      }
      throw error;
    }
  }

  async function* list(operation: OperationId, init: AnyInit = {}): AsyncGenerator<unknown> {
    const paging = OPERATIONS[operation]?.paged;
    if (!paging) throw new TypeError(`${String(operation)} is not a list`);
    const query = { ...(init.query as Record<string, unknown> | undefined) };
    for (;;) {
      const body = (await request(operation, { ...init, query })) as { data: unknown[]; meta: Record<string, unknown> };
      yield* body.data;
      if (body.data.length === 0) return;
      if (paging === 'page') {
        const page = Number(query.page ?? 1);
        if (page >= Number(body.meta.pages)) return;
        query.page = page + 1;
      } else {
        const next = body.meta.next_cursor as string | null;
        // a live feed answers the same cursor when nothing newer came: the end for now
        if (!next || next === query.cursor) return;
        query.cursor = next;
      }
    }
  }

  return {
    raw,
    request: ((operation: OperationId, init?: AnyInit) => request(operation, init)) as unknown as Client['request'],
    call: (async (operation: OperationId, init?: AnyInit) => {
      const body = await request(operation, init);
      return body !== null && typeof body === 'object' && 'data' in body && (body as { success?: unknown }).success === true ? (body as { data: unknown }).data : body;
    }) as unknown as Client['call'],
    list: ((operation: OperationId, init?: AnyInit) => list(operation, init)) as unknown as Client['list'],
  };
}

function apiError(response: Response, body: unknown): ApiError {
  const seconds = retryAfterSeconds(response.headers.get('retry-after'));
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown; request_id?: unknown } } | undefined)?.error;
  const requestId = typeof e?.request_id === 'string' ? e.request_id : response.headers.get('x-request-id');
  if (e && typeof e.code === 'string' && typeof e.message === 'string') {
    return new ApiError(response.status, e.code, e.message, e.details ?? null, requestId, seconds, body);
  }
  // not the API's envelope (a proxy's page, say)
  return new ApiError(response.status, 'HTTP_ERROR', `HTTP ${response.status} ${response.statusText}`.trim(), null, requestId, seconds, body ?? null);
}

/**
 * Retry-After in seconds: delta-seconds as given, an HTTP-date as the seconds left until it
 * (rounded up: a try sent before the date would be refused again; 0 once it is past), else null.
 * Both forms are HTTP's (RFC 9110, 10.2.3), and proxies and other servers in front of the API
 * send the date.
 */
function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = httpDate(text);
  return at === null ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const RFC850_DATE = new RegExp(`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (\\d{2})-(${MONTH})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`);

/**
 * An HTTP-date as epoch milliseconds, or null: the IMF-fixdate servers send, and the two obsolete
 * forms a recipient must still accept (RFC 9110, 5.6.7). Matched exactly rather than given to
 * Date.parse, which takes almost anything (`1.5` is a date in 2001) and reads asctime, which
 * names no zone, as local time.
 */
function httpDate(text: string): number | null {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(text);
  if (m) {
    // a two-digit year more than 50 years ahead is the latest past year ending in those digits
    const thisYear = new Date().getUTCFullYear();
    let year = thisYear - (thisYear % 100) + Number(m[3]);
    if (year > thisYear + 50) year -= 100;
    return utc(year, m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  }
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return null;
}

function utc(year: number, month: string, day: number, hours: string, minutes: string, seconds: string): number | null {
  const time = Date.UTC(year, MONTHS.indexOf(month), day, Number(hours), Number(minutes), Number(seconds));
  // Date.UTC rolls 31 Feb over into March: a date that does not exist is no date
  const d = new Date(time);
  return d.getUTCDate() === day && d.getUTCHours() === Number(hours) && d.getUTCMinutes() === Number(minutes) && d.getUTCSeconds() === Number(seconds)
    ? time : null;
}

/** The wait before the next try: what Retry-After says, else exponential with jitter. */
function backoff(attempt: number, retryAfterSeconds: number | null, maxDelay: number): number {
  if (retryAfterSeconds !== null) return Math.min(maxDelay, retryAfterSeconds * 1000);
  return Math.min(maxDelay, 200 * 2 ** attempt * (0.75 + Math.random() / 2));
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/**
 * A random UUID for an Idempotency-Key. Browsers give `crypto.randomUUID` only to secure contexts
 * (HTTPS, localhost); a console opened over plain HTTP on a private address still has
 * `getRandomValues`, from which a version-4 UUID is made the same way.
 */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
