// Regenerates docs/endpoints.md and the README's endpoint table from the route declarations.
//   node scripts/endpoint-table.mjs           build, then write docs/endpoints.md
//   node scripts/endpoint-table.mjs --check   exit 1 when docs/endpoints.md is stale
//   node scripts/endpoint-table.mjs --stdout  print the table instead of writing it
// The app is built in-process but never listens and never queries: no Postgres or Redis needed.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ensureInstalledAndBuilt, ROOT, SetupError } from './services.mjs';
import { openApiDocument } from './openapi-document.mjs';

const args = new Set(process.argv.slice(2));
const target = path.join(ROOT, 'docs', 'endpoints.md');

try {
  if (!args.has('--no-build')) ensureInstalledAndBuilt({ log: () => {} });
} catch (err) {
  console.error(err instanceof SetupError ? err.message : err);
  process.exit(1);
}

const require = createRequire(import.meta.url);
const { renderEndpointsMarkdown, renderEndpointTable, spliceReadmeTable } = require(path.join(ROOT, 'apps/api/dist/openapi/endpoint-table.js'));

const doc = await openApiDocument();
const markdown = renderEndpointsMarkdown(doc);
const readmePath = path.join(ROOT, 'README.md');
const readme = spliceReadmeTable(readFileSync(readmePath, 'utf8'), renderEndpointTable(doc));

if (args.has('--stdout')) {
  process.stdout.write(markdown);
} else if (args.has('--check')) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== markdown || readFileSync(readmePath, 'utf8') !== readme) {
    console.error('docs/endpoints.md or the README endpoint table is stale: run `node scripts/endpoint-table.mjs`.');
    process.exit(1);
  }
  console.log('docs/endpoints.md and the README endpoint table are up to date.');
} else {
  writeFileSync(target, markdown);
  writeFileSync(readmePath, readme);
  console.log(`Wrote ${path.relative(ROOT, target)} and the endpoint table of README.md.`);
}
