import type { Context } from 'koa';
import type { CursorMeta, PageMeta } from '@svc/core';

/** The contract's success wrapper: `{success: true, data}` (paged lists add `meta`). */
export function ok(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { success: true, data };
}

export function paged(ctx: Context, data: unknown[], meta: PageMeta | CursorMeta): void {
  ctx.status = 200;
  ctx.body = { success: true, data, meta };
}
