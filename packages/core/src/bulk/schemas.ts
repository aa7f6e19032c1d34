import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Nullable, Uuid } from '../validation/formats';
import { ExceptionTypeName, QueueItemStatusSchema, REFERENCE_MAX_LENGTH, type QueueItemStatus } from '../queue-items/schemas';
import { JobStatusName } from '../jobs/schemas';
import type { JobStatus } from '../jobs/transitions';

/** The most ids one action may name; a larger set is asked for by a filter. */
export const BULK_ACTION_MAX_IDS = 1000;
/** Rows changed per transaction: a crash loses at most one chunk's work, which then runs again. */
export const BULK_ACTION_CHUNK = 500;

export const ITEM_ACTIONS = ['redrive', 'retry', 'delete', 'set_priority', 'postpone'] as const;
export type ItemActionName = (typeof ITEM_ACTIONS)[number];
export const JOB_ACTIONS = ['stop', 'retry'] as const;
export type JobActionName = (typeof JOB_ACTIONS)[number];

/**
 * The statuses an action can change: the rest of what a filter matches is left alone and not
 * counted, so `total` is what the action will change if nothing else touches those rows first.
 * Items held by a robot (in_progress) are never edited or deleted under it. A retry also re-runs
 * business failures (failed items, jobs) when the action says `include_business`, and only then
 * (matching.ts).
 */
export const ITEM_ACTION_STATUSES: Record<ItemActionName, readonly QueueItemStatus[]> = {
  redrive: ['dead_letter'],
  retry: ['dead_letter'],
  delete: ['new', 'pending_review', 'completed', 'failed', 'dead_letter'],
  set_priority: ['new', 'pending_review', 'failed', 'dead_letter'],
  postpone: ['new', 'pending_review', 'failed', 'dead_letter'],
};
export const JOB_ACTION_STATUSES: Record<JobActionName, readonly JobStatus[]> = {
  stop: ['pending', 'running', 'waiting_input'],
  retry: ['failed', 'timed_out', 'stopped'],
};

const CreatedBounds = {
  created_after: Type.Optional(DateTime({ description: 'Only rows created at or after this moment' })),
  created_before: Type.Optional(DateTime({ description: 'Only rows created before this moment' })),
};
const Ids = Type.Optional(Type.Array(Uuid(), {
  minItems: 1, maxItems: BULK_ACTION_MAX_IDS, uniqueItems: true,
  description: `Up to ${BULK_ACTION_MAX_IDS} ids instead of a filter; ids of other queues or workspaces match nothing`,
}));
const DryRun = Type.Optional(Type.Boolean({ description: 'true: only answer how many rows the action would change' }));
const IncludeBusiness = (what: string) => Type.Optional(Type.Boolean({
  description: `retry only: also re-run ${what} that failed with a business exception, which a retry otherwise leaves alone (they are final unless asked for)`,
}));
const JsonObject = Type.Object({}, { additionalProperties: true });

export const ItemActionFilter = Type.Object(
  {
    status: Type.Optional(QueueItemStatusSchema),
    reference: Type.Optional(Type.String({ minLength: 1, maxLength: REFERENCE_MAX_LENGTH, description: 'Exactly this reference' })),
    exception_type: Type.Optional(ExceptionTypeName),
    data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'A JSON object the items\' data contains (JSON containment)' })),
    ...CreatedBounds,
  },
  { additionalProperties: false },
);
export type ItemActionFilter = Static<typeof ItemActionFilter>;

export const ItemActionBody = Type.Object(
  {
    action: Type.Unsafe<ItemActionName>({
      type: 'string', enum: [...ITEM_ACTIONS],
      description: 'redrive: dead_letter → new with a fresh set of retries; retry: dead_letter → new for one more attempt ' +
        '(retry_count kept), and failed business exceptions too with include_business; delete: removes items not in progress; ' +
        'set_priority / postpone: sets the field on items not in progress and not completed',
    }),
    filter: Type.Optional(ItemActionFilter),
    ids: Ids,
    include_business: IncludeBusiness('items'),
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, description: 'set_priority: the new priority' })),
    postpone: Type.Optional(Nullable(DateTime({ description: 'postpone: the moment before which the items are not taken; null clears it' }))),
    dry_run: DryRun,
  },
  { additionalProperties: false },
);
export type ItemActionBody = Static<typeof ItemActionBody>;

export const JobActionFilter = Type.Object(
  {
    status: Type.Optional(JobStatusName),
    process_id: Type.Optional(Uuid({ description: 'Only jobs of this process of the workspace (an id it does not have → 422)' })),
    machine_id: Type.Optional(Uuid({ description: 'Only jobs of this machine of the workspace (an id it does not have → 422)' })),
    input_data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'A JSON object the jobs\' input_data contains' })),
    ...CreatedBounds,
  },
  { additionalProperties: false },
);
export type JobActionFilter = Static<typeof JobActionFilter>;

export const JobActionBody = Type.Object(
  {
    action: Type.Unsafe<JobActionName>({
      type: 'string', enum: [...JOB_ACTIONS],
      description: 'stop: as POST /jobs/{id}/stop for every active job; retry: a new pending job (same process, input and ' +
        'priority, retry_count + 1) for every failed, timed-out or stopped job not retried yet (business failures only with include_business)',
    }),
    filter: Type.Optional(JobActionFilter),
    ids: Ids,
    include_business: IncludeBusiness('jobs'),
    dry_run: DryRun,
  },
  { additionalProperties: false },
);
export type JobActionBody = Static<typeof JobActionBody>;

export const BULK_ACTION_STATUSES = ['pending', 'running', 'completed', 'cancelled'] as const;
export type BulkActionStatus = (typeof BULK_ACTION_STATUSES)[number];

export const BulkActionResponse = Type.Object({
  id: Uuid(),
  target: Type.Unsafe<'queue_items' | 'jobs'>({ type: 'string', enum: ['queue_items', 'jobs'] }),
  queue_id: Nullable(Uuid()),
  action: Type.String({ description: 'One of the target\'s actions' }),
  status: Type.Unsafe<BulkActionStatus>({
    type: 'string', enum: [...BULK_ACTION_STATUSES],
    description: 'pending (not started), running, completed, cancelled (stopped on request; what was done stays done)',
  }),
  total: Type.Integer({ minimum: 0, description: 'Rows the action would change when it was asked for' }),
  done: Type.Integer({ minimum: 0, description: 'Rows gone through so far' }),
  changed: Type.Integer({ minimum: 0, description: 'Rows changed so far (a row changed meanwhile by something else is gone through, not changed)' }),
  filter: Nullable(JsonObject),
  ids_count: Nullable(Type.Integer({ minimum: 1 })),
  params: JsonObject,
  cancel_requested: Type.Boolean(),
  error_message: Nullable(Type.String({ description: 'The last error that interrupted a chunk; the action resumes from its last committed chunk' })),
  created_at: DateTime(),
  updated_at: DateTime(),
  finished_at: Nullable(DateTime()),
});
export type BulkActionResponse = Static<typeof BulkActionResponse>;

export const BulkDryRunResponse = Type.Object({
  dry_run: Type.Literal(true),
  total: Type.Integer({ minimum: 0, description: 'Rows the action would change now' }),
});

export const BulkActionParams = Type.Object({ action_id: Uuid() });
export type BulkActionParams = Static<typeof BulkActionParams>;
