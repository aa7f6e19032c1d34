import type { Context, Middleware } from 'koa';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import {
  rateLimitFor, validate, textProblem, textIssue, printableText, NotFoundError, ValidationError, DEFAULT_RATE_LIMIT, type PlanFeature, type Scope,
} from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from './state';
import { createRouter, type AppRouter } from './router';
import { authenticateApiKey, checkKeyIp, requirePlanFeature, requireScope, type ApiKeyStore } from '../auth/api-key';
import { authenticateUser, requireAdmin } from '../auth/bearer';
import { rateLimit } from '../middleware/rate-limit';
import type { Guard } from './guard';
import { readRequestBody } from './body';

export type RouteAuth =
  | { kind: 'api_key'; scope?: Scope; feature?: PlanFeature }
  /** `pendingPassword`: open to a user who must still replace a one-time password (else 403 for them) */
  | { kind: 'user'; admin: boolean; pendingPassword?: boolean }
  | { kind: 'none' };

/**
 * One declaration per route: the schemas here validate the request *and* feed the OpenAPI
 * document (one source). Auth runs in the public error order: key validity 401 → rate limit
 * 429 → IP/scope/plan 403; only then is a declared body read (413, 415). Existence (404) and data
 * validity (422) are the handler's, in that order, which is why inputs are parsed and validated
 * lazily: the handler calls `input.body()` after it has found the resource. Text Postgres cannot
 * store is refused here, once for every route (docs/decisions/hostile-input.md).
 */
export interface RouteSpec<P extends TObject | undefined = TObject | undefined, Q extends TObject | undefined = TObject | undefined, B extends TSchema | undefined = TSchema | undefined> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Koa path under /api/v1, e.g. `/queues/by-name/:name/items`. */
  path: string;
  /**
   * The operation's name in the OpenAPI document and the typed client (`listQueueItems`): stable,
   * camelCase, unique. A console twin of a public operation says so (`listWorkspaceJobs`).
   */
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuth;
  params?: P;
  query?: Q;
  body?: B;
  /** Schema of `data` in the success wrapper (or of each element when `paged`). */
  response?: TSchema;
  /**
   * The success body is not the JSON envelope but a download of records, one per NDJSON line or
   * CSV row (the exports: docs/decisions/export.md); `record` is the schema of each.
   */
  download?: { record: TSchema };
  /** A list: `true` pages by number (PageMeta), `'cursor'` by keyset (CursorMeta). */
  paged?: boolean | 'cursor';
  successStatus?: number;
  /** Error statuses this route can answer besides the ones implied by `auth`. */
  errors?: number[];
  /** Requests per minute; by default the contract's table, else 120. */
  rateLimit?: number;
  /** Extra request headers worth documenting, e.g. Idempotency-Key. */
  headers?: Array<{ name: string; description: string; required?: boolean }>;
}

type Infer<S> = S extends TSchema ? Static<S> : undefined;

export interface RouteInput<P, Q, B> {
  params(): P;
  query(): Q;
  body(): B;
  /**
   * The body as parsed JSON before any check of its schema, or undefined when `body()` would
   * refuse it whatever the schema (malformed, unstorable text, too deep): for reading an id out
   * of the body, or hashing it, before the checks that answer first.
   */
  peekBody(): unknown;
}

export type RouteHandler<P, Q, B> = (ctx: Context & { state: AppState }, input: RouteInput<P, Q, B>) => Promise<void> | void;

/** Every route declared in this process, for the OpenAPI document. */
export const routeCatalog = new Map<string, RouteSpec>();

export interface RouteContext {
  deps: ApiDeps;
  keyStore: ApiKeyStore;
}

function authChain(rc: RouteContext, spec: RouteSpec): Guard[] {
  const routeId = `${spec.method.toUpperCase()} ${spec.path}`;
  const points = spec.rateLimit ?? rateLimitFor(routeId) ?? DEFAULT_RATE_LIMIT;
  const limit = rateLimit(rc.deps, routeId, points);
  switch (spec.auth.kind) {
    case 'api_key': {
      const chain = [authenticateApiKey(rc.keyStore, rc.deps.authThrottle), limit, checkKeyIp()];
      if (spec.auth.scope) chain.push(requireScope(spec.auth.scope));
      if (spec.auth.feature) chain.push(requirePlanFeature(rc.deps, spec.auth.feature));
      return chain;
    }
    case 'user':
    {
      const authenticate = authenticateUser(rc.deps, { pendingPassword: spec.auth.pendingPassword });
      return spec.auth.admin ? [authenticate, limit, requireAdmin()] : [authenticate, limit];
    }
    case 'none':
      return [limit];
  }
}

