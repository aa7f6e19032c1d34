import { createHash, randomBytes } from 'node:crypto';

export function sha256(value: string | Buffer): Buffer {
  return createHash('sha256').update(value).digest();
}

export function sha256Hex(value: string | Buffer): string {
  return createHash('sha256').update(value).digest('hex');
}

/** URL-safe random material: `bytes` random bytes, base64url encoded. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}
