import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimitError, sha256Hex, type Logger, type RedisClient, type RedisKeys } from '@svc/core';

/**
 * Throttles for guessing credentials (docs/decisions/login-throttling.md), counted in Redis so
 * every API replica shares them.
 *
 * - **Per address, before any look-up.** Every failed credential check (an unknown, revoked or
 *   expired API key or access token, a wrong password) charges the source address; past
 *   `failuresPerAddress` in a minute, the address's requests that would need a credential looked up
 *   in Postgres answer 429 before the look-up, for the rest of that minute. A valid key already in
 *   the process's cache is answered from memory and never charged or checked.
 * - **Sign-in, per account and address pair**: `PAIR_FREE_FAILURES` failures in a row, then every
 *   further failure blocks the pair for twice as long as the previous one (1 s, 2 s, 4 s … up to
 *   PAIR_MAX_BLOCK_SECONDS). A success resets it.
 * - **Sign-in, per account from any address**: past `ACCOUNT_FREE_FAILURES` failures in an hour the
 *   account is blocked for growing delays of at most ACCOUNT_MAX_BLOCK_SECONDS, so that guessing
 *   spread over many addresses stays slow, yet a stranger can only hold the real user off for that
 *   long at a time; and an address the account signed in from in the last KNOWN_ADDRESS_DAYS is
 *   exempt from this block altogether (the real user's usual place keeps working).
 * Accounts and addresses are keyed by SHA-256, so Redis holds neither e-mails nor addresses.
 */
export interface AuthThrottle {
  /** Before a credential is looked up in Postgres: 429 while the address is over its failure budget. */
  beforeLookup(ip: string): Promise<void>;
  /** A credential check failed: charges the address (never waits, never fails the request). */
  failed(ip: string): void;
  /** Before a password is verified: 429 while the address, the pair or the account is blocked. */
  beforeSignIn(email: string, ip: string): Promise<void>;
  signInFailed(email: string, ip: string): Promise<void>;
  signInSucceeded(email: string, ip: string): Promise<void>;
}

export const PAIR_FREE_FAILURES = 5;
export const PAIR_MAX_BLOCK_SECONDS = 15 * 60;
export const ACCOUNT_FREE_FAILURES = 20;
export const ACCOUNT_MAX_BLOCK_SECONDS = 60;
export const KNOWN_ADDRESS_DAYS = 30;
const PAIR_WINDOW_SECONDS = 24 * 3600;
const ACCOUNT_WINDOW_SECONDS = 3600;
const ADDRESS_WINDOW_SECONDS = 60;

const SIGN_IN_BLOCKED = 'Demasiados intentos de inicio de sesión; espera antes de reintentar';

export function createAuthThrottle(o: { redis: RedisClient; keys: RedisKeys; logger: Logger; failuresPerAddress: number }): AuthThrottle {
  const prefix = o.keys.authThrottle;
  const limiter = (keyPrefix: string, points: number, duration: number) =>
    new RateLimiterRedis({
      storeClient: o.redis,
      keyPrefix: `${prefix}:${keyPrefix}`,
      points,
      duration,
      // Redis unreachable: count in this process, as the route limits do
      insuranceLimiter: new RateLimiterMemory({ points, duration }),
    });
  const addressFailures = limiter('addr', o.failuresPerAddress, ADDRESS_WINDOW_SECONDS);
  // failure counters (points high enough never to refuse: the blocks below do the refusing)
  const pairFailures = limiter('pair', 1_000_000, PAIR_WINDOW_SECONDS);
  const accountFailures = limiter('acct', 1_000_000, ACCOUNT_WINDOW_SECONDS);
  const pairBlocks = limiter('pair-block', 1, 1);
  const accountBlocks = limiter('acct-block', 1, 1);
  const knownKey = (account: string) => `${prefix}:known:${account}`;
  /** address hash → when this process last learnt that the address is blocked until */
  const blockedUntil = new Map<string, number>();

  const addressKey = (ip: string) => sha256Hex(ip);
  const accountKey = (email: string) => sha256Hex(email.trim().toLowerCase());

  const blockedMs = async (l: RateLimiterRedis, key: string, points: number): Promise<number> => {
    const res = await l.get(key);
    return res && res.consumedPoints > points ? res.msBeforeNext : 0;
  };
  const refuseIfBlocked = (ms: number, message?: string): void => {
    if (ms > 0) throw new RateLimitError(Math.max(1, Math.ceil(ms / 1000)), {}, message);
  };
  const growing = (failures: number, free: number, max: number): number => Math.min(max, 2 ** Math.min(30, failures - free - 1));

  const throttle: AuthThrottle = {
    async beforeLookup(ip) {
      const key = addressKey(ip);
      // an address known here to be over its budget is refused without a Redis round trip
      const until = blockedUntil.get(key);
      if (until !== undefined) {
        if (until > Date.now()) refuseIfBlocked(until - Date.now());
        blockedUntil.delete(key);
      }
      const ms = await blockedMs(addressFailures, key, o.failuresPerAddress - 1);
      if (ms > 0) {
        if (blockedUntil.size > 10_000) blockedUntil.clear();
        blockedUntil.set(key, Date.now() + ms);
      }
      refuseIfBlocked(ms);
    },
    failed(ip) {
      addressFailures.consume(addressKey(ip)).catch((rejection) => {
        if (!(rejection instanceof RateLimiterRes)) o.logger.warn('failed credential not counted', { err: (rejection as Error).message });
      });
    },
    async beforeSignIn(email, ip) {
      await throttle.beforeLookup(ip);
      const account = accountKey(email);
      const pair = `${account}:${addressKey(ip)}`;
      const [pairMs, accountMs, known] = await Promise.all([
        blockedMs(pairBlocks, pair, 1),
        blockedMs(accountBlocks, account, 1),
        o.redis.sismember(knownKey(account), addressKey(ip)),
      ]);
      refuseIfBlocked(pairMs, SIGN_IN_BLOCKED);
      if (!known) refuseIfBlocked(accountMs, SIGN_IN_BLOCKED);
    },
    async signInFailed(email, ip) {
      throttle.failed(ip);
      const account = accountKey(email);
      const pair = `${account}:${addressKey(ip)}`;
      const [p, a] = await Promise.all([pairFailures.penalty(pair, 1), accountFailures.penalty(account, 1)]);
      const blocks: Array<Promise<unknown>> = [];
      if (p.consumedPoints > PAIR_FREE_FAILURES) {
        blocks.push(pairBlocks.block(pair, growing(p.consumedPoints, PAIR_FREE_FAILURES, PAIR_MAX_BLOCK_SECONDS)));
      }
      if (a.consumedPoints > ACCOUNT_FREE_FAILURES) {
        blocks.push(accountBlocks.block(account, growing(a.consumedPoints, ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_BLOCK_SECONDS)));
      }
      await Promise.all(blocks);
    },
    async signInSucceeded(email, ip) {
      const account = accountKey(email);
      const pair = `${account}:${addressKey(ip)}`;
      await Promise.all([
        pairFailures.delete(pair),
        pairBlocks.delete(pair),
        o.redis.multi().sadd(knownKey(account), addressKey(ip)).expire(knownKey(account), KNOWN_ADDRESS_DAYS * 86_400).exec(),
      ]);
    },
  };
  return throttle;
}
