import request from 'supertest';
import { createClient, type Client } from '@svc/client';
import { createBullDispatch, createLogger, type Config } from '@svc/core';
import { drainOutbox, type DispatchPort } from '@svc/core/internals';
import { createApp, buildDeps, type ApiDeps } from '@svc/api';
import { createTestContext, type TestContext } from './context';
import { testSuite, type SuiteOptions, type TestSuite } from './suites';

/**
 * The API app in-process: the one entry of this package that imports an app
 * (`@svc/testing/api`; tests of packages/core must not use it: docs/decisions/test-layers.md).
 */
export interface ApiTestContext extends TestContext {
  /**
   * `dispatch` receives, after every request, the effects the request's commands recorded in the
   * outbox (what the dispatcher's relay does in production): BullMQ unless a test puts a
   * recording port in its place.
   */
  deps: ApiDeps & { dispatch: DispatchPort };
  app: ReturnType<typeof createApp>;
  /** supertest agent over the real Koa callback */
  http: ReturnType<typeof request>;
}

/**
 * A real app over a fresh cloned database and a fresh Redis prefix; `deps` may put parts of the
 * app's own in place (built from the context, e.g. a throttle with shorter waits).
 */
export async function createApiTestContext(overrides: Partial<Config> = {}, options: { deps?: (ctx: TestContext) => Partial<ApiDeps> } = {}): Promise<ApiTestContext> {
  const ctx = await createTestContext(overrides);
  const deps = buildDeps(ctx.config, {
    sql: ctx.sql,
    redis: ctx.redis,
    logger: createLogger({ service: 'api-test', level: process.env.SVC_TEST_LOG_LEVEL ?? 'error' }),
    ...options.deps?.(ctx),
  });
  await deps.apiKeys.start();
  const bull = createBullDispatch({ redis: ctx.redis, prefix: ctx.config.redisPrefix });
  const testDeps = { ...deps, dispatch: bull as DispatchPort };
  const app = createApp(deps);
  // outermost: the relay's work is done before the response reaches the test
  app.middleware.unshift(async (_ctx, next) => {
    await next();
    // a failing port keeps the rows for the next request's drain, like the relay
    await drainOutbox(ctx.sql, testDeps.dispatch).catch(() => undefined);
  });
  const server = app.callback();
  const close = async () => {
    await deps.streams.close();
    await deps.apiKeys.close();
    await bull.close();
    await deps.atOnce.close();
    await ctx.close();
  };
  return { ...ctx, deps: testDeps, app, http: request(server), close };
}

/** A test file's in-process API (see testSuite), optionally with a real dispatcher on its context. */
export function apiSuite(options: Omit<SuiteOptions<ApiTestContext>, 'context'> & { config?: Partial<Config> } = {}): TestSuite<ApiTestContext> {
  const { config, ...rest } = options;
  return testSuite({ ...rest, context: () => createApiTestContext(config) });
}

/**
 * The platform's typed client (@svc/client) bound to a test's in-process app: each call goes
 * through the same supertest agent as `t.http` (no port), so a test reads an answer as an
 * integrator would, typed by its operation. `apiKey` for the public operations, `token` for the
 * console's (/settings). It does not retry: a test sees the first answer. Hostile requests that no
 * client would send stay on `t.http`.
 */
export function apiClient(t: Pick<ApiTestContext, 'http'>, auth: { apiKey?: string; token?: string }): Client {
  return createClient({ baseUrl: 'http://api.test', ...auth, retries: 0, fetch: (req) => throughAgent(t.http, req) });
}

/** A fetch Request sent through a supertest agent, its answer as a fetch Response. */
async function throughAgent(http: ApiTestContext['http'], req: Request): Promise<Response> {
  const url = new URL(req.url);
  const method = req.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  let call = http[method](url.pathname + url.search);
  req.headers.forEach((value, name) => { call = call.set(name, value); });
  const body = method === 'get' ? '' : await req.text();
  const res = await (body ? call.send(body) : call).buffer(true).parse((r, done) => {
    // the raw text: the client parses it, as it would a real answer
    let text = '';
    r.setEncoding('utf8');
    r.on('data', (chunk: string) => { text += chunk; });
    r.on('end', () => done(null, text));
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers as Record<string, string | string[] | undefined>)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  const text = res.body as string;
  return new Response(res.status === 204 || res.status === 304 || text === '' ? null : text, { status: res.status, headers });
}
