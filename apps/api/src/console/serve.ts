import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Middleware } from 'koa';
import { send } from '@koa/send';
import { es, HttpError, NotFoundError } from '@svc/core';
import type { AppState } from '../http/state';

export const CONSOLE_PATH = '/console';

/** apps/console/dist, seen from apps/api/dist/console/ (built) or apps/api/src/console/ (jest). */
export const DEFAULT_CONSOLE_DIR = path.resolve(__dirname, '../../../console/dist');

/** Hashed file names (vite's `assets/`) never change content: a year, and no revalidation. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html names the current hashed files: always revalidated, so a deploy is seen at once. */
const REVALIDATE = 'no-cache';

export const CONSOLE_NOT_BUILT = es.http.consoleNotBuilt;

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/**
 * The operators' console (apps/console, a single-page app) at /console: its files as built by
 * vite, and index.html for every other path under /console so deep links (/console/queues/…)
 * load the app, whose router takes over. A path that leaves the folder, names a hidden file or
 * does not decode is answered as missing; a missing asset is a 404, never index.html (a script
 * tag would get HTML). Without a build the answer says how to make one (503), never a 500. Errors
 * are the API's envelope, like every other answer.
 */
export function consoleFiles(dir: string = DEFAULT_CONSOLE_DIR): Middleware<AppState> {
  const root = path.resolve(dir);
  const index = path.join(root, 'index.html');

  async function sendIndex(ctx: Parameters<Middleware<AppState>>[0]): Promise<void> {
    if (!(await isFile(index))) throw new HttpError(503, CONSOLE_NOT_BUILT, { 'Cache-Control': 'no-store' });
    ctx.set('Cache-Control', REVALIDATE);
    await send(ctx, 'index.html', { root, gzip: false, brotli: false });
  }

  return async (ctx, next) => {
    if (ctx.path !== CONSOLE_PATH && !ctx.path.startsWith(`${CONSOLE_PATH}/`)) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next(); // the router's 404/405 envelope
    let rel: string;
    try {
      rel = decodeURIComponent(ctx.path.slice(CONSOLE_PATH.length + 1));
    } catch {
      throw new NotFoundError();
    }
    const parts = rel.split('/').filter((p) => p.length > 0);
    if (rel.includes('\0') || rel.includes('\\') || parts.some((p) => p.startsWith('.'))) throw new NotFoundError();
    const file = path.join(root, ...parts);
    if (parts.length === 0 || file === index) return sendIndex(ctx);
    if (!file.startsWith(root + path.sep)) throw new NotFoundError();
    if (await isFile(file)) {
      const hashed = parts[0] === 'assets';
      ctx.set('Cache-Control', hashed ? IMMUTABLE : REVALIDATE);
      ctx.vary('Accept-Encoding'); // build.mjs writes .br and .gz beside each asset
      await send(ctx, parts.join('/'), { root });
      return;
    }
    if (parts[0] === 'assets' || path.extname(rel) !== '') throw new NotFoundError();
    return sendIndex(ctx);
  };
}
