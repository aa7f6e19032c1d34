import Router from '@koa/router';
import type { AppState } from './state';

/** Every resource router has the app's state type; one factory keeps that in one place. */
export function createRouter(prefix?: string): Router<AppState> {
  return new Router<AppState>(prefix ? { prefix } : {});
}

export type AppRouter = Router<AppState>;
