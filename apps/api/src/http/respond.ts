import type { Context } from 'koa';
import type { CursorMeta, PageMeta } from '@svc/core/schemas';

/** The contract's success body: `{success: true, data}` (paged lists add `meta`), built here only. */
export function successBody<T>(data: T): { success: true; data: T };
export function successBody<T>(data: T, meta: PageMeta | CursorMeta): { success: true; data: T; meta: PageMeta | CursorMeta };
export function successBody<T>(data: T, meta?: PageMeta | CursorMeta) {
  return meta === undefined ? { success: true as const, data } : { success: true as const, data, meta };
}

export function ok(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = successBody(data);
}

export function paged(ctx: Context, data: unknown[], meta: PageMeta | CursorMeta): void {
  ctx.status = 200;
  ctx.body = successBody(data, meta);
}
