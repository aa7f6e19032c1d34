import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

export { Cluster };
export type { Redis };

/**
 * A Redis client of either deployment: one server (`REDIS_URL`) or a Redis Cluster
 * (`REDIS_CLUSTER_NODES`). Every process uses this type and gets its connections from
 * `createRedis`, so nothing assumes a single server (docs/decisions/redis-cluster.md).
 */
export type RedisClient = Redis | Cluster;

/** Where Redis is: one server by URL, or the seed nodes of a Redis Cluster. */
export type RedisTarget =
  | { mode: 'single'; url: string; password?: string }
  | { mode: 'cluster'; nodes: Array<{ host: string; port: number }>; password?: string };

export function isRedisClient(x: unknown): x is RedisClient {
  return x instanceof Redis || x instanceof Cluster;
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/**
 * Every Redis key and channel of a deployment lives under one prefix (a test run gets its own).
 * Names are built here only, so the layout is visible in one place. On a Redis Cluster each
 * multi-key command or script keeps its keys in one slot through a hash tag (`{…}`): one per work
 * queue (BullMQ queue names), one per rate-limited route, one per cluster primary for the epoch
 * markers (docs/decisions/redis-cluster.md).
 */
export function redisKeys(prefix: string) {
  return {
    prefix,
    /** BullMQ's own key prefix (queue names carry a hash tag per queue; see queues catalogue). */
    bull: `${prefix}:bull`,
    rateLimit: `${prefix}:rl`,
    /** Sorted sets of the open event streams per user and per workspace (leases; apps/api/src/http/streams.ts). */
    streams: `${prefix}:streams`,
    /** Failed sign-ins and credential checks, and their blocks (apps/api/src/auth/throttle.ts). */
    authThrottle: `${prefix}:auth`,
    /** Bull Board's browser sessions, by SHA-256 of the cookie's id (apps/api/src/admin/queues-board.ts). */
    boardSessions: `${prefix}:board:session`,
    /** Pub/sub channel: API key ids whose cached authentication must be dropped now. */
    apiKeyInvalidations: `${prefix}:apikey:invalidate`,
    /** Pub/sub channel: job ids whose stop was requested. */
    jobStops: `${prefix}:job:stop`,
    /** Pub/sub channel: jobs waiting for input that were answered (docs/decisions/human-input.md). */
    jobInputs: `${prefix}:job:input`,
    /** Pub/sub channel: machines whose queues got jobs (dispatch/stops.ts, MachineWorkMessage). */
    machineWork: `${prefix}:machine:work`,
    /**
     * Set (NX) by dispatchers: its absence means Redis lost its data, so schedulers and queues are
     * rebuilt. On a cluster there is one per primary, `<dispatchEpoch>:{<tag>}` with a tag that
     * hashes into that primary's slots (dispatch/epoch.ts).
     */
    dispatchEpoch: `${prefix}:dispatch:epoch`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;

export type CreateRedisOptions = RedisOptions & {
  /** BullMQ workers and subscribers: never give up on a command. */
  blocking?: boolean;
  /** Cluster only: options of the cluster client itself (auto-pipelining, slot refresh, …). */
  cluster?: ClusterOptions;
};

/**
 * The one factory of Redis connections. `target` is the configuration's (`config.redis`) or, for
 * tests and scripts, a `redis://` URL. `blocking` connections (BullMQ workers, subscribers) never
 * give up on a command.
 */
export function createRedis(target: RedisTarget | string, options: CreateRedisOptions = {}): RedisClient {
  const t: RedisTarget = typeof target === 'string' ? { mode: 'single', url: target } : target;
  const { blocking, cluster, ...rest } = options;
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: blocking ? null : 3,
    enableReadyCheck: true,
    lazyConnect: false,
    ...(t.password ? { password: t.password } : {}),
    ...rest,
  };
  if (t.mode === 'single') return new Redis(t.url, redisOptions);
  const { lazyConnect, enableOfflineQueue, ...perNode } = redisOptions;
  return new Cluster(t.nodes, {
    lazyConnect,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    enableReadyCheck: true,
    // a command sent while the cluster fails over or its slots move is retried, not lost
    maxRedirections: 32,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    ...cluster,
    redisOptions: perNode,
  });
}

/**
 * A new connection like `client` (same server or cluster, same options) with `options` on top:
 * `duplicate` takes different arguments on a Cluster, and auto-pipelining is a cluster-level
 * option there.
 */
export function duplicateRedis(client: RedisClient, options: RedisOptions = {}): RedisClient {
  if (!isCluster(client)) return client.duplicate(options);
  const { enableAutoPipelining, ...perNode } = options;
  return client.duplicate(undefined, {
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    redisOptions: { ...client.options.redisOptions, ...perNode },
  });
}

/** What a cluster client keeps of its subscriber (ioredis' ClusterSubscriber, not in its types). */
interface ClusterSubscriberHolder {
  subscriber?: { getInstance(): Redis | null };
}

/**
 * Follows a cluster client's subscriber connection, which the client itself does not report on:
 * when that connection ends (killed, its node gone) ioredis subscribes again on a node it picks,
 * and what was published in between is lost without a word. `lost` is called when it ends,
 * `back` when the one picked next is ready. Returns the function that stops following.
 */
export function watchClusterSubscriber(cluster: Cluster, events: { lost(): void; back(): void }): () => void {
  const holder = (cluster as unknown as ClusterSubscriberHolder).subscriber;
  const watched = new WeakSet<Redis>();
  let stopped = false;
  const watch = (fresh: boolean) => {
    const conn = stopped ? null : holder?.getInstance();
    if (!conn || watched.has(conn)) return;
    watched.add(conn);
    if (fresh) {
      // the next connection may be ready before the old one's 'end' reaches us
      if (conn.status === 'ready') events.back();
      else conn.once('ready', () => !stopped && events.back());
    }
    conn.once('end', () => {
      if (stopped) return;
      events.lost();
      // ioredis' own 'end' listener (added first) has already picked the next one
      watch(true);
    });
  };
  // the next one may only be picked once a node is known again
  const onNode = () => setImmediate(() => watch(true));
  watch(false);
  cluster.on('+node', onNode);
  return () => {
    stopped = true;
    cluster.off('+node', onNode);
  };
}

/**
 * The primaries of a cluster (a single server is its own only primary), each with a connection
 * for node-local commands (FLUSHALL, SCAN, PUBSUB NUMSUB, CONFIG GET).
 */
export function primaries(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/** Every node of a cluster, replicas included (a subscriber may be connected to any of them). */
export function allNodes(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('all') : [client];
}

/**
 * EXISTS of many keys: one pipeline on a single server. A cluster pipeline must stay on one node,
 * so there the commands go out concurrently (ioredis writes them back to back to each key's node).
 */
export async function existsMany(client: RedisClient, keys: readonly string[]): Promise<boolean[]> {
  if (!isCluster(client)) {
    const pipeline = client.pipeline();
    for (const k of keys) pipeline.exists(k);
    return ((await pipeline.exec()) ?? []).map(([err, n]) => !err && Number(n) === 1);
  }
  return Promise.all(keys.map((k) => client.exists(k).then((n) => n === 1, () => false)));
}
