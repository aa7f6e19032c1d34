// The API's OpenAPI document, built in-process from the route declarations (apps/api/dist): the
// app is created but never listens and never queries, so no Postgres or Redis is needed. Used by
// scripts/endpoint-table.mjs and packages/client/scripts/generate.mjs.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function openApiDocument() {
  const require = createRequire(import.meta.url);
  const { parseConfig, createRedis } = require('@svc/core');
  const { createApp, buildDeps } = require(path.join(ROOT, 'apps/api/dist/index.js'));
  const { openApiDocumentFor, apiRouterOf } = require(path.join(ROOT, 'apps/api/dist/openapi/routes.js'));
  const config = parseConfig({
    ...process.env,
    // only to satisfy config parsing: nothing is encrypted here (a random key, not a fixed one, which
    // config parsing would refuse under NODE_ENV=production)
    ASSET_ENCRYPTION_KEY: process.env.ASSET_ENCRYPTION_KEY || randomBytes(32).toString('base64'),
  });
  const redis = createRedis(config.redis, { lazyConnect: true });
  const deps = buildDeps(config, { redis });
  try {
    return openApiDocumentFor(apiRouterOf(createApp(deps)));
  } finally {
    await deps.sql.end({ timeout: 1 });
    redis.disconnect();
  }
}
