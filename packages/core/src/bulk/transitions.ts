import { statusSqlFor } from '../db/status-sql';
import { BULK_ACTION_STATUSES, type BulkActionStatus } from './schemas';

/**
 * The bulk action state machine (docs/architecture.md, invariant 2). BULK_ACTION_STATUS_TRANSITIONS
 * is the only place where legal bulk action status changes are written down; BULK_ACTION_STATUSES
 * (bulk/schemas.ts) is the one list of statuses. The statements of bulk/actions.ts take the
 * statuses they write and guard on from it, written into the SQL text by bulkActionStatusSql /
 * bulkActionStatusInSql (db/status-sql.ts), or bound as before where the statement bound them.
 * An action is created `pending` (or `running` when its asker runs it at once, or `completed`
 * when nothing matches); `completed` and `cancelled` are final. A test scans the sources for
 * bulk action status literals in SQL that updates bulk_actions (packages/core/test/status-tables.test.ts).
 */
export const BULK_ACTION_STATUS_TRANSITIONS = {
  /**
   * A runner takes an action whose lease is free or lapsed (claim): a fresh `lease_token` and
   * `lease_until`. A pending action starts; a running one whose runner died is taken over.
   */
  claim: { from: ['pending', 'running'], to: 'running' },
  /** A chunk committed and more remain (runChunk): the cursor moves, the lease is renewed. */
  renew: { from: ['running'], to: 'running' },
  /** The last chunk committed (runChunk): `finished_at`, the lease cleared. */
  complete: { from: ['running'], to: 'completed' },
  /** A running action whose cancel was requested, before its next chunk (runChunk): `finished_at`, the lease cleared. */
  cancel: { from: ['running'], to: 'cancelled' },
  /** A person cancels an action not yet started (cancelBulkAction): at once, `finished_at`. */
  cancelPending: { from: ['pending'], to: 'cancelled' },
} as const satisfies Record<string, { from: readonly BulkActionStatus[]; to: BulkActionStatus }>;

export type BulkActionTransitionName = keyof typeof BULK_ACTION_STATUS_TRANSITIONS;

export function canTransitionBulkAction(from: BulkActionStatus, to: BulkActionStatus): boolean {
  return Object.values(BULK_ACTION_STATUS_TRANSITIONS).some((t) => (t.from as readonly BulkActionStatus[]).includes(from) && t.to === to);
}

/** A bulk action status, or a guard over several, written into the SQL text (db/status-sql.ts). */
export const { statusSql: bulkActionStatusSql, statusInSql: bulkActionStatusInSql } = statusSqlFor<BulkActionStatus>('bulk action', BULK_ACTION_STATUSES);
