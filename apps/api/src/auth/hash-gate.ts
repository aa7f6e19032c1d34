import pLimit from 'p-limit';
import { RateLimitError } from '@svc/core';

/**
 * Bounds the password verifications of one process. scrypt runs on libuv's small thread pool,
 * which the rest of the process (file reads, DNS, other crypto) shares, and each verification
 * takes a core for a while: a flood of sign-ins must neither fill the pool nor take every core.
 * At most `concurrency` run at once; up to `maxWaiting` more wait their turn; past that the
 * sign-in answers 429 at once.
 */
export interface HashGate {
  run<T>(verify: () => Promise<T>): Promise<T>;
}

export function createHashGate(concurrency: number, maxWaiting = concurrency * 32): HashGate {
  const limit = pLimit(concurrency);
  return {
    run(verify) {
      if (limit.activeCount + limit.pendingCount >= concurrency + maxWaiting) return Promise.reject(new RateLimitError(1));
      return limit(verify);
    },
  };
}
