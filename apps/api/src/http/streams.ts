import { randomUUID } from 'node:crypto';
import { es, RateLimitError, type AccessTokenPrincipal, type Engine, type Logger, type RedisClient, type RedisKeys } from '@svc/core';

/**
 * The API's long-lived reads (the event stream): each is held by a user's access token and ends as
 * soon as that token stops granting it — logout, revocation, expiry, the user's deactivation or,
 * for an admin's read, the loss of the admin role — not when the client next reconnects.
 *
 * - One statement every CHECK_MS asks Postgres which of the open streams' tokens still grant access
 *   (`engine.auth.liveTokens`), however many streams this process holds; a stream whose token is
 *   not among them is ended. A failed check ends them all: a stream must not outlive a credential
 *   nobody could verify (clients resume with their Last-Event-ID).
 * - Concurrent streams are capped per user and per workspace across every API replica: each open
 *   stream holds a lease (a member of two Redis sorted sets scored by its expiry, one per user and
 *   one per workspace, in one Redis Cluster slot by the workspace's hash tag), renewed while it is
 *   open and dropped when it ends; a replica that dies leaves leases that lapse by themselves.
 *   Lease times are Redis's clock, not the replicas'.
 */
export interface StreamRegistry {
  /**
   * Admits a stream for `user` (429 past a cap) and watches its credential: `end` is called once
   * when the credential lapses or the registry closes. Returns the release to call when the stream
   * ends for any other reason (the client left).
   */
  open(user: AccessTokenPrincipal, options: { admin: boolean }, end: () => void): Promise<() => void>;
  /** Streams open in this process. */
  readonly size: number;
  /** Ends every open stream, and any admitted from now on at once (the API's shutdown). */
  close(): Promise<void>;
}

export interface StreamRegistryOptions {
  engine: Engine;
  redis: RedisClient;
  keys: RedisKeys;
  logger: Logger;
  perUser: number;
  perWorkspace: number;
  /** How often the open streams' credentials are checked. */
  checkMs?: number;
  /** How long a lease lives without renewal (renewed every third of it). */
  leaseMs?: number;
}

const CHECK_MS = 500;
const LEASE_MS = 30_000;
/** A slot frees when another stream of the user or workspace ends: no time can be promised. */
const RETRY_AFTER_SECONDS = 5;

/**
 * KEYS[1] the user's leases, KEYS[2] the workspace's; ARGV: member, user cap, workspace cap, lease
 * (ms). Returns 0 when admitted, 1 when the user is at the cap, 2 when the workspace is. Times are
 * Redis's own clock, so replicas whose clocks differ agree on when a lease lapses.
 */
const ADMIT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 2 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 0`;

/** KEYS: the lease sets of one workspace; ARGV[1] lease (ms), then the members to renew. */
const RENEW_LUA = `
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[i - 1], expiry, ARGV[i])
end
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return 0`;

interface OpenStream {
  tokenId: string;
  admin: boolean;
  userKey: string;
  workspaceKey: string;
  member: string;
  end: () => void;
}

export function createStreamRegistry(o: StreamRegistryOptions): StreamRegistry {
  const checkMs = o.checkMs ?? CHECK_MS;
  const leaseMs = o.leaseMs ?? LEASE_MS;
  const open = new Set<OpenStream>();
  let timer: NodeJS.Timeout | null = null;
  let renewTimer: NodeJS.Timeout | null = null;
  let checking = false;
  let closed = false;

  const release = (s: OpenStream): void => {
    if (!open.delete(s)) return;
    if (open.size === 0 && timer) {
      clearInterval(timer);
      clearInterval(renewTimer!);
      timer = renewTimer = null;
    }
    o.redis.multi().zrem(s.userKey, s.member).zrem(s.workspaceKey, s.member).exec().catch(() => undefined);
  };
  const finish = (s: OpenStream): void => {
    if (!open.has(s)) return;
    release(s);
    s.end();
  };

  /** Every open stream's lease, renewed whatever the credential checks are doing (one script per workspace). */
  const renewLeases = async (): Promise<void> => {
    const byWorkspace = new Map<string, OpenStream[]>();
    for (const s of open) byWorkspace.set(s.workspaceKey, [...(byWorkspace.get(s.workspaceKey) ?? []), s]);
    await Promise.all([...byWorkspace.values()].map((streams) => {
      const keys = streams.flatMap((s) => [s.userKey, s.workspaceKey]);
      const members = streams.flatMap((s) => [s.member, s.member]);
      return o.redis.eval(RENEW_LUA, keys.length, ...keys, leaseMs, ...members);
    }));
  };

  const check = async (): Promise<void> => {
    if (checking || open.size === 0) return;
    checking = true;
    const streams = [...open];
    try {
      const live = new Map((await o.engine.auth.liveTokens([...new Set(streams.map((s) => s.tokenId))])).map((r) => [r.token_id, r.role]));
      for (const s of streams) {
        const role = live.get(s.tokenId);
        if (role === undefined || (s.admin && role !== 'admin')) finish(s);
      }
    } catch (err) {
      o.logger.warn('event streams ended: their credentials could not be checked', { err: (err as Error).message });
      for (const s of streams) finish(s);
    } finally {
      checking = false;
    }
  };

  return {
    async open(user, options, end) {
      const tag = `{${user.tenantId}}`;
      const s: OpenStream = {
        tokenId: user.tokenId,
        admin: options.admin,
        userKey: `${o.keys.streams}:${tag}:u:${user.userId}`,
        workspaceKey: `${o.keys.streams}:${tag}:w`,
        member: randomUUID(),
        end,
      };
      const verdict = await o.redis.eval(ADMIT_LUA, 2, s.userKey, s.workspaceKey, s.member, o.perUser, o.perWorkspace, leaseMs);
      if (verdict !== 0) {
        const [scope, limit] = verdict === 1 ? ['user', o.perUser] : ['workspace', o.perWorkspace];
        throw new RateLimitError(
          RETRY_AFTER_SECONDS,
          {},
          scope === 'user' ? es.http.tooManyStreamsPerUser : es.http.tooManyStreamsPerWorkspace,
          { limit, scope },
        );
      }
      open.add(s);
      // admitted while the process shuts down: ended at once, so the drain does not wait for it
      if (closed) {
        finish(s);
        return () => undefined;
      }
      timer ??= setInterval(() => void check(), checkMs).unref();
      renewTimer ??= setInterval(() => {
        renewLeases().catch((err) => o.logger.warn('event stream leases not renewed', { err: (err as Error).message }));
      }, leaseMs / 3).unref();
      return () => release(s);
    },
    get size() {
      return open.size;
    },
    async close() {
      closed = true;
      for (const s of [...open]) finish(s);
    },
  };
}
