import { randomUUID } from 'node:crypto';
import type { Queryable, Sql, Tx } from '../db/sql';
import type { Config } from '../config';
import { ConflictError, NotFoundError } from '../errors';
import { recordAudit } from '../audit/audit';
import type { AuditActor } from '../audit/catalog-changes';
import { randomToken } from '../security/hash';
import { decrypt, encrypt } from '../security/secret-box';
import { validate } from '../validation/validate';
import { pageMeta, type PageMeta } from '../validation/formats';
import { checkWebhookUrl, type TargetPolicy } from './target';
import { eventBody, readEvent } from '../events/feed';
import {
  DeliveryListQuery, TEST_EVENT_TYPE, WebhookCreate, WebhookUpdate, type DeliveryResponse, type WebhookListQuery,
  type WebhookResponse, type WebhookWithSecretResponse,
} from './schemas';
import { es } from '../messages/server-messages';
import { iso } from '../validation/iso-date';

/**
 * Webhook subscriptions of a tenant (docs/decisions/events.md): admins create, change, delete and
 * rotate them; each change is audited. The signing secret is sealed with the server's key (signing
 * needs it in clear) and shown only at creation and rotation.
 */
export interface WebhookSettings extends TargetPolicy {
  /** the key the signing secrets are sealed with (ASSET_ENCRYPTION_KEY) */
  sealKey: Buffer;
}

/** The settings the API and the dispatcher take from their configuration. */
export function webhookSettingsOf(config: Pick<Config, 'assetEncryptionKey' | 'webhookAllowInsecure' | 'webhookAllowPrivateNetworks'>): WebhookSettings {
  return {
    sealKey: config.assetEncryptionKey,
    allowInsecure: config.webhookAllowInsecure,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
  };
}

/** The deliverer's timings from the configuration (every dispatcher thread that delivers uses them). */
export function delivererTimingsOf(config: Pick<Config, 'webhookRetryBaseMs' | 'webhookGiveUpSeconds' | 'webhookPollMs'>) {
  return { retryBaseMs: config.webhookRetryBaseMs, giveUpAfterMs: config.webhookGiveUpSeconds * 1000, pollMs: config.webhookPollMs };
}

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

