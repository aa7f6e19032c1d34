import { ConfigError, parseConfig } from '@svc/core';

/** WEBHOOK_DELIVERY_PRIORITY and WEBHOOK_DELIVERY_BUSY_SHARE (apps/dispatcher/src/delivery-thread.ts): pure parsing. */
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

it('WEBHOOK_DELIVERY_BUSY_SHARE: defaults to a twentieth of a core, takes 0.01 to 1, and refuses anything else', () => {
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY }).webhookDeliveryBusyShare).toBe(0.05);
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_BUSY_SHARE: '0.25' }).webhookDeliveryBusyShare).toBe(0.25);
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_BUSY_SHARE: '1' }).webhookDeliveryBusyShare).toBe(1);
  for (const bad of ['0', '1.5', '-0.1', 'half', 'NaN', 'Infinity']) {
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_BUSY_SHARE: bad }))
      .toThrow(new ConfigError(`WEBHOOK_DELIVERY_BUSY_SHARE must be a number between 0.01 and 1, got "${bad}".`));
  }
});

it('WEBHOOK_DELIVERY_MAX_LAG_SECONDS: defaults to a minute, takes whole seconds up to a day', () => {
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY }).webhookDeliveryMaxLagSeconds).toBe(60);
  expect(parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_MAX_LAG_SECONDS: '300' }).webhookDeliveryMaxLagSeconds).toBe(300);
  for (const bad of ['0', '86401', '1.5', 'soon']) {
    expect(() => parseConfig({ ASSET_ENCRYPTION_KEY: KEY, WEBHOOK_DELIVERY_MAX_LAG_SECONDS: bad })).toThrow(ConfigError);
  }
});
