import * as crypto from 'node:crypto';

// one-shot hashing (Node ≥ 20.12) skips the Hash object: it runs on every authenticated request
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Buffer, encoding: 'hex') => string }).hash;

export function sha256(value: string | Buffer): Buffer {
  return crypto.createHash('sha256').update(value).digest();
}

export function sha256Hex(value: string | Buffer): string {
  return oneShot ? oneShot('sha256', value, 'hex') : crypto.createHash('sha256').update(value).digest('hex');
}

/** URL-safe random material: `bytes` random bytes, base64url encoded. */
export function randomToken(bytes: number): string {
  return crypto.randomBytes(bytes).toString('base64url');
}
