import { PLAN_FEATURES, type Engine } from '@svc/core';
import { SUBSCRIPTION_STATUSES, type TenantCreateInput, type TenantResponseBody, type TenantUpdateInput } from '@svc/core/schemas';
import { optionalInt, optionalList, optionalNumber, optionalString, parse, positional, required, type Parsed } from '../args';
import type { FieldNames } from '../errors';
import { UsageError } from '../errors';
import type { Command, CommandContext } from '../context';
import { record, table } from '../output';

export const TENANT_HELP = `Usage:
  svc tenant create --name NAME [--plan PLAN] [--features api_keys,webhooks] [--quota 10000] [--subscription active]
  svc tenant update <id|name> [--name NAME] [--plan PLAN] [--features LIST] [--quota N] [--subscription STATE]
                    [--job-retention-days D] [--job-retention-action delete|archive]
  svc tenant show <id|name>
  svc tenant list

  --features      plan features, comma-separated, from: ${PLAN_FEATURES.join(', ')} ('' for none)
  --quota         monthly execution quota (integer >= 0)
  --subscription  ${SUBSCRIPTION_STATUSES.join(', ')}
  --job-retention-days    days an ended job stays (fractions allowed; default 90)
  --job-retention-action  delete, or archive (into ARCHIVE_DIR or ARCHIVE_S3_BUCKET) then delete
  --json          print JSON for scripts`;

export const TENANT_FIELDS: FieldNames = {
  name: '--name',
  plan: '--plan',
  plan_features: '--features',
  monthly_quota: '--quota',
  subscription_status: '--subscription',
  job_retention_days: '--job-retention-days',
  job_retention_action: '--job-retention-action',
};

const TENANT_OPTIONS = {
  name: { type: 'string' },
  plan: { type: 'string' },
  features: { type: 'string' },
  quota: { type: 'string' },
  subscription: { type: 'string' },
  'job-retention-days': { type: 'string' },
  'job-retention-action': { type: 'string' },
} as const;

function tenantInput(p: Parsed): TenantUpdateInput {
  const input: Record<string, unknown> = {
    name: optionalString(p, 'name'),
    plan: optionalString(p, 'plan'),
    plan_features: optionalList(p, 'features'),
    monthly_quota: optionalInt(p, 'quota'),
    subscription_status: optionalString(p, 'subscription'),
    job_retention_days: optionalNumber(p, 'job-retention-days'),
    job_retention_action: optionalString(p, 'job-retention-action'),
  };
  for (const k of Object.keys(input)) if (input[k] === undefined) delete input[k];
  return input as TenantUpdateInput;
}

// The command logic, importable (e.g. by the demo set-up): plain data in, response bodies out.

export async function tenantCreate(engine: Engine, input: TenantCreateInput): Promise<TenantResponseBody> {
  return engine.tenants.create(input);
}

export interface TenantChange {
  tenant: TenantResponseBody;
  /** field → [before, after], only for fields whose value changed */
  changes: Record<string, [unknown, unknown]>;
}

export async function tenantUpdate(engine: Engine, idOrName: string, input: TenantUpdateInput): Promise<TenantChange> {
  const before = await engine.tenants.resolve(idOrName);
  const after = await engine.tenants.update(before.id, input);
  const changes: Record<string, [unknown, unknown]> = {};
  for (const key of Object.keys(input) as Array<keyof TenantResponseBody>) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changes[key] = [before[key], after[key]];
  }
  return { tenant: after, changes };
}

export async function tenantShow(engine: Engine, idOrName: string): Promise<TenantResponseBody> {
  return engine.tenants.resolve(idOrName);
}

export async function tenantList(engine: Engine): Promise<TenantResponseBody[]> {
  return engine.tenants.list();
}

function tenantLines(title: string, t: TenantResponseBody): string[] {
  return record(title, {
    id: t.id,
    plan: t.plan,
    plan_features: t.plan_features,
    subscription: t.subscription_status,
    monthly_quota: t.monthly_quota,
    job_retention: `${t.job_retention_days} days, ${t.job_retention_action}`,
    quota_used: `${t.quota_used} (since ${t.quota_period})`,
    created_at: t.created_at,
  });
}

async function runTenant(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  const engine = ctx.engine;
  const out = ctx.output;
  switch (sub) {
    case 'create': {
      const p = parse(rest, TENANT_OPTIONS, TENANT_HELP);
      if (p.values.help) return void out(false).text(TENANT_HELP);
      const input = { ...tenantInput(p), name: required(p, 'name', TENANT_HELP) } as TenantCreateInput;
      const o = out(!!p.values.json);
      const t = await tenantCreate(await engine(), input);
      o.result(t);
      o.text(tenantLines(`Created tenant ${t.name}`, t));
      return;
    }
    case 'update': {
      const p = parse(rest, TENANT_OPTIONS, TENANT_HELP, 1);
      if (p.values.help) return void out(false).text(TENANT_HELP);
      const ref = positional(p, 0, 'tenant id or name', TENANT_HELP);
      const input = tenantInput(p);
      if (Object.keys(input).length === 0) throw new UsageError('nothing to change: give at least one of --name, --plan, --features, --quota, --subscription, --job-retention-days, --job-retention-action', TENANT_HELP);
      const o = out(!!p.values.json);
      const { tenant, changes } = await tenantUpdate(await engine(), ref, input);
      o.result(tenant);
      const lines = Object.entries(changes).map(([k, [a, b]]) => `  ${k}: ${fmt(a)} → ${fmt(b)}`);
      o.text(lines.length ? [`Updated tenant ${tenant.name} (${tenant.id})`, ...lines] : `Tenant ${tenant.name} unchanged`);
      return;
    }
    case 'show': {
      const p = parse(rest, {}, TENANT_HELP, 1);
      if (p.values.help) return void out(false).text(TENANT_HELP);
      const ref = positional(p, 0, 'tenant id or name', TENANT_HELP);
      const o = out(!!p.values.json);
      const db = await engine();
      const t = await tenantShow(db, ref);
      o.result(t);
      if (!o.json) {
        const users = await db.users.listOfTenant(t.id);
        o.text([
          ...tenantLines(`Tenant ${t.name}`, t),
          `  users         ${users.length ? users.map((u) => `${u.email} (${u.role}${u.is_active ? '' : ', inactive'})`).join(', ') : '(none)'}`,
        ]);
      }
      return;
    }
    case 'list': {
      const p = parse(rest, {}, TENANT_HELP);
      if (p.values.help) return void out(false).text(TENANT_HELP);
      const o = out(!!p.values.json);
      const list = await tenantList(await engine());
      o.result(list);
      o.text(list.length
        ? table(['id', 'name', 'plan', 'features', 'subscription', 'quota', 'used'],
          list.map((t) => [t.id, t.name, t.plan, t.plan_features, t.subscription_status, t.monthly_quota, t.quota_used]))
        : 'No tenants yet: svc tenant create --name NAME');
      return;
    }
    default:
      throw new UsageError(sub ? `unknown tenant command "${sub}"` : 'missing tenant command', TENANT_HELP);
  }
}

function fmt(v: unknown): string {
  if (Array.isArray(v)) return v.length ? v.join(', ') : '(none)';
  return String(v);
}

export const tenantCommand: Command = {
  summary: 'create, change, show and list tenants (plan features, quota, subscription)',
  help: TENANT_HELP,
  fields: TENANT_FIELDS,
  run: runTenant,
};
