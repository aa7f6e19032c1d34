import type { Agent } from 'node:http';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { getProxyForUrl } from 'proxy-from-env';

/**
 * How a robot reaches the platform from a customer's network: TLS outside loopback, the
 * customer's own certificate authority, and the outbound proxy its network requires.
 */
export interface TransportOptions {
  /**
   * Allows a plain `http://` (`ws://`) URL to a host other than this one. Off by default: a
   * machine key and every credential a run reads would cross the network in clear.
   */
  allowInsecure?: boolean;
  /** the certificate authority (PEM) that signed the platform's certificate, when not a public one */
  ca?: string | Buffer;
  /**
   * The outbound proxy (`http://proxy:3128`), or null for none; by default the environment's
   * `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY`, read as curl does.
   */
  proxy?: string | null;
}

/** Whether `host` (a URL's hostname) is this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * Why `url` may not be used (a plain URL to another host without `allowInsecure`, or not an
 * http(s) URL at all), or null when it may.
 */
export function urlRefusal(url: string, options: TransportOptions = {}): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url}" is not an http(s) URL`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `"${url}" is not an http(s) URL`;
  if (parsed.protocol === 'http:' && !options.allowInsecure && !isLoopbackHost(parsed.hostname)) {
    return `"${url}" is plain HTTP to another host: use https://, or allow it explicitly (allowInsecure)`;
  }
  return null;
}

/** The agent to open a connection to `httpUrl` with: through the proxy when one applies. */
export function agentFor(httpUrl: string, options: TransportOptions): Agent | undefined {
  const proxy = options.proxy === undefined ? getProxyForUrl(httpUrl) : options.proxy;
  if (!proxy) return undefined;
  // the platform's CA reaches the tunnelled TLS through the request's own options (Connection)
  return new HttpsProxyAgent(proxy);
}
