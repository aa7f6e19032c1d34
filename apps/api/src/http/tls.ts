import type { ParameterizedContext } from 'koa';
import { trustedHop } from '@svc/core';
import type { AppState } from './state';

/**
 * Whether the request reached the service over TLS: a TLS socket of its own, or (behind
 * TRUST_PROXY_COUNT > 0 proxies) the X-Forwarded-Proto entry written by the outermost trusted
 * proxy, chosen like the client IP from X-Forwarded-For (core's clientIp): counting
 * `trustedProxyCount` entries from the right, and never an entry a client could have written.
 */
export function cameOverTls(socketEncrypted: boolean, forwardedProto: string | undefined, trustedProxyCount: number): boolean {
  if (socketEncrypted) return true;
  return trustedHop(forwardedProto, trustedProxyCount)?.toLowerCase() === 'https';
}

/** cameOverTls for a Koa request. */
export function requestOverTls(ctx: ParameterizedContext<AppState>, trustedProxyCount: number): boolean {
  const socket = ctx.req.socket as { encrypted?: boolean };
  return cameOverTls(socket.encrypted === true, ctx.get('X-Forwarded-Proto') || undefined, trustedProxyCount);
}
