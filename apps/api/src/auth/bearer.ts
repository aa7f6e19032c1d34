import { bearerToken, requireAdminRole, requirePasswordChanged, UnauthorizedError } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/**
 * `Authorization: Bearer <access token>` of an active user (core's authenticateBearer decides).
 * The token is looked up only while the source address is within its failure budget (else 429);
 * a refused one charges the address (auth/throttle.ts). A user who must still replace a one-time
 * password gets 403 except on routes declared with `pendingPassword`.
 */
export function authenticateUser(deps: ApiDeps, options: { pendingPassword?: boolean } = {}): Guard {
  return async (ctx) => {
    const authorization = ctx.get('Authorization');
    if (!bearerToken(authorization)) throw new UnauthorizedError();
    const address = await deps.authThrottle.beforeLookup(ctx.state.clientIp);
    try {
      ctx.state.user = await deps.engine.auth.bearer(authorization);
      address.settle(true);
    } catch (err) {
      // a refused token charges the address; a failed look-up (Postgres away) does not
      address.settle(!(err instanceof UnauthorizedError));
      throw err;
    }
    // a one-time password opens only the routes that say so (the session, the logout, the change itself)
    if (!options.pendingPassword) requirePasswordChanged(ctx.state.user);
  };
}

/** Workspace admin role (else 403). */
export function requireAdmin(): Guard {
  return (ctx) => {
    requireAdminRole(ctx.state.user);
  };
}