export function addRoute<P extends TObject | undefined, Q extends TObject | undefined, B extends TSchema | undefined>(
  router: AppRouter,
  rc: RouteContext,
  spec: RouteSpec<P, Q, B>,
  // NoInfer: P, Q, B come from the spec only; inferring them back through Static<> from the
  // handler's parameter types sends tsc into "type instantiation is excessively deep"
  handler: RouteHandler<Infer<NoInfer<P>>, Infer<NoInfer<Q>>, Infer<NoInfer<B>>>,
): void {
  routeCatalog.set(`${spec.method} ${spec.path}`, spec as RouteSpec);
  const guards = authChain(rc, spec as RouteSpec);
  const run: Middleware<AppState> = async (ctx) => {
    for (const guard of guards) {
      const waiting = guard(ctx);
      if (waiting) await waiting;
    }
    const read = spec.body ? await readRequestBody(ctx) : undefined;
    refuseUnstorablePath(ctx.params, spec);
    let params: unknown, query: unknown, body: unknown;
    let p = false, q = false, b = false;
    const input: RouteInput<Infer<P>, Infer<Q>, Infer<B>> = {
      params: () => {
        if (!p) { params = spec.params ? validate(spec.params, { ...ctx.params }, 'path') : ctx.params; p = true; }
        return params as Infer<P>;
      },
      query: () => {
        if (!q) {
          const raw = ctx.query;
          refuseUnstorableQuery(raw);
          query = spec.query ? validate(spec.query, { ...raw }, 'query') : raw;
          q = true;
        }
        return query as Infer<Q>;
      },
      body: () => {
        if (!b) { body = read && spec.body ? validate(spec.body, read.value(), 'body') : undefined; b = true; }
        return body as Infer<B>;
      },
      peekBody: () => read?.peek(),
    };
    await handler(ctx as Context & { state: AppState }, input);
  };
  router[spec.method](spec.path, run);
}

/**
 * A path parameter holding text no resource can carry (U+0000, an unpaired surrogate) names
 * nothing: 404, before the handler runs (some use a name from the path in SQL straight away).
 * When the parameter's schema refuses the value anyway (an id that is not a UUID) it is the
 * 422 any malformed id gets.
 */
function refuseUnstorablePath(params: Record<string, string>, spec: RouteSpec): void {
  for (const name in params) {
    if (textProblem(params[name]!) === null) continue;
    if (spec.params) validate(spec.params, { ...params }, 'path');
    throw new NotFoundError();
  }
}

/** A query parameter (name or value) with text Postgres cannot store: 422 naming it. */
function refuseUnstorableQuery(query: Record<string, string | string[] | undefined>): void {
  for (const name in query) {
    const value = query[name];
    const values = value === undefined ? [] : Array.isArray(value) ? value : [value];
    for (const text of [name, ...values]) {
      const problem = textProblem(text);
      if (problem) throw new ValidationError([textIssue(['query', printableText(name)], problem)]);
    }
  }
}

/** What the routes of one file may declare once for all of them (a route may still set its own). */
type SharedKey = 'tags' | 'auth' | 'errors';

/**
 * The routes of one file: its router, and `add(spec, handler)`, addRoute on that router and
 * context with the file's `shared` declarations (most files have one tag, many one auth) under
 * each spec.
 */
export function routeGroup<K extends SharedKey = never>(rc: RouteContext, shared?: Pick<RouteSpec, K>): {
  router: AppRouter;
  add<P extends TObject | undefined, Q extends TObject | undefined, B extends TSchema | undefined>(
    spec: Omit<RouteSpec<P, Q, B>, K> & Partial<Pick<RouteSpec<P, Q, B>, K>>,
    handler: RouteHandler<Infer<NoInfer<P>>, Infer<NoInfer<Q>>, Infer<NoInfer<B>>>,
  ): void;
} {
  const router = createRouter();
  return {
    router,
    // the spec's own declarations win; with `shared`, it has every key a RouteSpec needs
    add: (spec, handler) => addRoute(router, rc, { ...shared, ...spec } as unknown as RouteSpec, handler as never),
  };
}
