// Where redis-server and redis-cli are, for the tests on a Redis Cluster: the `*.cluster.test.ts`
// variants (the run's three-primary cluster, started by test/global-setup.ts) and the dedicated
// redis-cluster*.test.ts files (private clusters). Both binaries must be on PATH (Debian's
// redis-server package, and redis-tools for redis-cli). CommonJS so that jest.config.js and scripts/test.mjs share it.
const { existsSync } = require('node:fs');
const path = require('node:path');

function onPath(name, env) {
  for (const dir of (env.PATH || '').split(':')) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/** redis-server's path when redis-cli is there too, else null. */
function findRedisClusterTools(env = process.env) {
  const server = onPath('redis-server', env);
  return server && onPath('redis-cli', env) ? server : null;
}

/** What scripts/test.mjs says when these tests are left out. */
const LEFT_OUT = {
  suites: 'Redis Cluster tests (*.cluster.test.ts, redis-cluster*.test.ts)',
  missing: 'redis-server and redis-cli on PATH',
  install: 'apt-get install -y redis-server redis-tools',
};

module.exports = {
  findRedisClusterTools,
  LEFT_OUT,
  CLUSTER_TESTS: '(\\.cluster|/redis-cluster(-failover)?)\\.test\\.ts$',
};
