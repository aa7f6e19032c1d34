import { bearerToken, requireAdminRole, UnauthorizedError } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/**
 * `Authorization: Bearer <access token>` of an active user (core's authenticateBearer decides).
 * The token is looked up only while the source address is within its failure budget (else 429);
 * a refused one charges the address (auth/throttle.ts).
 */
export function authenticateUser(deps: ApiDeps): Guard {
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
  };
}

/** Workspace admin role (else 403). */
export function requireAdmin(): Guard {
  return (ctx) => {
    requireAdminRole(ctx.state.user);
  };
}
