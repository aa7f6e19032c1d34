import request from 'supertest';
import { createLogger } from '@svc/core';
import { createTestContext, type TestContext } from '@svc/core/testing';
import { createApp, buildDeps, type ApiDeps } from '@svc/api';
import type { Config } from '@svc/core';

export interface ApiTestContext extends TestContext {
  deps: ApiDeps;
  app: ReturnType<typeof createApp>;
  /** supertest agent over the real Koa callback */
  http: ReturnType<typeof request>;
}

/** A real app over a fresh cloned database and a fresh Redis prefix. */
export async function createApiTestContext(overrides: Partial<Config> = {}): Promise<ApiTestContext> {
  const ctx = await createTestContext(overrides);
  const deps = buildDeps(ctx.config, {
    sql: ctx.sql,
    redis: ctx.redis,
    logger: createLogger({ service: 'api-test', level: process.env.SVC_TEST_LOG_LEVEL ?? 'error' }),
  });
  await deps.apiKeys.start();
  const app = createApp(deps);
  const server = app.callback();
  const close = async () => {
    await deps.apiKeys.close();
    await deps.dispatch.close();
    await ctx.close();
  };
  return { ...ctx, deps, app, http: request(server), close };
}
