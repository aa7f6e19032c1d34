import {
  acknowledgeApiKeyInvalidation, Batcher, DbOutage, decodeApiKeyInvalidation, publishApiKeyInvalidation, duplicateRedis, isCluster, watchClusterSubscriber, type ApiKeyChangeListener, type ApiKeyInvalidation, type ApiKeyCredential, type Engine, type Logger, type RedisClient,
} from '@svc/core';

/**
 * Where X-API-Key authentication finds keys, without a Postgres round trip per request.
 *
 * - Look-ups are cached in this process by key hash for `ttlMs` (misses for at most
 *   `negativeTtlMs`), and concurrent look-ups of one hash share one query. The look-ups of one
 *   event-loop turn, whatever their hashes, leave as one statement: a cold cache (a restart, or
 *   many keys at once) costs a few round trips, not one per key.
 * - A key in use is read again in the background during the last `refreshAheadMs` or so of its
 *   entry (each entry's start is drawn at random within another `refreshAheadMs`), while
 *   requests keep being answered from the entry: a busy key never waits for Postgres once cached,
 *   and keys cached together (after a restart) neither all miss nor all refresh in the same
 *   second from then on. The TTL still bounds how long a row is served.
 * - Every change that must take effect at once (rotation, revocation, creation) is published on
 *   a Redis channel after it commits; every API process drops the entries it names. The cache is
 *   only used while this process is subscribed: before `start()`, or while the subscriber
 *   connection is down, every look-up goes to Postgres, and the cache is emptied on reconnect
 *   (messages sent meanwhile are lost to us).
 * - A look-up that raced with an invalidation is not cached (generation counter), so a result
 *   read just before a revocation committed cannot outlive the message.
 * - `touch` buffers last-use times in memory; one batched UPDATE writes them every `flushMs`
 *   (and once more on `close()`), so last_used_at shows within about a second.
 */
export interface ApiKeyStore extends ApiKeyChangeListener {
  /** The key whose hash is `hash` (bytes, or hex), or null. */
  lookup(hash: Buffer | string): Promise<ApiKeyCredential | null>;
  /**
   * The cached answer for a hash (hex) without waiting: the row, null for a cached miss, or
   * undefined when only `lookup` can tell. Saves a promise per request on the hot path. A row
   * near the end of its entry is read again in the background (refresh ahead).
   */
  peek(hashHex: string): ApiKeyCredential | null | undefined;
  /** Records a use of the key; last_used_at must become visible within a second. */
  touch(keyId: string): void;
  /** Keys whose last use is held in memory for the next flush. */
  readonly pendingUses: number;
  /** Subscribes to invalidations; caching is on from then on. */
  start(): Promise<void>;
  /** Stops caching, writes the buffered last-use times, closes the subscriber. */
  close(): Promise<void>;
}

export interface ApiKeyStoreOptions {
  /** where keys are read and their last use written: the engine's `auth` commands */
  engine: Pick<Engine, 'auth'>;
  /** Publishes invalidations; duplicated for the subscriber connection. */
  redis: RedisClient;
  channel: string;
  logger: Logger;
  /** the process's outage log (one line per outage for all its loops); its own when absent */
  outage?: DbOutage;
  /** 0 disables the cache (every look-up reads Postgres). */
  ttlMs: number;
  negativeTtlMs?: number;
  /**
   * A use of a cached row reads it again from between one and two times this before its expiry
   * (drawn per entry); default a fifth of `ttlMs`, at most half of it.
   */
  refreshAheadMs?: number;
  flushMs: number;
  maxEntries?: number;
  /** CLIENT SETNAME of the subscriber connection, to find it in `CLIENT LIST`. */
  subscriberName?: string;
}

interface Entry {
  row: ApiKeyCredential | null;
  until: number;
  /** From when a use reads the row again in the background (never, for a miss or once started). */
  refreshAt: number;
}

export function createApiKeyStore(options: ApiKeyStoreOptions): ApiKeyStore {
  return new CachedApiKeyStore(options);
}

class CachedApiKeyStore implements ApiKeyStore {
  private readonly auth: Engine['auth'];
  private readonly redis: RedisClient;
  private readonly channel: string;
  private readonly log: Logger;
  /** a Postgres outage is logged once by its background writes and reads, not once per attempt */
  private readonly outage: DbOutage;
  /** consecutive failed flushes: the next one waits longer (back-off up to 5 s) */
  private flushFailures = 0;
  private readonly ttlMs: number;
  private readonly negativeTtlMs: number;
  private readonly refreshAheadMs: number;
  private readonly flushMs: number;
  private readonly maxEntries: number;
  private readonly subscriberName: string;