export interface SubscriptionRow {
  id: string;
  tenant_id: string;
  url: string;
  event_types: string[];
  description: string | null;
  is_active: boolean;
  secret_sealed: Buffer;
  secret_prefix: string;
  failing_since: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toWebhookResponse(row: SubscriptionRow): WebhookResponse {
  return {
    id: row.id,
    url: row.url,
    event_types: row.event_types,
    description: row.description,
    is_active: row.is_active,
    secret_prefix: row.secret_prefix,
    failing_since: iso(row.failing_since),
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The sealed secret is bound to its subscription: a sealed value copied to another row does not open. */
export function openSecret(key: Buffer, row: Pick<SubscriptionRow, 'id' | 'secret_sealed'>): string {
  return decrypt(key, row.secret_sealed, `webhook:${row.id}`);
}

function newSecret(key: Buffer, id: string): { secret: string; sealed: Buffer; prefix: string } {
  const secret = WEBHOOK_SECRET_PREFIX + randomToken(32);
  return { secret, sealed: encrypt(key, secret, `webhook:${id}`), prefix: secret.slice(0, 12) };
}

function auditOf(actor: AuditActor, tenantId: string, action: string, id: string, details: Record<string, unknown>) {
  return {
    tenantId, actorType: actor.actorType, actorId: actor.actorId ?? null, action, source: actor.source,
    resourceType: 'webhook', resourceId: id, details, requestId: actor.requestId ?? null, ip: actor.ip ?? null,
  };
}

const normalTypes = (types: string[]) => (types.includes('*') ? ['*'] : types);

/**
 * Subscriptions one workspace may have (docs/decisions/webhook-fairness.md): every one is read
 * and served by the deliverers, so a workspace's share of them is bounded like its share of the
 * deliverers' slots.
 */
export const MAX_WEBHOOKS_PER_WORKSPACE = 25;

/** Counted under a lock of the workspace's own, so two creations at once cannot both take the last place. */
async function checkRoomForWebhook(tx: Tx, tenantId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`webhook_subscriptions:${tenantId}`}, 0))`;
  const [{ n }] = await tx<Array<{ n: number }>>`select count(*)::int as n from webhook_subscriptions where tenant_id = ${tenantId}`;
  if (n >= MAX_WEBHOOKS_PER_WORKSPACE) {
    throw new ConflictError(
      es.webhooks.tooMany(MAX_WEBHOOKS_PER_WORKSPACE),
      { limit: MAX_WEBHOOKS_PER_WORKSPACE },
    );
  }
}

export async function createWebhook(sql: Sql, settings: WebhookSettings, actor: AuditActor, tenantId: string, input: unknown): Promise<WebhookWithSecretResponse> {
  const body = validate(WebhookCreate, input);
  const url = checkWebhookUrl(body.url, settings);
  return sql.begin(async (tx) => {
    await checkRoomForWebhook(tx, tenantId);
    const id = randomUUID();
    const s = newSecret(settings.sealKey, id);
    const [row] = await tx<SubscriptionRow[]>`
      insert into webhook_subscriptions (id, tenant_id, url, event_types, description, is_active, secret_sealed, secret_prefix)
      values (${id}, ${tenantId}, ${url.href}, ${normalTypes(body.event_types)}::text[], ${body.description ?? null},
              ${body.is_active ?? true}, ${s.sealed}, ${s.prefix})
      returning *`;
    await recordAudit(tx, auditOf(actor, tenantId, 'create_webhook', id, { url: url.origin, event_types: row!.event_types }));
    return { ...toWebhookResponse(row!), secret: s.secret };
  }) as Promise<WebhookWithSecretResponse>;
}

export async function listWebhooks(sql: Queryable, tenantId: string, query: WebhookListQuery): Promise<{ rows: WebhookResponse[]; meta: PageMeta }> {
  const page = query.page ?? 1;
  const limit = query.limit ?? 20;
  const [rows, [count]] = await Promise.all([
    sql<SubscriptionRow[]>`select * from webhook_subscriptions where tenant_id = ${tenantId}
      order by created_at, id limit ${limit} offset ${(page - 1) * limit}`,
    sql<Array<{ n: number }>>`select count(*)::int as n from webhook_subscriptions where tenant_id = ${tenantId}`,
  ]);
  return { rows: rows.map(toWebhookResponse), meta: pageMeta(page, limit, count!.n) };
}

export async function findWebhook(sql: Queryable, tenantId: string, id: string): Promise<SubscriptionRow> {
  const [row] = await sql<SubscriptionRow[]>`select * from webhook_subscriptions where id = ${id} and tenant_id = ${tenantId}`;
  if (!row) throw new NotFoundError(es.webhooks.notFound);
  return row;
}

export async function getWebhook(sql: Queryable, tenantId: string, id: string): Promise<WebhookResponse> {
  return toWebhookResponse(await findWebhook(sql, tenantId, id));
}

/** A subscription made active again starts with a clean record of failures. */
export async function updateWebhook(sql: Sql, settings: WebhookSettings, actor: AuditActor, tenantId: string, id: string, input: unknown): Promise<WebhookResponse> {
  await findWebhook(sql, tenantId, id);
  const body = validate(WebhookUpdate, input);
  const url = body.url !== undefined ? checkWebhookUrl(body.url, settings).href : null;
  return sql.begin(async (tx) => {
    const [row] = await tx<SubscriptionRow[]>`
      update webhook_subscriptions set
        url = coalesce(${url}, url),
        event_types = coalesce(${body.event_types ? normalTypes(body.event_types) : null}::text[], event_types),
        description = case when ${body.description !== undefined} then ${body.description ?? null} else description end,
        is_active = coalesce(${body.is_active ?? null}::boolean, is_active),
        failing_since = case when ${body.is_active === true} then null else failing_since end,
        disabled_reason = case when ${body.is_active === true} then null else disabled_reason end,
        updated_at = now()
      where id = ${id} and tenant_id = ${tenantId}
      returning *`;
    if (!row) throw new NotFoundError(es.webhooks.notFound);
    await recordAudit(tx, auditOf(actor, tenantId, 'update_webhook', id, { fields: Object.keys(body) }));
    return toWebhookResponse(row);
  }) as Promise<WebhookResponse>;
}

export async function deleteWebhook(sql: Sql, actor: AuditActor, tenantId: string, id: string): Promise<WebhookResponse> {
  return sql.begin(async (tx) => {
    const [row] = await tx<SubscriptionRow[]>`delete from webhook_subscriptions where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError(es.webhooks.notFound);
    await recordAudit(tx, auditOf(actor, tenantId, 'delete_webhook', id, {}));
    return toWebhookResponse(row);
  }) as Promise<WebhookResponse>;
}

