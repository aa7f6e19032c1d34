import type { Redis } from '../redis';

/**
 * Pub/sub message telling every API process to drop what it cached about a key: all entries of
 * key `id` (rotation, revocation) and any entry, negative ones included, under `hashes` (hex
 * SHA-256 of key values that just started or stopped matching). Published on
 * `redisKeys(prefix).apiKeyInvalidations` after the change has committed.
 */
export interface ApiKeyInvalidation {
  id: string;
  hashes: string[];
}

/** Who must hear about a key change; the API's key store implements it, the CLI publishes directly. */
export interface ApiKeyChangeListener {
  invalidate(message: ApiKeyInvalidation): Promise<void>;
}

export function encodeApiKeyInvalidation(message: ApiKeyInvalidation): string {
  return JSON.stringify({ id: message.id, hashes: message.hashes });
}

/** Null for anything that is not a well-formed message (a subscriber then drops its whole cache, to be safe). */
export function decodeApiKeyInvalidation(raw: string): ApiKeyInvalidation | null {
  try {
    const parsed = JSON.parse(raw) as Partial<ApiKeyInvalidation>;
    if (typeof parsed.id !== 'string' || !Array.isArray(parsed.hashes) || !parsed.hashes.every((h) => typeof h === 'string')) {
      return null;
    }
    return { id: parsed.id, hashes: parsed.hashes };
  } catch {
    return null;
  }
}

/** A listener that only publishes, for processes without a key cache of their own (CLI, scripts). */
export function redisApiKeyPublisher(redis: Redis, channel: string): ApiKeyChangeListener {
  return {
    async invalidate(message) {
      await redis.publish(channel, encodeApiKeyInvalidation(message));
    },
  };
}