  private readonly cache = new Map<string, Entry>();
  private readonly hashesById = new Map<string, Set<string>>();
  private readonly inflight = new Map<string, Promise<ApiKeyCredential | null>>();
  private readonly reads: Batcher<string, ApiKeyCredential | null>;
  private generation = 0;
  private live = false;
  private subscriber: RedisClient | null = null;
  private unwatchSubscriber: (() => void) | null = null;

  /** key id → last use (epoch ms) */
  private pending = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly flushes = new Set<Promise<void>>();
  private closed = false;

  constructor(o: ApiKeyStoreOptions) {
    this.auth = o.engine.auth;
    this.redis = o.redis;
    this.channel = o.channel;
    this.log = o.logger;
    this.outage = o.outage ?? new DbOutage(o.logger);
    this.ttlMs = o.ttlMs;
    this.negativeTtlMs = Math.min(o.negativeTtlMs ?? 5_000, o.ttlMs);
    this.refreshAheadMs = Math.min(o.refreshAheadMs ?? o.ttlMs / 5, o.ttlMs / 2);
    this.flushMs = o.flushMs;
    this.maxEntries = o.maxEntries ?? 50_000;
    this.subscriberName = o.subscriberName ?? 'svc-api-key-invalidations';
    this.reads = new Batcher({
      runBatch: (hexes) => this.auth.apiKeysByHashes(hexes),
      runOne: (hex) => this.auth.apiKeyByHash(Buffer.from(hex, 'hex')),
      maxBatch: 500,
      maxInFlight: 2,
    });
  }

  peek(hashHex: string): ApiKeyCredential | null | undefined {
    if (!this.live) return undefined;
    const hit = this.cache.get(hashHex);
    if (!hit) return undefined;
    const now = Date.now();
    if (hit.until <= now) return undefined;
    if (hit.refreshAt <= now) this.refreshAhead(hashHex, hit);
    return hit.row;
  }

  async lookup(hash: Buffer | string): Promise<ApiKeyCredential | null> {
    const hex = typeof hash === 'string' ? hash : hash.toString('hex');
    if (!this.live) return this.reads.run(hex);
    const cached = this.peek(hex);
    return cached !== undefined ? cached : this.load(hex);
  }

  /** Reads a hash (one query however many ask at once) and caches the answer. */
  private load(hex: string): Promise<ApiKeyCredential | null> {
    const running = this.inflight.get(hex);
    if (running) return running;
    const generation = this.generation;
    const query = this.reads
      .run(hex)
      .then((row) => {
        // an invalidation heard meanwhile may concern this row: answer it, do not keep it
        if (this.live && generation === this.generation) this.remember(hex, row);
        return row;
      })
      .finally(() => {
        if (this.inflight.get(hex) === query) this.inflight.delete(hex);
      });
    this.inflight.set(hex, query);
    return query;
  }

  private refreshAhead(hex: string, entry: Entry): void {
    entry.refreshAt = Infinity;
    this.load(hex).catch((err: Error) => {
      // the entry still answers until it expires; a later use tries again
      if (!this.outage.failed(err, 'api key cache refresh')) this.log.warn('api key cache refresh failed', { err: err.message });
      if (this.cache.get(hex) === entry) entry.refreshAt = Date.now() + 1_000;
    });
  }

  get pendingUses(): number {
    return this.pending.size;
  }

