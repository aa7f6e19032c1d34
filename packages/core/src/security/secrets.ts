import { randomToken, sha256 } from './hash';

/**
 * Bearer secrets of the platform. Each kind has a fixed prefix; only SHA-256 of the whole value
 * is stored, with the first 12 characters kept to identify it (docs/architecture.md, invariant 6).
 */
export const API_KEY_PREFIX = 'svc_ak_';
export const ACCESS_TOKEN_PREFIX = 'svc_at_';
export const MACHINE_KEY_PREFIX = 'svc_mk_';
export const DISPLAY_PREFIX_LENGTH = 12;

export interface IssuedSecret {
  /** The full secret: shown once, never stored. */
  value: string;
  /** First 12 characters, stored and shown to identify the secret. */
  prefix: string;
  /** SHA-256 of the full value, stored with a unique index. */
  hash: Buffer;
}

/** 32 random bytes (256 bits) after the kind prefix. */
export function issueSecret(kindPrefix: string): IssuedSecret {
  const value = kindPrefix + randomToken(32);
  return { value, prefix: value.slice(0, DISPLAY_PREFIX_LENGTH), hash: sha256(value) };
}
