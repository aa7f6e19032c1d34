import { BlockList, isIP } from 'node:net';
import { es } from '../messages/server-messages';

/**
 * allowed_ips entries are single addresses or CIDR ranges, IPv4 or IPv6.
 * An IPv4-mapped IPv6 address (::ffff:1.2.3.4, as sockets report IPv4 peers on a dual-stack
 * listener) is compared as the IPv4 address it carries.
 */

export function normalizeIp(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return mapped ? mapped[1]! : ip;
}

/** Returns null when valid, or why not (in Spanish, for the API's validation message). */
export function checkIpEntry(entry: string): string | null {
  const [address, bits, extra] = entry.split('/');
  if (extra !== undefined || !address) return es.security.invalidIpOrCidr;
  const family = isIP(address);
  if (family === 0) return es.security.invalidIpOrCidr;
  if (bits === undefined) return null;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return es.security.invalidCidrPrefix;
  return null;
}

export function buildAllowList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    // a mapped range (::ffff:10.0.0.0/104) stays IPv6: BlockList matches IPv4 peers against it
    const addr = bits === undefined ? normalizeIp(address) : address;
    const family = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(addr, family);
    else list.addSubnet(addr, Number(bits), family);
  }
  return list;
}

export function ipAllowed(allowList: BlockList, ip: string): boolean {
  const addr = normalizeIp(ip);
  const family = isIP(addr);
  if (family === 0) return false;
  return allowList.check(addr, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The entry of a header our proxies append to (X-Forwarded-For, X-Forwarded-Proto) that the
 * outermost of `trustedProxyCount` trusted proxies wrote: that many hops from the right (the
 * rightmost ones were added by our proxies); with fewer entries than proxies, every entry is one
 * of ours and the leftmost is the edge's. Never an entry a client could have written; undefined
 * without trusted proxies or entries.
 */
export function trustedHop(header: string | undefined, trustedProxyCount: number): string | undefined {
  if (trustedProxyCount <= 0 || !header) return undefined;
  const hops = header.split(',').map((s) => s.trim()).filter(Boolean);
  return hops.length >= trustedProxyCount ? hops[hops.length - trustedProxyCount] : hops[0];
}

/** The client address: the socket peer, or with trusted proxies in front, their X-Forwarded-For entry. */
export function clientIp(socketIp: string, forwardedFor: string | undefined, trustedProxyCount: number): string {
  const candidate = trustedHop(forwardedFor, trustedProxyCount);
  const ip = candidate ? normalizeIp(candidate) : '';
  // never fall back to a client-written entry: an unusable hop means the socket peer
  return isIP(ip) ? ip : normalizeIp(socketIp);
}