export async function rotateWebhookSecret(sql: Sql, settings: WebhookSettings, actor: AuditActor, tenantId: string, id: string): Promise<WebhookWithSecretResponse> {
  return sql.begin(async (tx) => {
    const s = newSecret(settings.sealKey, id);
    const [row] = await tx<SubscriptionRow[]>`
      update webhook_subscriptions set secret_sealed = ${s.sealed}, secret_prefix = ${s.prefix}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError(es.webhooks.notFound);
    await recordAudit(tx, auditOf(actor, tenantId, 'rotate_webhook_secret', id, {}));
    return { ...toWebhookResponse(row), secret: s.secret };
  }) as Promise<WebhookWithSecretResponse>;
}

interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  last_duration_ms: number | null;
  next_attempt_at: Date;
  created_at: Date;
}

function toDeliveryResponse(row: DeliveryRow): DeliveryResponse {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    last_attempt_at: iso(row.last_attempt_at),
    last_duration_ms: row.last_duration_ms,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  };
}

const DELIVERY_COLUMNS = ['id', 'subscription_id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error',
  'last_attempt_at', 'last_duration_ms', 'next_attempt_at', 'created_at'];

/** Newest first. */
export async function listDeliveries(sql: Queryable, tenantId: string, id: string, input: unknown): Promise<{ rows: DeliveryResponse[]; meta: PageMeta }> {
  await findWebhook(sql, tenantId, id);
  const query = validate(DeliveryListQuery, input, 'query');
  const page = query.page ?? 1;
  const limit = query.limit ?? 20;
  const status = query.status ? sql`and status = ${query.status}` : sql``;
  const [rows, [count]] = await Promise.all([
    sql<DeliveryRow[]>`select ${sql(DELIVERY_COLUMNS)} from webhook_deliveries where subscription_id = ${id} ${status}
      order by created_at desc, id desc limit ${limit} offset ${(page - 1) * limit}`,
    sql<Array<{ n: number }>>`select count(*)::int as n from webhook_deliveries where subscription_id = ${id} ${status}`,
  ]);
  return { rows: rows.map(toDeliveryResponse), meta: pageMeta(page, limit, count!.n) };
}

/**
 * Sends the delivery's event again, now, outside the subscription's order (a new delivery row
 * with the same body, so the original keeps its history). A delivery that succeeded at its first
 * attempt keeps no body of its own: it is rebuilt from the event, while the feed keeps it.
 */
export async function redeliver(sql: Sql, actor: AuditActor, tenantId: string, id: string, deliveryId: string): Promise<DeliveryResponse> {
  await findWebhook(sql, tenantId, id);
  return sql.begin(async (tx) => {
    const [original] = await tx<Array<{ event_id: string; event_type: string; body: string | null; event_xid: string | null; event_seq: string | null }>>`
      select event_id, event_type, body, event_xid::text as event_xid, event_seq::text as event_seq from webhook_deliveries
      where id = ${deliveryId} and subscription_id = ${id} and tenant_id = ${tenantId}`;
    if (!original) throw new NotFoundError(es.webhooks.deliveryNotFound);
    let body = original.body;
    if (body === null) {
      const event = original.event_xid !== null && original.event_seq !== null
        ? await readEvent(tx, tenantId, { xid: original.event_xid, seq: original.event_seq })
        : null;
      if (!event) throw new NotFoundError(es.webhooks.eventNoLongerKept);
      body = eventBody(event);
    }
    const [row] = await tx<DeliveryRow[]>`
      insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, in_order, body)
      values (${tenantId}, ${id}, ${original.event_id}, ${original.event_type}, false, ${body})
      returning ${tx(DELIVERY_COLUMNS)}`;
    await recordAudit(tx, auditOf(actor, tenantId, 'redeliver_webhook', id, { delivery_id: deliveryId, event_id: row.event_id }));
    return toDeliveryResponse(row);
  }) as Promise<DeliveryResponse>;
}

/** Queues a `webhook.test` event for this subscription alone (never in the feed). */
export async function sendTestEvent(sql: Sql, tenantId: string, id: string): Promise<DeliveryResponse> {
  await findWebhook(sql, tenantId, id);
  const eventId = `test_${randomToken(12)}`;
  const body = JSON.stringify({
    id: eventId, type: TEST_EVENT_TYPE, occurred_at: new Date().toISOString(), tenant_id: tenantId, data: { subscription_id: id },
  });
  const [row] = await sql<DeliveryRow[]>`
    insert into webhook_deliveries (tenant_id, subscription_id, event_id, event_type, in_order, body)
    values (${tenantId}, ${id}, ${eventId}, ${TEST_EVENT_TYPE}, false, ${body})
    returning ${sql(DELIVERY_COLUMNS)}`;
  return toDeliveryResponse(row!);
}
