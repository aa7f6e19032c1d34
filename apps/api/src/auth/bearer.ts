import { requireAdminRole } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/** `Authorization: Bearer <access token>` of an active user (core's authenticateBearer decides). */
export function authenticateUser(deps: ApiDeps): Guard {
  return async (ctx) => {
    ctx.state.user = await deps.engine.auth.bearer(ctx.get('Authorization'));
  };
}

/** Workspace admin role (else 403). */
export function requireAdmin(): Guard {
  return (ctx) => {
    requireAdminRole(ctx.state.user);
  };
}
