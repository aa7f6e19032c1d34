export * from './harness';
export * from './fixtures';
