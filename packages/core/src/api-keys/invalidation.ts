import { randomUUID } from 'node:crypto';
import { allNodes, isCluster, type RedisClient } from '../redis';

/**
 * Pub/sub message telling every API process to drop what it cached about a key: all entries of
 * key `id` (rotation, revocation) and any entry, negative ones included, under `hashes` (hex
 * SHA-256 of key values that just started or stopped matching). Published on
 * `redisKeys(prefix).apiKeyInvalidations` after the change has committed.
 */
export interface ApiKeyInvalidation {
  id: string;
  hashes: string[];
  /** Redis list each receiver pushes to once it has dropped its entries (see publishApiKeyInvalidation). */
  ack?: string;
}

/** Who must hear about a key change; the API's key store implements it, the CLI publishes directly. */
export interface ApiKeyChangeListener {
  invalidate(message: ApiKeyInvalidation): Promise<void>;
}

export function encodeApiKeyInvalidation(message: ApiKeyInvalidation): string {
  return JSON.stringify({ id: message.id, hashes: message.hashes, ...(message.ack ? { ack: message.ack } : {}) });
}

/** Null for anything that is not a well-formed message (a subscriber then drops its whole cache, to be safe). */
export function decodeApiKeyInvalidation(raw: string): ApiKeyInvalidation | null {
  try {
    const parsed = JSON.parse(raw) as Partial<ApiKeyInvalidation>;
    if (typeof parsed.id !== 'string' || !Array.isArray(parsed.hashes) || !parsed.hashes.every((h) => typeof h === 'string')) {
      return null;
    }
    return { id: parsed.id, hashes: parsed.hashes, ...(typeof parsed.ack === 'string' ? { ack: parsed.ack } : {}) };
  } catch {
    return null;
  }
}

export const INVALIDATION_ACK_TIMEOUT_MS = 1000;

/**
 * Publishes an invalidation and waits until every process that received it has applied it:
 * PUBLISH answers how many subscribers got the message, and each one pushes to the message's ack
 * list after dropping its entries. So when a rotation or revocation answers, no API replica can
 * still serve the old key from its cache (a replica that does not answer within the timeout is
 * logged by the caller). Returns how many received and how many acknowledged.
 *
 * On a Redis Cluster a PUBLISH reaches the subscribers of every node (over the cluster bus) but
 * answers only its own node's count, so the receivers are counted first with PUBSUB NUMSUB on
 * every node (one that subscribes in between receives the message too and acknowledges it).
 */
export async function publishApiKeyInvalidation(
  redis: RedisClient,
  channel: string,
  message: ApiKeyInvalidation,
  timeoutMs = INVALIDATION_ACK_TIMEOUT_MS,
): Promise<{ receivers: number; acked: number }> {
  const ack = `${channel}:ack:${randomUUID()}`;
  const subscribed = isCluster(redis) ? await clusterSubscribers(redis, channel) : 0;
  const receivers = Math.max(subscribed, await redis.publish(channel, encodeApiKeyInvalidation({ ...message, ack })));
  let acked = 0;
  const until = Date.now() + timeoutMs;
  while (receivers > 0) {
    acked = await redis.llen(ack);
    if (acked >= receivers || Date.now() >= until) break;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await redis.del(ack);
  return { receivers, acked };
}

async function clusterSubscribers(redis: RedisClient, channel: string): Promise<number> {
  const counts = await Promise.all(
    allNodes(redis).map((node) => node.pubsub('NUMSUB', channel).then((r) => Number((r as [string, number])[1] ?? 0), () => 0)),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** The receiving side: tell the publisher this process has applied the message. */
export async function acknowledgeApiKeyInvalidation(redis: RedisClient, message: ApiKeyInvalidation): Promise<void> {
  if (!message.ack) return;
  await redis.multi().rpush(message.ack, '1').expire(message.ack, 30).exec();
}

/** A listener that only publishes, for processes without a key cache of their own (CLI, scripts). */
export function redisApiKeyPublisher(redis: RedisClient, channel: string): ApiKeyChangeListener {
  return {
    async invalidate(message) {
      await publishApiKeyInvalidation(redis, channel, message);
    },
  };
}
