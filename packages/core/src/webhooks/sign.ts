import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `Svc-Signature: v1=<hex HMAC-SHA256 of "<timestamp>.<body>">` with the subscription's secret
 * (README "Webhooks"). The timestamp (Svc-Timestamp, Unix seconds) is inside the signed text, so
 * a receiver that refuses timestamps more than 5 minutes away refuses replays.
 */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** What a receiver does (used by the tests as a receiver would). */
export function verifyWebhookSignature(
  secret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const ts = Number(headers.timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowSeconds - ts) > SIGNATURE_TOLERANCE_SECONDS || !headers.signature) return false;
  const expected = Buffer.from(signWebhook(secret, ts, body));
  const given = Buffer.from(headers.signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
