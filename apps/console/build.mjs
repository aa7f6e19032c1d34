// Builds the console (type-check, then `vite build` into dist/) and prints the gzipped size of its
// JavaScript. Skipped when dist/index.html is newer than every source file, so `npm start` and
// `npm test` pay for it only after a change. `node apps/console/build.mjs --force` always builds.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const CONSOLE_DIR = path.dirname(fileURLToPath(import.meta.url));
export const CONSOLE_DIST = path.join(CONSOLE_DIR, 'dist');
/** The console's JavaScript budget, gzipped (docs/decisions/console.md). */
export const JS_BUDGET_BYTES = 250 * 1024;

// with core and the client: the console bundles core's statuses (@svc/core/queue-items/statuses)
// and the typed client (@svc/client), both from their TypeScript source
const SOURCES = ['src', 'index.html', 'vite.config.mts', 'tsconfig.json', 'package.json', '../../packages/core/src', '../../packages/client/src', '../../packages/client/package.json'];

function newestMtime(p) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(p).map((name) => newestMtime(path.join(p, name))));
}

export function isUpToDate() {
  const built = path.join(CONSOLE_DIST, 'index.html');
  if (!existsSync(built)) return false;
  const root = path.resolve(CONSOLE_DIR, '../..');
  // a dependency upgrade (package-lock.json) rebuilds too
  const newest = Math.max(...SOURCES.map((s) => newestMtime(path.join(CONSOLE_DIR, s))), newestMtime(path.join(root, 'package-lock.json')));
  return statSync(built).mtimeMs > newest;
}

/** Gzipped bytes of each JavaScript file of the build, and their sum. */
export function measureJs() {
  const dir = path.join(CONSOLE_DIST, 'assets');
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.js')) : [];
  const sizes = files.map((f) => ({ file: f, gzip: gzipSync(readFileSync(path.join(dir, f)), { level: 9 }).length }));
  return { files: sizes, total: sizes.reduce((a, s) => a + s.gzip, 0) };
}

/** .gz and .br beside each asset: the API sends the one the browser accepts (@koa/send). */
function precompress() {
  const dir = path.join(CONSOLE_DIST, 'assets');
  for (const f of readdirSync(dir).filter((name) => /\.(js|css)$/.test(name))) {
    const body = readFileSync(path.join(dir, f));
    writeFileSync(path.join(dir, `${f}.gz`), gzipSync(body, { level: 9 }));
    writeFileSync(path.join(dir, `${f}.br`), brotliCompressSync(body));
  }
}

function run(bin, args) {
  const res = spawnSync(process.execPath, [bin, ...args], { cwd: CONSOLE_DIR, stdio: 'inherit' });
  return res.status === 0;
}

/** Returns true when the console is built (now or already); false when the build failed. */
export function buildConsole({ force = false, log = console.log } = {}) {
  if (!force && isUpToDate()) return true;
  const bin = (pkg, file) => path.join(path.dirname(fileURLToPath(import.meta.resolve(`${pkg}/package.json`))), file);
  log('Building the console (apps/console: tsc, vite build) …');
  // the types it imports are core's and the client's declarations: built first (nothing to do when current)
  if (!run(bin('typescript', 'bin/tsc'), ['-b', '../../packages/core', '../../packages/client'])) return false;
  if (!run(bin('typescript', 'bin/tsc'), ['-p', 'tsconfig.json'])) return false;
  if (!run(bin('vite', 'bin/vite.js'), ['build', '--logLevel', 'warn'])) return false;
  precompress();
  const { total } = measureJs();
  log(`Console built: ${(total / 1024).toFixed(1)} KB of JavaScript gzipped (budget ${JS_BUDGET_BYTES / 1024} KB).`);
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(buildConsole({ force: process.argv.includes('--force') }) ? 0 : 1);
}
