export * from './harness';
export * from './fixtures';
export * from './log-capture';
