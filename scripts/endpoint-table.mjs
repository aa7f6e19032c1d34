// Regenerates docs/endpoints.md (the README's endpoint table) from the route declarations.
//   node scripts/endpoint-table.mjs           build, then write docs/endpoints.md
//   node scripts/endpoint-table.mjs --check   exit 1 when docs/endpoints.md is stale
//   node scripts/endpoint-table.mjs --stdout  print the table instead of writing it
// The app is built in-process but never listens and never queries: no Postgres or Redis needed.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ensureInstalledAndBuilt, ROOT, SetupError } from './services.mjs';

const args = new Set(process.argv.slice(2));
const target = path.join(ROOT, 'docs', 'endpoints.md');

try {
  if (!args.has('--no-build')) ensureInstalledAndBuilt({ log: () => {} });
} catch (err) {
  console.error(err instanceof SetupError ? err.message : err);
  process.exit(1);
}

const require = createRequire(import.meta.url);
const { parseConfig, createRedis } = require('@svc/core');
const { createApp, buildDeps } = require(path.join(ROOT, 'apps/api/dist/index.js'));
const { openApiDocumentFor, apiRouterOf } = require(path.join(ROOT, 'apps/api/dist/openapi/routes.js'));
const { renderEndpointsMarkdown } = require(path.join(ROOT, 'apps/api/dist/openapi/endpoint-table.js'));

const config = parseConfig({
  ...process.env,
  // only to satisfy config parsing: nothing is encrypted here
  ASSET_ENCRYPTION_KEY: process.env.ASSET_ENCRYPTION_KEY || Buffer.alloc(32).toString('base64'),
});
const redis = createRedis(config.redisUrl, { lazyConnect: true });
const deps = buildDeps(config, { redis });
const app = createApp(deps);
const markdown = renderEndpointsMarkdown(openApiDocumentFor(apiRouterOf(app)));
await deps.sql.end({ timeout: 1 });
redis.disconnect();

if (args.has('--stdout')) {
  process.stdout.write(markdown);
} else if (args.has('--check')) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== markdown) {
    console.error('docs/endpoints.md is stale: run `node scripts/endpoint-table.mjs`.');
    process.exit(1);
  }
  console.log('docs/endpoints.md is up to date.');
} else {
  writeFileSync(target, markdown);
  console.log(`Wrote ${path.relative(ROOT, target)}.`);
}
