import { ConfigError, parseConfig } from '@svc/core';

/** CLAIM_FLOOR and CLAIM_FLOOR_EVERY_MS (docs/decisions/claim-floor.md); pure parsing. */
const KEY = Buffer.alloc(32, 1).toString('base64');
const parse = (env: Record<string, string>) => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, ...env });

it('is off by default, takes on and off, and refuses anything else in one sentence', () => {
  expect(parse({}).claimFloor).toBe(false);
  expect(parse({ CLAIM_FLOOR: '' }).claimFloor).toBe(false);
  expect(parse({ CLAIM_FLOOR: 'on' }).claimFloor).toBe(true);
  expect(parse({ CLAIM_FLOOR: 'off' }).claimFloor).toBe(false);
  for (const bad of ['ON', 'true', '1', 'on ', 'on\u0000']) {
    expect(() => parse({ CLAIM_FLOOR: bad })).toThrow(new ConfigError(`CLAIM_FLOOR must be one of on, off, got "${bad}".`));
  }
});

it('recomputes every second by default, between 100 ms and a minute', () => {
  expect(parse({}).claimFloorEveryMs).toBe(1000);
  expect(parse({ CLAIM_FLOOR_EVERY_MS: '250' }).claimFloorEveryMs).toBe(250);
  for (const bad of ['99', '60001', '1.5', 'fast', '-1', '1e3x']) {
    expect(() => parse({ CLAIM_FLOOR_EVERY_MS: bad }))
      .toThrow(new ConfigError(`CLAIM_FLOOR_EVERY_MS must be an integer between 100 and 60000, got "${bad}".`));
  }
});
