import type { Middleware } from 'koa';
import { BOARD_PATH } from '../admin/queues-board';
import { CONSOLE_PATH } from '../console/serve';
import type { AppState } from '../http/state';
import { requestOverTls } from '../http/tls';

/**
 * Content-Security-Policy of each surface (docs/decisions/security-headers.md). None allows an
 * inline script, `eval` or being framed; each lists only what its pages really load.
 */
export const CSP = {
  /** JSON, text and event streams: nothing in them is meant to run or render as a page. */
  api: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  /**
   * The console (vite's build): one module script and one stylesheet from /console/assets, fetch
   * and event streams to the same origin. React's `style` props are set through the CSSOM, which
   * style-src does not govern, so no 'unsafe-inline' is needed for styles either.
   */
  console:
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
    "manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  /**
   * Bull Board's page: its scripts are files under static/ (its `__UI_CONFIG__` block is JSON,
   * `type="application/json"`, which a browser never runs). Its HTML carries a loading placeholder
   * with `style` attributes and a `<style>` element, hence 'unsafe-inline' for styles only; the
   * `<base href>` it needs is the board's own path ('self').
   */
  board:
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; " +
    "connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'",
} as const;

/** A year; no includeSubDomains nor preload: other hosts of the domain are not this service's to decide. */
export const HSTS = 'max-age=31536000';

function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * Early in the chain, so every answer carries them, errors included (the error envelope keeps
 * headers already set). Set straight on Node's response, like the request id: a handful of
 * constant strings per request, no per-request allocation beyond the TLS check.
 */
export function securityHeaders(trustedProxyCount: number): Middleware<AppState> {
  return (ctx, next) => {
    const res = ctx.res;
    const path = ctx.path;
    res.setHeader('Content-Security-Policy', isUnder(path, CONSOLE_PATH) ? CSP.console : isUnder(path, BOARD_PATH) ? CSP.board : CSP.api);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    // over plain HTTP a browser ignores HSTS anyway; behind a proxy only its trusted word counts
    if (requestOverTls(ctx, trustedProxyCount)) res.setHeader('Strict-Transport-Security', HSTS);
    return next();
  };
}
