import { isIPv6 } from 'node:net';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { es, RateLimitError, sha256Hex, UnauthorizedError, type Logger, type RedisClient, type RedisKeys } from '@svc/core';
import { limiterClient } from '../middleware/rate-limit';

/**
 * Throttles for guessing credentials (docs/decisions/login-throttling.md), counted in Redis so
 * every API replica shares them.
 *
 * - **Per address, before any look-up.** Every failed credential check charges its source
 *   address; past `failuresPerAddress` failures in a minute, the address's look-ups answer 429
 *   before anything is looked up, for the rest of that minute. At most LOOKUPS_IN_FLIGHT look-ups
 *   of one address run at once in a process, and one that waited for its turn checks the budget
 *   again, so concurrent guesses overshoot it by fewer than that per process, while a client warming many valid keys at once is
 *   only queued, never refused. A key already cached is answered from memory, never checked.
 * - **Sign-in, per account and address pair**: `PAIR_FREE_FAILURES` failures in a row, then every
 *   further failure blocks the pair for twice as long as the previous one (1, 2, 4 … units up to
 *   PAIR_MAX_BLOCK_UNITS). One password check at a time per pair, and ACCOUNT_PARALLEL per
 *   account, so parallel guesses cannot pass a check all at once. A success resets the pair.
 * - **Sign-in, per account from any address**: past `ACCOUNT_FREE_FAILURES` failures in an hour the
 *   account is blocked for growing delays of at most ACCOUNT_MAX_BLOCK_UNITS, so that guessing
 *   spread over many addresses stays slow, yet a stranger can only hold the real user off for that
 *   long at a time; and an address the account signed in from in the last KNOWN_ADDRESS_DAYS is
 *   exempt from this block altogether (the real user's usual place keeps working).
 * Accounts and addresses are keyed by SHA-256 (IPv6 by its /64, what one subscriber is given), so
 * Redis holds neither e-mails nor addresses. A unit is `unitSeconds` (1). With Redis unreachable
 * the counters fall back to this process and the extras (known addresses, in-flight checks) are
 * skipped: sign-in keeps working.
 */
export interface AuthThrottle {
  /**
   * Before a credential is looked up in Postgres: 429 when the address is over its failure budget,
   * else a turn among the address's look-ups in flight. Call `settle(valid)` once the look-up
   * answered (an invalid credential charges the address).
   */
  beforeLookup(ip: string): Promise<{ settle(valid: boolean): void }>;
  /** A credential refused without a look-up (a cached miss): charges the address. */
  failed(ip: string): void;
  /** A sign-in: `verify` checks the password (UnauthorizedError when wrong), inside the throttles. */
  signIn<T>(email: string, ip: string, verify: () => Promise<T>): Promise<T>;
}

export const PAIR_FREE_FAILURES = 5;
export const PAIR_MAX_BLOCK_UNITS = 15 * 60;
export const ACCOUNT_FREE_FAILURES = 20;
export const ACCOUNT_MAX_BLOCK_UNITS = 60;
export const ACCOUNT_PARALLEL = 4;
export const KNOWN_ADDRESS_DAYS = 30;
const PAIR_WINDOW_SECONDS = 24 * 3600;
const ACCOUNT_WINDOW_SECONDS = 3600;
const ADDRESS_WINDOW_SECONDS = 60;
/** Credential look-ups of one address running at once in one process. */
export const LOOKUPS_IN_FLIGHT = 4;
/** Look-ups of one address waiting for a turn before the next is refused (429). */
const LOOKUPS_WAITING = 1000;
/** How long an in-flight password check holds its place if its process dies before releasing it. */
const IN_FLIGHT_TTL_MS = 30_000;

const SIGN_IN_BLOCKED = es.auth.signInBlocked;

/** KEYS[1] an in-flight count; ARGV: most at once, TTL (ms). 1 when a place was taken, else 0. */
const TAKE_LUA = `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then redis.call('DECR', KEYS[1]) return 0 end
return 1`;

