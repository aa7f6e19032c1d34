/**
 * Pure helpers of the admin pages (API keys, audit log, schedules, triggers): no DOM, no texts,
 * so jest tests them as they are.
 */
import type { ItemOf } from '@svc/client';
import { ApiError, formErrors, formFieldOf, type FormErrors } from './errors';

/** A scope of the catalogue (GET …/api-keys/available-scopes), as the OpenAPI document declares it. */
export type AvailableScope = ItemOf<'listApiKeyScopes'>;

export interface ScopeGroup {
  group: string;
  scopes: AvailableScope[];
}

/** The catalogue's scopes by group, groups and scopes in the order the API lists them. */
export function groupScopes(scopes: readonly AvailableScope[]): ScopeGroup[] {
  const groups = new Map<string, AvailableScope[]>();
  for (const s of scopes) {
    const list = groups.get(s.group) ?? [];
    list.push(s);
    groups.set(s.group, list);
  }
  return [...groups].map(([group, list]) => ({ group, scopes: list }));
}

/**
 * The allowed IPs as typed (one per line, or separated by commas or spaces): trimmed, without
 * repeats. None typed is `null`, the API's "no restriction" (it refuses an empty list).
 */
export function parseIpList(text: string): string[] | null {
  const ips = [...new Set(text.split(/[\s,;]+/).map((s) => s.trim()).filter((s) => s.length > 0))];
  return ips.length > 0 ? ips : null;
}

/** A `datetime-local` value (the browser's zone) as an RFC 3339 instant; empty or unreadable → null. */
export function localInputToIso(value: string): string | null {
  if (!value.trim()) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** An instant as a `datetime-local` value in the browser's zone (to fill the field back). */
export function isoToLocalInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export type JsonObjectParse = { ok: true; value: Record<string, unknown> | null } | { ok: false; reason: 'syntax' | 'not-object' };

/** A schedule's input_data as typed: empty is null (no input); otherwise a JSON object, nothing else. */
export function parseJsonObject(text: string): JsonObjectParse {
  if (!text.trim()) return { ok: true, value: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'syntax' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, reason: 'not-object' };
  return { ok: true, value: value as Record<string, unknown> };
}

/**
 * A schedule's next runs (UTC instants from the API) as the operator reads them: weekday, date and
 * time in the browser's zone (or `timeZone`, for tests), with the zone's name so no one mistakes it
 * for the schedule's own zone.
 */
export function formatRuns(runs: readonly string[], locale: string, timeZone?: string): string[] {
  const fmt = new Intl.DateTimeFormat(locale, {
    weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
    timeZoneName: 'short', ...(timeZone ? { timeZone } : {}),
  });
  return runs.map((iso) => fmt.format(new Date(iso)));
}

/** The browser's IANA time zone (the default of a new schedule, and the zone its preview is shown in). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

export interface AuditFilters {
  action: string;
  actor_type: string;
  actor_id: string;
  resource_type: string;
  resource_id: string;
  since: string;
  until: string;
}

export const NO_AUDIT_FILTERS: AuditFilters = { action: '', actor_type: '', actor_id: '', resource_type: '', resource_id: '', since: '', until: '' };

/** The audit log's query from the filter form: trimmed, empty ones left out, the time range as instants. */
export function auditQuery(filters: AuditFilters, limit: number, cursor?: string | null): Record<string, string | number> {
  const q: Record<string, string | number> = { limit };
  for (const key of ['action', 'actor_type', 'actor_id', 'resource_type', 'resource_id'] as const) {
    const v = filters[key].trim();
    if (v) q[key] = v;
  }
  const since = localInputToIso(filters.since);
  const until = localInputToIso(filters.until);
  if (since) q.since = since;
  if (until) q.until = until;
  if (cursor) q.cursor = cursor;
  return q;
}

/** The state of a key as a word: revoked beats expired beats active. */
export function keyState(key: { is_active: boolean; expires_at: string | null }, now: Date): 'active' | 'revoked' | 'expired' {
  if (!key.is_active) return 'revoked';
  if (key.expires_at && new Date(key.expires_at).getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/**
 * The form errors of a create/edit form whose fields are the body's top-level properties: an issue
 * about `scopes → 2` or `allowed_ips → 0` belongs next to `scopes` / `allowed_ips`.
 */
export function topLevelErrors(err: unknown, formFields: readonly string[], fallbackMessage: string): FormErrors {
  if (!(err instanceof ApiError)) return formErrors(err, formFields, fallbackMessage);
  const issues = err.issues.map((i) => {
    const name = formFieldOf(i.field);
    const top = name.split('.')[0] ?? name;
    return formFields.includes(top) && top !== name ? { field: top, message: `${name.slice(top.length + 1)}: ${i.message}` } : i;
  });
  return formErrors(new ApiError(err.status, err.code, err.message, issues, err.requestId), formFields, fallbackMessage);
}
