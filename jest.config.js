const { findChromium, BROWSER_TESTS } = require('./scripts/chromium.cjs');
const { findPromtool, PROMTOOL_TESTS } = require('./scripts/promtool.cjs');
const { findPgBouncer, PGBOUNCER_TESTS } = require('./scripts/pgbouncer.cjs');
const { findRedisClusterTools, CLUSTER_TESTS } = require('./scripts/redis-cluster.cjs');
const { findPython, PYTHON_TESTS } = require('./scripts/python.cjs');

// The console's browser tests (apps/console/test/*.browser.test.ts) need a Chromium; without one
// they are left out (scripts/test.mjs names every suite left out in one line) and everything else runs.
const chromium = findChromium();
if (chromium) process.env.SVC_CHROMIUM = chromium;
// Likewise the checks of the metrics exposition and alert rules with promtool (*.promtool.test.ts).
const promtool = findPromtool();
// Likewise the tests through a private PgBouncer (*.pgbouncer.test.ts) need pgbouncer installed.
const pgbouncer = findPgBouncer();
if (pgbouncer) process.env.SVC_PGBOUNCER = pgbouncer;
// Likewise the tests on a Redis Cluster need redis-server and redis-cli: the `*.cluster.test.ts`
// variants run existing test files on the cluster test/global-setup.ts starts (only when this
// says so), the redis-cluster*.test.ts files start private ones.
const redisCluster = findRedisClusterTools();
if (redisCluster) process.env.SVC_TEST_START_REDIS_CLUSTER = '1';
// Likewise the Python SDK's tests need a Python 3.11+ that imports websockets.
const python = findPython();
if (python) process.env.SVC_PYTHON = python;

// The AWS SDK (the S3 archive) prints, once per process, that its releases after early 2027 need
// Node 22; every test worker would repeat it
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** One jest run for the whole workspace; tests live in each package's `test/` folder. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/apps', '<rootDir>/test', '<rootDir>/bench', '<rootDir>/sdk'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }] },
  moduleNameMapper: {
    '^@svc/core$': '<rootDir>/packages/core/src/index.ts',
    '^@svc/core/queue-items/statuses$': '<rootDir>/packages/core/src/queue-items/statuses.ts',
    '^@svc/core/queue-items/exception-types$': '<rootDir>/packages/core/src/queue-items/exception-types.ts',
    '^@svc/core/internals$': '<rootDir>/packages/core/src/internals.ts',
    '^@svc/core/schemas$': '<rootDir>/packages/core/src/schemas.ts',
    '^@svc/core/machine-protocol$': '<rootDir>/packages/core/src/machine-protocol.ts',
    '^@svc/core/observability$': '<rootDir>/packages/core/src/observability.ts',
    '^@svc/testing$': '<rootDir>/packages/testing/src/index.ts',
    '^@svc/testing/api$': '<rootDir>/packages/testing/src/api.ts',
    '^@svc/testing/s3$': '<rootDir>/packages/testing/src/s3.ts',
    '^@svc/api$': '<rootDir>/apps/api/src/index.ts',
    '^@svc/agent$': '<rootDir>/packages/agent/src/index.ts',
    '^@svc/client$': '<rootDir>/packages/client/src/index.ts',
  },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ['<rootDir>/.*/dist/'],
  testPathIgnorePatterns: ['/node_modules/', ...(chromium ? [] : [BROWSER_TESTS]), ...(promtool ? [] : [PROMTOOL_TESTS]), ...(pgbouncer ? [] : [PGBOUNCER_TESTS]), ...(redisCluster ? [] : [CLUSTER_TESTS]), ...(python ? [] : [PYTHON_TESTS])],
};
