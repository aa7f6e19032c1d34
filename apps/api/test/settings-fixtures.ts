import type { Test } from 'supertest';
import type { Client } from '@svc/client';
import { seedTenant, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

/** Two workspaces: A with an admin and a member, B with an admin (for cross-tenant checks). */
export interface SettingsWorld {
  tenantA: string;
  tenantB: string;
  admin: string;
  adminUserId: string;
  member: string;
  adminB: string;
}

export async function settingsWorld(t: ApiTestContext): Promise<SettingsWorld> {
  const a = await seedTenant(t.sql);
  const b = await seedTenant(t.sql);
  const admin = await seedUser(t.sql, a.id, { role: 'admin' });
  const member = await seedUser(t.sql, a.id, { role: 'member' });
  const adminB = await seedUser(t.sql, b.id, { role: 'admin' });
  return { tenantA: a.id, tenantB: b.id, admin: admin.token, adminUserId: admin.user.id, member: member.token, adminB: adminB.token };
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The 422 envelope names the offending field (`body → a → b`). */
export function fieldsOf(body: { error?: { details?: Array<{ field: string }> } }): string[] {
  return (body.error?.details ?? []).map((d) => d.field);
}

/**
 * The set-up of a settings test file: a real app over its own database with a SettingsWorld
 * (made in beforeAll, closed in afterAll), POST / PATCH on `/api/v1/settings/<plural>` as a
 * user (workspace A's admin unless told) for what a client would never send, and the typed
 * client as that user for well-formed calls whose answers a test reads.
 */
export interface SettingsSuite {
  t: ApiTestContext;
  w: SettingsWorld;
  post(body: unknown, token?: string): Test;
  patch(id: string, body: unknown, token?: string): Test;
  api(token?: string): Client;
}

export function settingsSuite(plural: string): SettingsSuite {
  const base = `/api/v1/settings/${plural}`;
  const suite: SettingsSuite = {
    t: undefined as unknown as ApiTestContext,
    w: undefined as unknown as SettingsWorld,
    post: (body: unknown, token = suite.w.admin) => suite.t.http.post(base).set(bearer(token)).send(body as object),
    patch: (id: string, body: unknown, token = suite.w.admin) => suite.t.http.patch(`${base}/${id}`).set(bearer(token)).send(body as object),
    api: (token = suite.w.admin) => apiClient(suite.t, { token }),
  };
  beforeAll(async () => {
    suite.t = await createApiTestContext();
    suite.w = await settingsWorld(suite.t);
  });
  afterAll(() => suite.t.close());
  return suite;
}
