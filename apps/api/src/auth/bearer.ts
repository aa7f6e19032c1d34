import { bearerToken, requireAdminRole, UnauthorizedError } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/**
 * `Authorization: Bearer <access token>` of an active user (core's authenticateBearer decides).
 * The token is looked up only while the source address is within its failure budget (else 429),
 * and a refused one charges the address (auth/throttle.ts).
 */
export function authenticateUser(deps: ApiDeps): Guard {
  return async (ctx) => {
    const authorization = ctx.get('Authorization');
    if (!bearerToken(authorization)) throw new UnauthorizedError();
    const ip = ctx.state.clientIp;
    await deps.authThrottle.beforeLookup(ip);
    try {
      ctx.state.user = await deps.engine.auth.bearer(authorization);
    } catch (err) {
      if (err instanceof UnauthorizedError) deps.authThrottle.failed(ip);
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
