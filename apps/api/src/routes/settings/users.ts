import { UserIdParams, UserListQuery, UserResponse, UserUpdateBody, UserWithPasswordResponse, WorkspaceUserCreateBody } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok, paged } from '../../http/respond';
import { ADMIN, tenantOf, userActorOf } from './crud';

/** What every route here shares: its place in the reference and its audience, the workspace's admins. */
const FOR_ADMINS = { tags: ['settings: users'], auth: ADMIN };

/**
 * The workspace's people, for its admins (docs/decisions/users-and-access-tokens.md): list, add
 * with a one-time password, change role or name, deactivate. Another workspace's user is 404.
 */
export function userSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { users } = rc.deps.engine;

  addRoute(router, rc, {
    method: 'get',
    path: '/settings/users',
    operationId: 'listUsers',
    summary: 'List the users of the workspace',
    description: 'Oldest first, inactive users included (`is_active` false). Never returns a password.',
    ...FOR_ADMINS,
    query: UserListQuery,
    response: UserResponse,
    paged: true,
    errors: [422],
  }, async (ctx, input) => {
    const { data, meta } = await users.listPage(tenantOf(ctx), input.query());
    paged(ctx, data, meta);
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/users',
    operationId: 'createUser',
    summary: 'Add a user with a one-time password',
    description:
      'Returns the user with a generated password in `one_time_password`, shown this once (only its scrypt hash is ' +
      'stored). The user signs in with it and must replace it (`POST /auth/password`) before anything else answers. ' +
      'An email already used in any workspace → 409; unknown fields, an invalid email or role → 422. Audited as `create_user`.',
    ...FOR_ADMINS,
    body: WorkspaceUserCreateBody,
    response: UserWithPasswordResponse,
    successStatus: 201,
    errors: [409, 422],
  }, async (ctx, input) => {
    ok(ctx, await users.add(userActorOf(ctx), tenantOf(ctx), input.body()), 201);
  });

  addRoute(router, rc, {
    method: 'patch',
    path: '/settings/users/:user_id',
    operationId: 'updateUser',
    summary: "Change a user's role or name",
    description:
      'Demoting the last active admin of the workspace → 409. A role taken away takes effect on the next request, and ' +
      'ends the admin-only streams the user holds. Audited as `update_user` with what changed.',
    ...FOR_ADMINS,
    params: UserIdParams,
    body: UserUpdateBody,
    response: UserResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    ok(ctx, await users.update(userActorOf(ctx), tenantOf(ctx), input.params().user_id, input.body()));
  });

  addRoute(router, rc, {
    method: 'delete',
    path: '/settings/users/:user_id',
    operationId: 'deactivateUser',
    summary: 'Deactivate a user',
    description:
      'Sets `is_active` false and revokes every access token of the user in the same statement: their next request is ' +
      '401 and their event streams end at once. Deactivating the last active admin → 409; an inactive user answers its ' +
      'record again. Audited as `deactivate_user`.',
    ...FOR_ADMINS,
    params: UserIdParams,
    response: UserResponse,
    errors: [404, 409, 422],
  }, async (ctx, input) => {
    ok(ctx, await users.deactivateInWorkspace(userActorOf(ctx), tenantOf(ctx), input.params().user_id));
  });

  return router;
}
