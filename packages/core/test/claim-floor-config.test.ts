import { ConfigError, parseConfig } from '@svc/core';

/** CLAIM_FLOOR, CLAIM_FLOOR_ENGAGE_S and CLAIM_FLOOR_EVERY_MS (docs/decisions/claim-floor.md); pure parsing. */
const KEY = Buffer.alloc(32, 1).toString('base64');
const parse = (env: Record<string, string>) => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, ...env });

it('is auto by default, takes auto, on and off, and refuses anything else in one sentence', () => {
  expect(parse({}).claimFloor).toBe('auto');
  expect(parse({ CLAIM_FLOOR: '' }).claimFloor).toBe('auto');
  expect(parse({ CLAIM_FLOOR: 'on' }).claimFloor).toBe('on');
  expect(parse({ CLAIM_FLOOR: 'off' }).claimFloor).toBe('off');
  expect(parse({ CLAIM_FLOOR: 'auto' }).claimFloor).toBe('auto');
  for (const bad of ['ON', 'true', '1', 'on ', 'on\u0000', 'Auto']) {
    expect(() => parse({ CLAIM_FLOOR: bad })).toThrow(new ConfigError(`CLAIM_FLOOR must be one of auto, on, off, got "${bad}".`));
  }
});

it('engages the floors in auto mode from a snapshot 30 s old by default, 0 to a day', () => {
  expect(parse({}).claimFloorEngageSeconds).toBe(30);
  expect(parse({ CLAIM_FLOOR_ENGAGE_S: '0' }).claimFloorEngageSeconds).toBe(0);
  for (const bad of ['-1', '86401', '2.5', 'soon']) {
    expect(() => parse({ CLAIM_FLOOR_ENGAGE_S: bad }))
      .toThrow(new ConfigError(`CLAIM_FLOOR_ENGAGE_S must be an integer between 0 and 86400, got "${bad}".`));
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
