// How each process of the platform is started — one list for `npm start`, the benchmarks (which
// start the platform the way a user runs it), docker-compose.yml and the README's commands by hand.

/**
 * The API's young generation may grow to 32 MB per semi-space (V8's default is 16): a request's
 * objects then die young instead of being promoted and collected again in old space. Under B1's
 * load that lowered both the API's CPU per request and its peak RSS (BENCHMARKS.md, B1).
 * Its old space grows to twice the live data between full collections (V8 otherwise lets it grow
 * several times the live data under a steady allocation rate): a lower peak RSS in B1, the same
 * CPU per request within the noise. Not a cap: a larger live heap still gets the room it needs.
 */
export const APPS = {
  api: { script: 'apps/api/dist/main.js', nodeArgs: ['--max-semi-space-size=32', '--heap-growing-percent=100'] },
  dispatcher: { script: 'apps/dispatcher/dist/main.js', nodeArgs: [] },
  agent: { script: 'apps/agent-sim/dist/main.js', nodeArgs: [] },
};

/**
 * What only the platform's processes may hold: a robot (agent-sim) is started with none of it, as
 * on a customer's machine — its platform URL and machine keys are all it needs (docs/agent-sim.md).
 */
export const PLATFORM_ONLY_ENV = /^(DATABASE_|REDIS_|PG|ASSET_ENCRYPTION_KEY$)/;

/** `env` without anything only the platform may hold. */
export function robotEnv(env) {
  return Object.fromEntries(Object.entries(env).filter(([k, v]) => v !== undefined && !PLATFORM_ONLY_ENV.test(k)));
}
