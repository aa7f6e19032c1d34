import { statusSqlFor } from '../db/status-sql';
import { DELIVERY_STATUSES } from './schemas';

export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * The webhook delivery state machine (docs/decisions/events.md; docs/architecture.md, invariant
 * 2). WEBHOOK_DELIVERY_STATUS_TRANSITIONS is the only place where legal delivery status changes
 * are written down; DELIVERY_STATUSES (webhooks/schemas.ts) is the one list of statuses. The
 * statements of webhooks/deliver.ts take the statuses they write and guard on from it, written
 * into the SQL text by deliveryStatusSql / deliveryStatusInSql (db/status-sql.ts), or bound as
 * before where the statement bound them. A delivery is created `pending` (or `delivered`, written
 * once after a successful attempt straight from the feed); `delivered` and `failed` are final. A
 * test scans the sources for delivery status literals in SQL that updates webhook_deliveries
 * (packages/core/test/status-tables.test.ts).
 */
export const WEBHOOK_DELIVERY_STATUS_TRANSITIONS = {
  /** An attempt succeeded: `attempts + 1`, the attempt's status code and duration, `last_error` cleared. */
  deliver: { from: ['pending'], to: 'delivered' },
  /** An attempt failed and the delivery is not yet given up: `attempts + 1`, the error, `next_attempt_at` later. */
  retry: { from: ['pending'], to: 'pending' },
  /** An attempt failed past the give-up time since the first one: `attempts + 1`, the error; final. */
  giveUp: { from: ['pending'], to: 'failed' },
} as const satisfies Record<string, { from: readonly DeliveryStatus[]; to: DeliveryStatus }>;

export type WebhookDeliveryTransitionName = keyof typeof WEBHOOK_DELIVERY_STATUS_TRANSITIONS;

export function canTransitionDelivery(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return Object.values(WEBHOOK_DELIVERY_STATUS_TRANSITIONS).some((t) => (t.from as readonly DeliveryStatus[]).includes(from) && t.to === to);
}

/** A delivery status, or a guard over several, written into the SQL text (db/status-sql.ts). */
export const { statusSql: deliveryStatusSql, statusInSql: deliveryStatusInSql } = statusSqlFor<DeliveryStatus>('webhook delivery', DELIVERY_STATUSES);
