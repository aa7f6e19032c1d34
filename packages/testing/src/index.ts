/**
 * Shared test helpers for every workspace's tests, from the bottom layer up; the in-process API
 * is the separate entry `@svc/testing/api`, the private S3 server `@svc/testing/s3` (docs/decisions/test-layers.md).
 */
export * from './context';
export * from './migration-before';
export * from './fixtures';
export * from './log-capture';
export * from './wait';
export * from './journal';
export * from './suites';
export * from './processes';
export * from './private-servers';
export * from './redis';
export * from './pgbouncer';
export * from './refusal';
export * from './metrics';
export * from './otlp-receiver';
export * from './http-once';
export * from './tcp-proxy';
export * from './statements';
export * from './raw-websocket';
export * from './tls';
export * from './connect-proxy';
export * from './agent-protocol';
export * from './packed';
export * from './readme-robot';
export * from './protocol-relay';
