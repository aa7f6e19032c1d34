import { es } from './messages/server-messages';

/** The API key scope catalogue (served by GET /settings/api-keys/available-scopes). Scopes are resource:action. */
export const SCOPES = [
  { scope: 'assets:read', description: es.scopes['assets:read'], group: 'credentials' },
  { scope: 'queues:read', description: es.scopes['queues:read'], group: 'queues' },
  { scope: 'queues:write', description: es.scopes['queues:write'], group: 'queues' },
  { scope: 'jobs:read', description: es.scopes['jobs:read'], group: 'executions' },
  { scope: 'jobs:write', description: es.scopes['jobs:write'], group: 'executions' },
  { scope: 'jobs:stop', description: es.scopes['jobs:stop'], group: 'executions' },
  { scope: 'processes:read', description: es.scopes['processes:read'], group: 'processes' },
  { scope: 'machines:read', description: es.scopes['machines:read'], group: 'machines' },
] as const;

export type Scope = (typeof SCOPES)[number]['scope'];
export const SCOPE_NAMES: readonly Scope[] = SCOPES.map((s) => s.scope);

export function isScope(value: string): value is Scope {
  return (SCOPE_NAMES as readonly string[]).includes(value);
}

/** Fail-closed: an empty or null scope list grants nothing. */
export function hasScope(granted: readonly string[] | null | undefined, required: Scope): boolean {
  return Array.isArray(granted) && granted.includes(required);
}

export const ENVIRONMENTS = ['dev', 'staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export const PLAN_FEATURES = ['api_keys', 'webhooks'] as const;
export type PlanFeature = (typeof PLAN_FEATURES)[number];
