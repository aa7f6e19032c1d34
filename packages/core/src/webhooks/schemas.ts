import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';

/** Request and response schemas of webhook subscriptions, their deliveries and the event feed (docs/decisions/events.md). */

export const EVENT_TYPES = [
  'item.added', 'item.completed', 'item.failed', 'item.pending_review', 'item.reviewed', 'item.dead_letter',
  'job.created', 'job.started', 'job.completed', 'job.failed', 'job.stopped', 'job.timed_out', 'job.waiting_input',
  'machine.online', 'machine.offline', 'api_key.created', 'api_key.rotated', 'api_key.revoked',
  'queue.retention', 'jobs.retention',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent by `POST …/{id}/test` only; never in the feed. */
export const TEST_EVENT_TYPE = 'webhook.test';

const strict = { additionalProperties: false } as const;

const WebhookUrl = Type.String({
  minLength: 8,
  maxLength: 2000,
  description: 'https URL (http only when the server sets WEBHOOK_ALLOW_INSECURE); no credentials in it',
});
const EventTypeList = Type.Array(Type.Union([...EVENT_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')]), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  uniqueItems: true,
  description: 'Event types to receive, or `["*"]` for all',
});
const Description = Nullable(Type.String({ maxLength: 2000 }));

export const WebhookCreate = Type.Object({
  url: WebhookUrl,
  event_types: EventTypeList,
  description: Type.Optional(Description),
  is_active: Type.Optional(Type.Boolean({ default: true })),
}, strict);
export type WebhookCreate = Static<typeof WebhookCreate>;
export const WebhookUpdate = Type.Object({
  url: Type.Optional(WebhookUrl),
  event_types: Type.Optional(EventTypeList),
  description: Type.Optional(Description),
  is_active: Type.Optional(Type.Boolean()),
}, { ...strict, minProperties: 1 });
export type WebhookUpdate = Static<typeof WebhookUpdate>;
export const WebhookListQuery = Type.Object({ ...PageQuery }, strict);
export type WebhookListQuery = Static<typeof WebhookListQuery>;

export const WebhookResponse = Type.Object({
  id: Uuid(),
  url: Type.String(),
  event_types: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  is_active: Type.Boolean(),
  secret_prefix: Type.String({ description: 'The first characters of the signing secret, to tell secrets apart' }),
  failing_since: Nullable(DateTime({ description: 'Since when every delivery fails; after 24 hours the subscription is disabled' })),
  disabled_reason: Nullable(Type.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
});
export type WebhookResponse = Static<typeof WebhookResponse>;
export const WebhookWithSecretResponse = Type.Object({
  ...WebhookResponse.properties,
  secret: Type.String({ description: 'The signing secret, shown only at creation and rotation' }),
});
export type WebhookWithSecretResponse = Static<typeof WebhookWithSecretResponse>;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export const DeliveryResponse = Type.Object({
  id: Uuid(),
  subscription_id: Uuid(),
  event_id: Type.String(),
  event_type: Type.String(),
  status: Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s))),
  attempts: Type.Integer(),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_attempt_at: Nullable(DateTime()),
  last_duration_ms: Nullable(Type.Integer()),
  next_attempt_at: Nullable(DateTime()),
  created_at: DateTime(),
});
export type DeliveryResponse = Static<typeof DeliveryResponse>;
export const DeliveryListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
}, strict);
export type DeliveryListQuery = Static<typeof DeliveryListQuery>;
export const DeliveryParams = Type.Object({ id: Uuid(), delivery_id: Uuid() });
export type DeliveryParams = Static<typeof DeliveryParams>;

export const EventCursor = Type.String({ pattern: '^[0-9a-f]{32}$', description: 'An event `id` (or `meta.next_cursor`): events after it' });
export const EventFeedQuery = Type.Object({
  after: Type.Optional(EventCursor),
  types: Type.Optional(Type.String({
    maxLength: 1000,
    pattern: '^[a-z_]+\\.[a-z_]+(,[a-z_]+\\.[a-z_]+)*$',
    description: 'Comma-separated event types (all when absent)',
  })),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
  newest: Type.Optional(Type.Boolean({
    description: 'true: the newest `limit` events (after `after` when given), still oldest first; where a live view starts before following the stream',
  })),
}, strict);
export type EventFeedQuery = Static<typeof EventFeedQuery>;
export const EventStreamQuery = Type.Object({
  after: Type.Optional(EventCursor),
  types: EventFeedQuery.properties.types,
}, strict);
export type EventStreamQuery = Static<typeof EventStreamQuery>;

export const EventResponse = Type.Object({
  id: Type.String({ description: 'Increases in feed order (compare as strings); usable as `after`' }),
  type: Type.String(),
  occurred_at: DateTime(),
  tenant_id: Uuid(),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'The resource as the API shows it; never a secret' }),
});
export type EventResponse = Static<typeof EventResponse>;
