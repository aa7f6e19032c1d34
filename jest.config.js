/** One jest run for the whole workspace; tests live in each package's `test/` folder. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/apps', '<rootDir>/test', '<rootDir>/bench'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }] },
  moduleNameMapper: {
    '^@svc/core$': '<rootDir>/packages/core/src/index.ts',
    '^@svc/testing$': '<rootDir>/packages/testing/src/index.ts',
    '^@svc/testing/api$': '<rootDir>/packages/testing/src/api.ts',
    '^@svc/api$': '<rootDir>/apps/api/src/index.ts',
  },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ['<rootDir>/.*/dist/'],
};