  touch(keyId: string): void {
    if (this.closed) return;
    this.pending.set(keyId, Date.now());
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => void this.flush(), this.flushMs);
      this.flushTimer.unref();
    }
  }

  async invalidate(message: ApiKeyInvalidation): Promise<void> {
    // this process first, synchronously; the others through Redis (we also hear our own echo)
    this.apply(message);
    try {
      // answers once every subscribed API process has dropped the key (or after a bounded wait)
      const { receivers, acked } = await publishApiKeyInvalidation(this.redis, this.channel, message);
      if (acked < receivers) {
        this.log.warn('api key invalidation not acknowledged by every API process in time', { key_id: message.id, receivers, acked });
      }
    } catch (err) {
      this.log.error('api key invalidation not published: other API processes may accept the old key until their cache expires', {
        key_id: message.id,
        err: (err as Error).message,
      });
    }
  }

  async start(): Promise<void> {
    if (this.ttlMs <= 0 || this.subscriber || this.closed) return;
    const sub = duplicateRedis(this.redis, { connectionName: this.subscriberName });
    this.subscriber = sub;
    sub.on('error', (err: Error) => this.log.warn('api key invalidation subscriber error', { err: err.message }));
    sub.on('message', (channel: string, raw: string) => {
      if (channel !== this.channel) return;
      const message = decodeApiKeyInvalidation(raw);
      if (message) this.apply(message);
      else this.dropAll();
      if (message) {
        acknowledgeApiKeyInvalidation(this.redis, message).catch((err: Error) =>
          this.log.warn('api key invalidation not acknowledged', { err: err.message }),
        );
      }
    });
    const lost = () => {
      if (!this.live) return;
      this.live = false;
      this.dropAll();
    };
    // a reconnect: invalidations sent while we were away are lost, so start from empty once
    // the subscription is confirmed (ioredis re-subscribes too; one more SUBSCRIBE is harmless)
    const back = () => {
      sub.subscribe(this.channel).then(
        () => {
          if (this.closed) return;
          this.dropAll();
          this.live = true;
        },
        (err: Error) => this.log.warn('api key invalidation re-subscribe failed', { err: err.message }),
      );
    };
    sub.on('close', lost);
    // a cluster client moves its subscription to another node by itself, without a 'close' or
    // a 'ready' of its own: when its node leaves, and when its subscriber connection drops
    if (isCluster(sub)) sub.on('-node', () => this.dropAll());
    await sub.subscribe(this.channel);
    // its subscriber connection exists once a subscription went through it
    if (isCluster(sub)) this.unwatchSubscriber = watchClusterSubscriber(sub, { lost, back });
    this.dropAll();
    this.live = true;
    sub.on('ready', back);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.live = false;
    this.dropAll();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    await Promise.all([...this.flushes]);
    await this.flush();
    const sub = this.subscriber;
    this.subscriber = null;
    this.unwatchSubscriber?.();
    if (sub) {
      sub.removeAllListeners('ready');
      await sub.quit().catch(() => sub.disconnect());
    }
  }

  private flush(): Promise<void> {
    this.flushTimer = null;
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    const uses = [...batch].map(([id, at]) => ({ id, at: new Date(at) }));
    const run = this.auth.touchApiKeys(uses)
      .then(() => {
        this.flushFailures = 0;
        this.outage.ok();
      })
      .catch((err: Error) => {
        if (!this.outage.failed(err, 'last_used_at flush')) this.log.warn('last_used_at flush failed; will retry', { err: err.message, keys: uses.length });
        if (this.closed) return;
        for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
        if (!this.flushTimer) {
          const delay = Math.min(5000, this.flushMs * 2 ** Math.min(10, ++this.flushFailures));
          this.flushTimer = setTimeout(() => void this.flush(), delay);
          this.flushTimer.unref();
        }
      })
      .finally(() => this.flushes.delete(run));
    this.flushes.add(run);
    return run;
  }

  private apply(message: ApiKeyInvalidation): void {
    this.generation++;
    this.inflight.clear();
    for (const hex of this.hashesById.get(message.id) ?? []) this.cache.delete(hex);
    this.hashesById.delete(message.id);
    for (const hex of message.hashes) this.forget(hex);
  }

  private dropAll(): void {
    this.generation++;
    this.inflight.clear();
    this.cache.clear();
    this.hashesById.clear();
  }

  private remember(hex: string, row: ApiKeyCredential | null): void {
    const ttl = row ? this.ttlMs : this.negativeTtlMs;
    if (ttl <= 0) return;
    if (this.cache.size >= this.maxEntries) {
      // oldest insertion first: simple, bounded, good enough for a cache of credentials
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.forget(oldest);
    }
    this.forget(hex);
    const now = Date.now();
    const refreshAt = row ? now + ttl - this.refreshAheadMs * (1 + Math.random()) : Infinity;
    this.cache.set(hex, { row, until: now + ttl, refreshAt });
    if (row) {
      let set = this.hashesById.get(row.id);
      if (!set) this.hashesById.set(row.id, (set = new Set()));
      set.add(hex);
    }
  }

  private forget(hex: string): void {
    const entry = this.cache.get(hex);
    if (!entry) return;
    this.cache.delete(hex);
    if (entry.row) {
      const set = this.hashesById.get(entry.row.id);
      set?.delete(hex);
      if (set && set.size === 0) this.hashesById.delete(entry.row.id);
    }
  }
}
