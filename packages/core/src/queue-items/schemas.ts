import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { ContainmentFilterQuery } from '../validation/containment-filter';
import { QUEUE_ITEM_STATUSES, type QueueItemStatus } from './statuses';
import { EXCEPTION_TYPES, type ExceptionType } from './exception-types';

/**
 * Request and response schemas of queue items: one source for the API's
 * validation, the OpenAPI document and the CLI. Bodies and queries refuse unknown fields (422),
 * so a misspelt `priorty` or `statuss` is an error instead of being silently ignored
 * (docs/decisions/queue-items.md).
 */
export { QUEUE_ITEM_STATUSES, type QueueItemStatus } from './statuses';
/** An enum (not a union of literals) so a bad value gives one readable message. */
export const QueueItemStatusSchema = Type.Unsafe<QueueItemStatus>({ type: 'string', enum: [...QUEUE_ITEM_STATUSES] });

/**
 * The kind of a failure (docs/decisions/exception-types.md): `application` is retried by the
 * queue's policy and then dead-lettered, `business` is final.
 */
export const ExceptionTypeName = Type.Unsafe<ExceptionType>({
  type: 'string', enum: [...EXCEPTION_TYPES],
  description: 'The kind of the last failure: application (retried by the queue\'s max_retries, then dead_letter) or business (final: stays failed, never retried automatically)',
});

export const BULK_MAX_ITEMS = 1000;
/** `reference` is indexed; a btree entry must stay well under a page, whatever the characters. */
export const REFERENCE_MAX_LENGTH = 255;

/** Any JSON object (not an array, not null): the free-form business payload. */
export const ItemData = Type.Object({}, { additionalProperties: true, description: 'Free-form JSON object: the business payload' });

/** Any text: a name that cannot exist simply finds no queue (404), it is not a 422. */
export const QueueNameParams = Type.Object({ name: Type.String({ minLength: 1, description: 'Queue name (unique per workspace)' }) });
export type QueueNameParams = Static<typeof QueueNameParams>;

export const AddQueueItemBody = Type.Object(
  {
    data: ItemData,
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3, description: '1 = low, 3 = normal (default), 5 = urgent' })),
    reference: Type.Optional(Nullable(Type.String({ maxLength: REFERENCE_MAX_LENGTH, description: 'Producer business key' }))),
    deadline: Type.Optional(Nullable(DateTime({ description: 'ISO 8601 date-time with time zone; nearest deadlines go first' }))),
    postpone: Type.Optional(Nullable(DateTime({ description: 'ISO 8601 date-time with time zone; the item is not taken before it' }))),
  },
  { additionalProperties: false },
);
export type AddQueueItemInput = Static<typeof AddQueueItemBody>;

export const AddQueueItemsBulkBody = Type.Object(
  {
    items: Type.Array(ItemData, {
      minItems: 1,
      maxItems: BULK_MAX_ITEMS,
      description: `1 to ${BULK_MAX_ITEMS} payloads; each becomes one item (priority 3, no reference, deadline or postpone)`,
    }),
  },
  { additionalProperties: false },
);
export type AddQueueItemsBulkInput = Static<typeof AddQueueItemsBulkBody>;

export const BulkAddedResponse = Type.Object({ added: Type.Integer({ minimum: 1 }) });
export type BulkAddedResponse = Static<typeof BulkAddedResponse>;

export const QueueItemListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(QueueItemStatusSchema),
    reference: Type.Optional(
      Type.String({ minLength: 1, maxLength: REFERENCE_MAX_LENGTH, description: 'Only items with exactly this reference (case-sensitive)' }),
    ),
    exception_type: Type.Optional(ExceptionTypeName),
    data: ContainmentFilterQuery('data'),
  },
  { additionalProperties: false },
);
export type QueueItemListQuery = Static<typeof QueueItemListQuery>;

/** QueueItemResponse: the 16 fields of the public API and the kind of the item's last failure. */
export const QueueItemResponse = Type.Object({
  id: Uuid(),
  queue_id: Uuid(),
  status: QueueItemStatusSchema,
  priority: Type.Integer({ minimum: 1, maximum: 5 }),
  reference: Nullable(Type.String()),
  deadline: Nullable(DateTime()),
  postpone: Nullable(DateTime()),
  data: ItemData,
  result: Nullable(Type.Object({}, { additionalProperties: true })),
  retry_count: Type.Integer({ minimum: 0 }),
  error_message: Nullable(Type.String()),
  processed_by: Nullable(Uuid()),
  created_at: DateTime(),
  processed_at: Nullable(DateTime()),
  reviewed_by: Nullable(Type.String()),
  reviewed_at: Nullable(DateTime()),
  /** after the contract's sixteen, which keep their order */
  exception_type: Nullable(ExceptionTypeName),
});
export type QueueItemResponse = Static<typeof QueueItemResponse>;
