import { FASTEST_REFRESH_MS, RATE_LIMIT_PER_MINUTE, refreshIntervalMs } from '../src/lib/refresh';

/** The overview's pace: as fast as 5 s, never so fast that its reads alone reach the token's rate limit. */
describe('how often the overview refreshes', () => {
  it('refreshes every 5 s while its reads are few', () => {
    expect(refreshIntervalMs(3)).toBe(FASTEST_REFRESH_MS);
    expect(refreshIntervalMs(8)).toBe(FASTEST_REFRESH_MS);
  });

  it('slows down with many queues, keeping a fifth of the rate limit for the operator', () => {
    for (const reads of [9, 23, 50, 103]) {
      const perMinute = reads * (60_000 / refreshIntervalMs(reads));
      expect(perMinute).toBeLessThanOrEqual(RATE_LIMIT_PER_MINUTE * 0.8);
      expect(perMinute).toBeGreaterThan(RATE_LIMIT_PER_MINUTE * 0.75); // and no slower than it must
    }
    expect(refreshIntervalMs(103)).toBe(64_375);
  });
});
