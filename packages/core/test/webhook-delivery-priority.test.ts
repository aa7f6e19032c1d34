import { ConfigError, parseConfig } from '@svc/core';

/** WEBHOOK_DELIVERY_PRIORITY (apps/dispatcher/src/delivery-thread.ts): pure parsing. */
const KEY = Buffer.alloc(32, 1).toString('base64');

it('defaults to idle, takes normal, and refuses anything else in one sentence', () => {
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY }).webhookDeliveryPriority).toBe('idle');
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_PRIORITY: '' }).webhookDeliveryPriority).toBe('idle');
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_PRIORITY: 'normal' }).webhookDeliveryPriority).toBe('normal');
  for (const bad of ['IDLE', 'low', '19', 'idle ']) {
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_PRIORITY: bad }))
      .toThrow(new ConfigError(`WEBHOOK_DELIVERY_PRIORITY must be one of idle, normal, got "${bad}".`));
  }
});