/** The address as the throttles count it: IPv6 by its /64, anything else as it is. */
export function addressOf(ip: string): string {
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export function createAuthThrottle(o: { redis: RedisClient; keys: RedisKeys; logger: Logger; failuresPerAddress: number; unitSeconds?: number }): AuthThrottle {
  const prefix = o.keys.authThrottle;
  const unit = o.unitSeconds ?? 1;
  const client = limiterClient(o.redis);
  const limiter = (keyPrefix: string, points: number, duration: number) =>
    new RateLimiterRedis({
      storeClient: client,
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
  /** address hash → until when this process knows the address is over its budget */
  const blockedUntil = new Map<string, number>();
  /** address hash → look-ups running and the ones waiting for a turn */
  const turns = new Map<string, { running: number; waiting: Array<() => void> }>();

  const lookupTurn = async (key: string): Promise<{ waited: boolean; release(): void }> => {
    let t = turns.get(key);
    if (!t) turns.set(key, (t = { running: 0, waiting: [] }));
    let waited = false;
    if (t.running >= LOOKUPS_IN_FLIGHT) {
      if (t.waiting.length >= LOOKUPS_WAITING) refuse(1000);
      await new Promise<void>((resolve) => t!.waiting.push(resolve));
      waited = true;
    } else {
      t.running++;
    }
    return {
      waited,
      release: () => {
        const next = t!.waiting.shift();
        if (next) next();
        else if (--t!.running === 0) turns.delete(key);
      },
    };
  };

  /** address hash → until when a failure this process counted for it stays in the window */
  const failedLately = new Map<string, number>();

  /**
   * 429 while the address is over its failure budget. Redis is asked only about an address this
   * process saw fail within the window: a valid credential of a well-behaved client costs no
   * round trip, and an address failing on other replicas is caught here by its first failure
   * (whose count says it is over), so each replica lets at most one look-up more through.
   */
  const refuseIfOverBudget = async (key: string): Promise<void> => {
    const until = blockedUntil.get(key);
    if (until !== undefined) {
      if (until > Date.now()) refuse(until - Date.now());
      blockedUntil.delete(key);
    }
    const lately = failedLately.get(key);
    if (lately === undefined) return;
    if (lately <= Date.now()) {
      failedLately.delete(key);
      return;
    }
    const res = await addressFailures.get(key);
    if (res && res.consumedPoints >= o.failuresPerAddress) {
      block(key, res.msBeforeNext);
      refuse(res.msBeforeNext);
    }
  };

  const block = (key: string, ms: number): void => {
    if (blockedUntil.size > 10_000) blockedUntil.clear();
    blockedUntil.set(key, Date.now() + ms);
  };

  const charge = async (key: string): Promise<void> => {
    if (failedLately.size > 10_000) failedLately.clear();
    failedLately.set(key, Date.now() + ADDRESS_WINDOW_SECONDS * 1000);
    try {
      const res = await addressFailures.consume(key);
      if (res.consumedPoints >= o.failuresPerAddress) block(key, res.msBeforeNext);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) block(key, rejection.msBeforeNext);
      else o.logger.warn('failed credential not counted', { err: (rejection as Error).message });
    }
  };

  const addressKey = (ip: string) => sha256Hex(addressOf(ip));
  const accountKey = (email: string) => sha256Hex(email.trim().toLowerCase());
  const warn = (what: string) => (err: unknown) => {
    o.logger.warn(what, { err: (err as Error).message });
    return null;
  };

  const blockedMs = async (l: RateLimiterRedis, key: string): Promise<number> => {
    const res = await l.get(key);
    return res && res.consumedPoints > 1 ? res.msBeforeNext : 0;
  };
  const refuse = (ms: number, message?: string): never => {
    throw new RateLimitError(Math.max(1, Math.ceil(ms / 1000)), {}, message);
  };
  const growing = (failures: number, free: number, max: number): number => unit * Math.min(max, 2 ** Math.min(30, failures - free - 1));

  /** Takes one of `most` places of `key`, or returns false; Redis unreachable: a place is given. */
  const takePlace = async (key: string, most: number): Promise<boolean> =>
    (await client.eval(TAKE_LUA, 1, key, most, IN_FLIGHT_TTL_MS).catch(warn('sign-in in-flight count unavailable'))) !== 0;
  const leavePlace = (key: string): void => {
    client.decr(key).catch(() => undefined);
  };

  const throttle: AuthThrottle = {
    async beforeLookup(ip) {
      const key = addressKey(ip);
      await refuseIfOverBudget(key);
      const turn = await lookupTurn(key);
      // a look-up that waited for its turn looks again: the ones before it may have failed
      if (turn.waited) await refuseIfOverBudget(key).catch((err) => {
        turn.release();
        throw err;
      });
      let settled = false;
      return {
        settle: (valid) => {
          if (settled) return;
          settled = true;
          if (valid) turn.release();
          // the failure is counted before the next look-up of the address gets the turn
          else void charge(key).finally(turn.release);
        },
      };
    },
    failed(ip) {
      void charge(addressKey(ip));
    },
    async signIn(email, ip, verify) {
      const address = await throttle.beforeLookup(ip);
      const account = accountKey(email);
      const from = addressKey(ip);
      const pair = `${account}:${from}`;
      const pairPlace = `${prefix}:inflight:pair:${pair}`;
      const accountPlace = `${prefix}:inflight:acct:${account}`;
      try {
        if (!(await takePlace(pairPlace, 1))) refuse(1000, SIGN_IN_BLOCKED);
      } catch (err) {
        address.settle(true);
        throw err;
      }
      try {
        if (!(await takePlace(accountPlace, ACCOUNT_PARALLEL))) refuse(1000, SIGN_IN_BLOCKED);
        try {
          const [pairMs, accountMs, known] = await Promise.all([
            blockedMs(pairBlocks, pair),
            blockedMs(accountBlocks, account),
            client.sismember(knownKey(account), from).catch(warn('known sign-in addresses unavailable')),
          ]);
          if (pairMs > 0) refuse(pairMs, SIGN_IN_BLOCKED);
          if (accountMs > 0 && !known) refuse(accountMs, SIGN_IN_BLOCKED);
          let result: Awaited<ReturnType<typeof verify>>;
          try {
            result = await verify();
          } catch (err) {
            if (err instanceof UnauthorizedError) {
              address.settle(false);
              await recordFailure(account, pair);
            }
            throw err;
          }
          address.settle(true);
          await Promise.all([
            pairFailures.delete(pair),
            pairBlocks.delete(pair),
            client.multi().sadd(knownKey(account), from).expire(knownKey(account), KNOWN_ADDRESS_DAYS * 86_400).exec(),
          ]).catch(warn('sign-in success not recorded'));
          return result;
        } finally {
          leavePlace(accountPlace);
        }
      } finally {
        leavePlace(pairPlace);
        // a sign-in refused before its password was checked charges nothing (settled once)
        address.settle(true);
      }
    },
  };

  async function recordFailure(account: string, pair: string): Promise<void> {
    const [p, a] = await Promise.all([pairFailures.penalty(pair, 1), accountFailures.penalty(account, 1)]);
    const blocks: Array<Promise<unknown>> = [];
    if (p.consumedPoints > PAIR_FREE_FAILURES) {
      blocks.push(pairBlocks.block(pair, growing(p.consumedPoints, PAIR_FREE_FAILURES, PAIR_MAX_BLOCK_UNITS)));
    }
    if (a.consumedPoints > ACCOUNT_FREE_FAILURES) {
      blocks.push(accountBlocks.block(account, growing(a.consumedPoints, ACCOUNT_FREE_FAILURES, ACCOUNT_MAX_BLOCK_UNITS)));
    }
    await Promise.all(blocks);
  }

  return throttle;
}
