import type { AccessTokenPrincipal, Logger, Environment } from '@svc/core';

/** Who is calling, as established by the API-key middleware. */
export interface ApiKeyPrincipal {
  kind: 'api_key';
  keyId: string;
  tenantId: string;
  scopes: string[];
  /** null = every environment */
  environments: Environment[] | null;
  allowedIps: string[] | null;
  /** SHA-256 (hex) of the presented key: the rate-limit identity. */
  keyHashHex: string;
}

/** Who is calling, as established by the Bearer access-token middleware (core's authenticateBearer). */
export type UserPrincipal = AccessTokenPrincipal;

export interface AppState {
  requestId: string;
  log: Logger;
  /** Client address (socket, or X-Forwarded-For behind trusted proxies). */
  clientIp: string;
  apiKey?: ApiKeyPrincipal;
  user?: UserPrincipal;
}
