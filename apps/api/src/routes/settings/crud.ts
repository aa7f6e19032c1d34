import type { Context } from 'koa';
import type { TObject, TSchema } from '@sinclair/typebox';
import type { AuditActor, CatalogResource } from '@svc/core';
import { IdParams } from '@svc/core/schemas';
import type { AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok, paged } from '../../http/respond';
import type { AppState } from '../../http/state';

export type Ctx = Context & { state: AppState };
export const ADMIN = { kind: 'user', admin: true } as const;
/** Any member of the workspace (admin or not): the reads of the console (docs/decisions/operator-reads.md). */
export const MEMBER = { kind: 'user', admin: false } as const;

export function tenantOf(ctx: Ctx): string {
  return ctx.state.user!.tenantId;
}

/** The user making a management request, as the audit log records them. */
export function userActorOf(ctx: Ctx): AuditActor {
  return { actorType: 'user', actorId: ctx.state.user!.userId, source: 'api', requestId: ctx.state.requestId, ip: ctx.state.clientIp };
}

/**
 * The shape shared by every catalogue resource under /settings/<plural>: create (201), list
 * (paged), get, partial update, deactivate (DELETE, 200 with the record). Existence (404) is
 * established before the body is validated (422), as the contract's error order asks. Every route
 * calls the engine's catalogue commands (core's catalog/by-resource.ts), the same ones `svc apply`
 * uses.
 */
export interface CrudSpec<R extends CatalogResource> {
  /** Singular, for audit actions and resource types: `folder` → `create_folder`. */
  resource: R;
  /** URL segment: `/settings/<plural>`. */
  plural: string;
  /** Human noun for summaries. */
  noun: string;
  tag: string;
  schemas: { create: TObject; update: TObject; list: TObject; response: TSchema };
  notes?: { create?: string; update?: string; deactivate?: string; list?: string };
  /** Who may list and get the records: admins only (default), or every member of the workspace. */
  readers?: 'admins' | 'members';
  /** Leave a route out when the resource declares its own (machines' create returns the key). */
  skip?: Array<'create'>;
  /**
   * A resource without a `name` field (triggers): its create's audit row records this name instead,
   * and its routes promise no 409 and no order by name.
   */
  unnamed?: { auditName(body: unknown): string };
}

export function addCrudRoutes<R extends CatalogResource>(router: AppRouter, rc: RouteContext, spec: CrudSpec<R>): void {
  const { catalog } = rc.deps.engine;
  const base = `/settings/${spec.plural}`;
  const tags = [spec.tag];
  const readAuth = spec.readers === 'members' ? MEMBER : ADMIN;
  // operation ids from the noun: 'queue trigger' → createQueueTrigger, listWorkspaceQueueTriggers
  const oneName = spec.noun.split(' ').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  const many = `${oneName}${oneName.endsWith('s') ? 'es' : 's'}`;
  // what the routes of one record share: its path, its id and the record they answer
  const oneRecord = { path: `${base}/:id`, tags, params: IdParams, response: spec.schemas.response };

  if (!spec.skip?.includes('create')) {
    addRoute(router, rc, {
      method: 'post',
      path: base,
      operationId: `create${oneName}`,
      summary: `Create a ${spec.noun}`,
      description: (spec.unnamed
        ? `Unknown body fields or invalid values → 422. ${spec.notes?.create ?? ''}`
        : `Unknown body fields or invalid values → 422; a name already used in the workspace → 409. ${spec.notes?.create ?? ''}`).trim(),
      tags,
      auth: ADMIN,
      body: spec.schemas.create,
      response: spec.schemas.response,
      successStatus: 201,
      errors: spec.unnamed ? [422] : [409, 422],
    }, async (ctx, input) => {
      const body = input.body();
      const auditName = spec.unnamed?.auditName(body);
      const { record } = await catalog.save(userActorOf(ctx), tenantOf(ctx), spec.resource, 'new', body as Record<string, unknown>,
        auditName !== undefined ? { auditName } : {});
      ok(ctx, record, 201);
    });
  }

  addRoute(router, rc, {
    method: 'get',
    path: base,
    operationId: `listWorkspace${many}`,
    summary: `List the ${spec.plural} of the workspace`,
    description: `${spec.unnamed ? 'Inactive' : 'Ordered by name; inactive'} records included unless \`is_active\` filters them. ${spec.notes?.list ?? ''}`.trim(),
    tags,
    auth: readAuth,
    query: spec.schemas.list,
    response: spec.schemas.response,
    paged: true,
    errors: [422],
  }, async (ctx, input) => {
    const { data, meta } = await catalog.list(tenantOf(ctx), spec.resource, input.query() as Record<string, unknown>);
    paged(ctx, data, meta);
  });

  addRoute(router, rc, {
    method: 'get',
    ...oneRecord,
    operationId: `get${oneName}`,
    summary: `Get a ${spec.noun}`,
    description: 'Another workspace\'s record answers 404, like a missing one.',
    auth: readAuth,
    errors: [404, 422],
  }, async (ctx, input) => {
    ok(ctx, await catalog.get(tenantOf(ctx), spec.resource, input.params().id));
  });

  addRoute(router, rc, {
    method: 'patch',
    ...oneRecord,
    operationId: `update${oneName}`,
    summary: `Change a ${spec.noun}`,
    description: `Partial update: only the fields sent change (at least one). ${spec.notes?.update ?? ''}`.trim(),
    auth: ADMIN,
    body: spec.schemas.update,
    errors: spec.unnamed ? [404, 422] : [404, 409, 422],
  }, async (ctx, input) => {
    const { id } = input.params();
    await catalog.get(tenantOf(ctx), spec.resource, id);
    const { record } = await catalog.save(userActorOf(ctx), tenantOf(ctx), spec.resource, { id }, input.body() as Record<string, unknown>);
    ok(ctx, record);
  });

  addRoute(router, rc, {
    method: 'delete',
    ...oneRecord,
    operationId: `deactivate${oneName}`,
    summary: `Deactivate a ${spec.noun}`,
    description: `Sets \`is_active\` false and returns the record; the row and its name stay (PATCH \`is_active: true\` reactivates). ${spec.notes?.deactivate ?? ''}`.trim(),
    auth: ADMIN,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { id } = input.params();
    ok(ctx, await catalog.deactivate(userActorOf(ctx), tenantOf(ctx), spec.resource, id));
  });
}
