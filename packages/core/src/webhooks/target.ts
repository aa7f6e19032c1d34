import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ValidationError } from '../errors';
import { es } from '../messages/server-messages';

/**
 * Where a webhook may be sent (docs/decisions/events.md, "SSRF"). The URL is checked when saved
 * (scheme, no credentials, a literal address in a refused range) and the host's addresses are
 * resolved and checked again at every delivery, and the request goes to the checked address, so
 * a DNS answer that changes between the check and the connection cannot point it inside.
 */

export interface TargetPolicy {
  /** http:// accepted (WEBHOOK_ALLOW_INSECURE) */
  allowInsecure: boolean;
  /** loopback, private, link-local and metadata addresses accepted (WEBHOOK_ALLOW_PRIVATE_NETWORKS) */
  allowPrivateNetworks: boolean;
}

const refused = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) refused.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['fd00:ec2::', 32],
] as const) refused.addSubnet(net, bits, 'ipv6');
// The IPv6 forms that carry an IPv4 address are refused whole, not by the address they carry
// (docs/decisions/events.md, "SSRF"): IPv4-compatible (::/96, deprecated by RFC 4291),
// IPv4-translated (::ffff:0:0/96, SIIT), 6to4 (2002::/16, deprecated by RFC 7526) and NAT64
// (64:ff9b::/96 above, the local-use 64:ff9b:1::/48 of RFC 8215). A host or relay that
// translates them may reach the IPv4 address inside, a private one included, and no public
// receiver needs them: it has a native address. Refusing the prefix also leaves no decoding of
// the embedded address to get wrong. (IPv4-mapped ::ffff:0:0/96 is not among them: it is the
// IPv4 address itself, checked against the IPv4 ranges.)
for (const [net, bits] of [
  ['::', 96], ['::ffff:0:0:0', 96], ['2002::', 16], ['64:ff9b:1::', 48],
] as const) refused.addSubnet(net, bits, 'ipv6');

/**
 * Loopback, private, link-local (169.254.169.254, the cloud metadata address, among them), multicast, reserved,
 * and the IPv6 forms carrying an IPv4 address (IPv4-mapped ones are checked as the IPv4 address they are).
 */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return refused.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return refused.check(mapped[1]!, 'ipv4');
    return refused.check(address, 'ipv6');
  }
  return true;
}

/** The URL when it may be saved; a 422 on `field` otherwise. */
export function checkWebhookUrl(raw: string, policy: TargetPolicy, field: Array<string | number> = ['body', 'url']): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw ValidationError.single(field, es.webhooks.urlInvalid, 'url');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowInsecure)) {
    throw ValidationError.single(field, policy.allowInsecure ? es.webhooks.urlHttpsOrHttp : es.webhooks.urlHttps, 'url');
  }
  if (url.username || url.password) throw ValidationError.single(field, es.webhooks.urlCredentials, 'url');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!policy.allowPrivateNetworks && (isIP(host) ? isRefusedAddress(host) : host === 'localhost' || host.endsWith('.localhost'))) {
    throw ValidationError.single(field, es.webhooks.urlPrivate, 'url');
  }
  return url;
}

/**
 * A delivery refused by the address checks. Its message becomes the delivery's `last_error`,
 * which the workspace's admins read: it says that an address was refused, never which one, so
 * that a subscription cannot be used to learn what an internal name resolves to.
 */
export class RefusedTarget extends Error {}

/** The address to connect to: the host's first address, every address checked (unless private networks are allowed). */
export async function resolveTarget(url: URL, policy: TargetPolicy): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new RefusedTarget('the host has no address');
  if (!policy.allowPrivateNetworks) {
    if (addresses.some((a) => isRefusedAddress(a.address))) throw new RefusedTarget('target address refused (private or local network)');
  }
  return addresses[0]!;
}
