import { ConfigError, parseConfig } from '@svc/core';

/** DISPATCHER_ROLE (apps/dispatcher/src/main.ts): what one dispatcher process runs; pure parsing. */
const KEY = Buffer.alloc(32, 1).toString('base64');

it('defaults to all, takes dispatch and deliver, and refuses anything else in one sentence', () => {
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY }).dispatcherRole).toBe('all');
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DISPATCHER_ROLE: '' }).dispatcherRole).toBe('all');
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DISPATCHER_ROLE: 'dispatch' }).dispatcherRole).toBe('dispatch');
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DISPATCHER_ROLE: 'deliver' }).dispatcherRole).toBe('deliver');
  for (const bad of ['DELIVER', 'webhooks', 'deliver,dispatch', 'all ']) {
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, DISPATCHER_ROLE: bad }))
      .toThrow(new ConfigError(`DISPATCHER_ROLE must be one of all, dispatch, deliver, got "${bad}".`));
  }
});
