import type { ParameterizedContext } from 'koa';
import type { AppState } from './state';

/**
 * One check of a route, run before its handler in the public error order (key 401 → rate
 * limit 429 → IP, scope, plan 403): it refuses by throwing, and returns a promise only when it
 * has to wait (a Postgres or Redis answer). A route runs its guards in a loop inside one
 * middleware instead of one Koa middleware each: on the hot path most checks are answered from
 * memory, and a middleware per check cost a promise chain and a compose step each
 * (BENCHMARKS.md, B1).
 */
export type Guard = (ctx: ParameterizedContext<AppState>) => void | Promise<void>;
