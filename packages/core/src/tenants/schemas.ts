import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { PLAN_FEATURES } from '../scopes';
import { DateTime, Uuid } from '../validation/formats';

/** Subscription states of a tenant (the check constraint of `tenants.subscription_status`). */
export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due', 'suspended', 'canceled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

/** A string restricted to `values`; a plain `enum` keeps ajv's message short and clear. */
const StringEnum = <T extends readonly string[]>(values: T, options: object = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

const tenantFields = {
  name: Type.String({ minLength: 2, maxLength: 100, pattern: '\\S' }),
  plan: Type.String({ minLength: 1, maxLength: 50 }),
  plan_features: Type.Array(StringEnum(PLAN_FEATURES), { uniqueItems: true }),
  subscription_status: StringEnum(SUBSCRIPTION_STATUSES),
  // int4 column
  monthly_quota: Type.Integer({ minimum: 0, maximum: 2_147_483_647 }),
  // retention of the workspace's ended jobs (docs/decisions/retention.md)
  job_retention_days: Type.Number({ minimum: 0, maximum: 36500 }),
  job_retention_action: StringEnum(['delete', 'archive'] as const),
};

/** Creating a tenant: only the name is required; the rest take the table's defaults. */
export const TenantCreateBody = Type.Object(
  {
    name: tenantFields.name,
    plan: Type.Optional(tenantFields.plan),
    plan_features: Type.Optional(tenantFields.plan_features),
    subscription_status: Type.Optional(tenantFields.subscription_status),
    monthly_quota: Type.Optional(tenantFields.monthly_quota),
  },
  { additionalProperties: false },
);
export type TenantCreateInput = Static<typeof TenantCreateBody>;

/** Changing a tenant: any subset of the creation fields. */
export const TenantUpdateBody = Type.Partial(Type.Object(tenantFields), { additionalProperties: false });
export type TenantUpdateInput = Static<typeof TenantUpdateBody>;

export const TenantResponse: TSchema = Type.Object({
  id: Uuid(),
  name: Type.String(),
  plan: Type.String(),
  plan_features: Type.Array(Type.String()),
  subscription_status: StringEnum(SUBSCRIPTION_STATUSES),
  monthly_quota: Type.Integer(),
  job_retention_days: Type.Number({ description: 'Days an ended job stays after finished_at (fractions allowed)' }),
  job_retention_action: StringEnum(['delete', 'archive'] as const),
  quota_used: Type.Integer({ description: 'Executions counted in the current period' }),
  quota_period: Type.String({ format: 'date', description: 'First day (UTC) of the month being counted' }),
  created_at: DateTime(),
  updated_at: DateTime(),
});
