import { bearerToken, requireAdminRole, UnauthorizedError } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/**
 * `Authorization: Bearer <access token>` of an active user (core's authenticateBearer decides).
 * The token is looked up only while the source address is within its failure budget (else 429);
 * the look-up is charged to the address and refunded when the token is valid (auth/throttle.ts).
 */
export function authenticateUser(deps: ApiDeps): Guard {
  return async (ctx) => {
    const authorization = ctx.get('Authorization');
    if (!bearerToken(authorization)) throw new UnauthorizedError();
    const address = await deps.authThrottle.beforeLookup(ctx.state.clientIp);
    ctx.state.user = await deps.engine.auth.bearer(authorization);
    address.valid();
  };
}

/** Workspace admin role (else 403). */
export function requireAdmin(): Guard {
  return (ctx) => {
    requireAdminRole(ctx.state.user);
  };
}
