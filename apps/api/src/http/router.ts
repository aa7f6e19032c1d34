import Router from '@koa/router';
import type { AppState } from './state';

/** Distinct method + path pairs remembered per router before the memo starts over. */
const MEMO_LIMIT = 5000;

type MatchResult = ReturnType<Router<AppState>['match']>;

/**
 * Routers remember which of their layers match a method and path. @koa/router walks every layer
 * of the flattened /api/v1 router (one per route) on each request, with a debug call per layer that
 * allocates even when debugging is off: the largest allocation site of the API under load
 * (BENCHMARKS.md, B1). Clients repeat their paths (a queue's items, the same job), so the walk
 * is done once per path. Routes are all declared before the first request; the result is
 * copied out because the dispatcher appends to `ctx.matched` in place.
 */
export function createRouter(prefix?: string): Router<AppState> {
  const router = new Router<AppState>(prefix ? { prefix } : {});
  const walk = router.match.bind(router);
  const memo = new Map<string, MatchResult>();
  router.match = (path: string, method: string): MatchResult => {
    const key = `${method} ${path}`;
    let m = memo.get(key);
    if (!m) {
      m = walk(path, method);
      if (memo.size >= MEMO_LIMIT) memo.clear();
      memo.set(key, m);
    }
    return { path: [...m.path], pathAndMethod: [...m.pathAndMethod], route: m.route };
  };
  return router;
}

export type AppRouter = Router<AppState>;
