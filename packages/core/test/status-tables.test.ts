import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Sql } from '@svc/core';
import { createTestContext, recordStatements, seedMachine, seedTenant, type TestContext } from '@svc/testing';
import { statusSqlFor } from '../src/db/status-sql';
import { MACHINE_STATUSES } from '../src/catalog/schemas';
import { BULK_ACTION_STATUSES } from '../src/bulk/schemas';
import { DELIVERY_STATUSES } from '../src/webhooks/schemas';
import { MACHINE_STATUS_TRANSITIONS, canTransitionMachine, machineStatusInSql, machineStatusSql } from '../src/machines/transitions';
import { BULK_ACTION_STATUS_TRANSITIONS, bulkActionStatusInSql, bulkActionStatusSql, canTransitionBulkAction } from '../src/bulk/transitions';
import { WEBHOOK_DELIVERY_STATUS_TRANSITIONS, canTransitionDelivery, deliveryStatusInSql, deliveryStatusSql } from '../src/webhooks/transitions';
import { loadStatus, markSilentMachinesOffline, recordGoodbye, recordHeartbeat, recordMachineLoad } from '../src/machines/heartbeat';
import { recordHeartbeats, recordLiveness } from '../src/machines/heartbeat-batched';
import { sources, sqlTemplates } from './sql-templates';

/**
 * The transition tables of machines, bulk actions and webhook deliveries (like jobs' and queue
 * items', job-transitions.test.ts and queue-item-transitions.test.ts), the one helper that writes
 * a status into SQL text (db/status-sql.ts), and a scan of the sources: no statement that updates
 * one of those tables writes a status literal of its own.
 */

const pairs = (table: Record<string, { from: readonly string[]; to: string }>) =>
  Object.entries(table).flatMap(([name, t]) => t.from.map((from) => `${from}→${t.to} ${name}`)).sort();
const text = (q: unknown) => (q as { strings: readonly string[] }).strings.join('');
/** Only `.unsafe` is called by the helpers: they need no connection. */
const fakeSql = { unsafe: (s: string) => ({ strings: [s] }) } as unknown as Sql;

describe('the machine transition table', () => {
  it('lists exactly the legal status changes, each by its name', () => {
    expect(pairs(MACHINE_STATUS_TRANSITIONS)).toEqual([
      'busy→offline goOffline', 'busy→online free', 'offline→busy comeBackBusy', 'offline→online comeBack',
      'online→busy fill', 'online→offline goOffline',
    ]);
    // every status is in the one list, and a load gives what the table says
    for (const t of Object.values(MACHINE_STATUS_TRANSITIONS)) for (const s of [...t.from, t.to]) expect(MACHINE_STATUSES).toContain(s);
    expect(loadStatus(2, 2)).toBe(MACHINE_STATUS_TRANSITIONS.fill.to);
    expect(loadStatus(1, 2)).toBe(MACHINE_STATUS_TRANSITIONS.free.to);
    expect(MACHINE_STATUS_TRANSITIONS.comeBackBusy.to).toBe(MACHINE_STATUS_TRANSITIONS.fill.to);
    expect(MACHINE_STATUS_TRANSITIONS.comeBack.to).toBe(MACHINE_STATUS_TRANSITIONS.free.to);
    expect(canTransitionMachine('offline', 'busy')).toBe(true);
    expect(canTransitionMachine('offline', 'offline')).toBe(false);
  });
});

describe('the bulk action transition table', () => {
  it('lists exactly the legal status changes, each by its name; completed and cancelled are final', () => {
    expect(pairs(BULK_ACTION_STATUS_TRANSITIONS)).toEqual([
      'pending→cancelled cancelPending', 'pending→running claim', 'running→cancelled cancel', 'running→completed complete',
      'running→running claim', 'running→running renew',
    ]);
    for (const t of Object.values(BULK_ACTION_STATUS_TRANSITIONS)) for (const s of [...t.from, t.to]) expect(BULK_ACTION_STATUSES).toContain(s);
    for (const final of ['completed', 'cancelled'] as const) {
      for (const to of BULK_ACTION_STATUSES) expect(canTransitionBulkAction(final, to)).toBe(false);
    }
  });
});

describe('the webhook delivery transition table', () => {
  it('lists exactly the legal status changes, each by its name; delivered and failed are final', () => {
    expect(pairs(WEBHOOK_DELIVERY_STATUS_TRANSITIONS)).toEqual(['pending→delivered deliver', 'pending→failed giveUp', 'pending→pending retry']);
    for (const t of Object.values(WEBHOOK_DELIVERY_STATUS_TRANSITIONS)) for (const s of [...t.from, t.to]) expect(DELIVERY_STATUSES).toContain(s);
    for (const final of ['delivered', 'failed'] as const) {
      for (const to of DELIVERY_STATUSES) expect(canTransitionDelivery(final, to)).toBe(false);
    }
  });
});

describe('status literals in SQL text (db/status-sql.ts)', () => {
  it('write a status or a guard of the entity, and nothing that is not one of its statuses', () => {
    expect(text(machineStatusSql(fakeSql, 'offline'))).toBe("'offline'");
    expect(text(machineStatusInSql(fakeSql, 'm.status', MACHINE_STATUS_TRANSITIONS.comeBack.from))).toBe("m.status = 'offline'");
    expect(text(bulkActionStatusSql(fakeSql, 'cancelled'))).toBe("'cancelled'");
    expect(text(bulkActionStatusInSql(fakeSql, 'status', BULK_ACTION_STATUS_TRANSITIONS.claim.from))).toBe("status in ('pending', 'running')");
    expect(text(deliveryStatusSql(fakeSql, 'delivered'))).toBe("'delivered'");
    expect(text(deliveryStatusInSql(fakeSql, 'd.status', WEBHOOK_DELIVERY_STATUS_TRANSITIONS.deliver.from))).toBe("d.status = 'pending'");
    // a status of another entity is no status of this one
    expect(() => machineStatusSql(fakeSql, 'pending' as never)).toThrow('Unknown machine status pending');
    expect(() => bulkActionStatusSql(fakeSql, "running' or true or '" as never)).toThrow(/Unknown bulk action status/);
    expect(() => deliveryStatusInSql(fakeSql, 'status; drop table webhook_deliveries; --', ['pending'])).toThrow(/Not a webhook delivery status column/);
    expect(() => deliveryStatusInSql(fakeSql, 'status', [])).toThrow(/no status/);
  });

  it('refuses, when built, a status that could end the quoted literal', () => {
    expect(() => statusSqlFor('thing', ['ok', "x' or '1"])).toThrow("thing status x' or '1 cannot be written into SQL text");
    expect(() => statusSqlFor('thing', ['Upper'])).toThrow(/cannot be written into SQL text/);
  });
});

/** The tables whose status changes are in a table here, and their statuses. */
const ENTITIES = [
  { table: 'machines', statuses: MACHINE_STATUSES, files: ['machines/heartbeat.ts', 'machines/heartbeat-batched.ts'] },
  { table: 'bulk_actions', statuses: BULK_ACTION_STATUSES, files: ['bulk/actions.ts'] },
  { table: 'webhook_deliveries', statuses: DELIVERY_STATUSES, files: ['webhooks/deliver.ts'] },
] as const;

/** `table`'s status literals written in SQL that updates `table`, as `file:line 'status'`. */
function literalsInUpdates(table: string, statuses: readonly string[], file: string, src: string): string[] {
  const updates = new RegExp(`\\bupdate\\s+${table}\\b`, 'i');
  const literal = new RegExp(`'(${statuses.join('|')})'`, 'g');
  return sqlTemplates(src)
    .filter((t) => updates.test(t.text))
    .flatMap((t) => (t.text.match(literal) ?? []).map((lit) => `${file}:${t.line} ${lit}`));
}

describe('machine, bulk action and webhook delivery status literals in SQL', () => {
  const root = path.join(__dirname, '../../..');
  const dirs = [path.join(root, 'packages/core/src'), ...readdirSync(path.join(root, 'apps')).map((a) => path.join(root, 'apps', a, 'src'))]
    .filter((d) => { try { return readdirSync(d).length > 0; } catch { return false; } });

  it('the scanner finds a literal of the table in an UPDATE of it, also nested, and nothing in other tables or comments', () => {
    const sample = [
      "// `update machines set status = 'offline'` in a comment",
      "const a = sql`update machines m set status = case when x then 'busy' else ${y ? sql`'online'` : sql``} end`;",
      "const b = sql`update jobs set status = 'pending' where exists (select 1 from machines where status = 'online')`;",
      "const c = tx`update bulk_actions set status = 'cancelled' where status = 'pending'`;",
    ].join('\n');
    expect(literalsInUpdates('machines', MACHINE_STATUSES, 's.ts', sample)).toEqual(["s.ts:2 'busy'", "s.ts:2 'online'"]);
    expect(literalsInUpdates('bulk_actions', BULK_ACTION_STATUSES, 's.ts', sample)).toEqual(["s.ts:4 'cancelled'", "s.ts:4 'pending'"]);
    expect(literalsInUpdates('webhook_deliveries', DELIVERY_STATUSES, 's.ts', sample)).toEqual([]);
  });

  it('appear nowhere in statements that update those tables: their statuses come from the transition tables', () => {
    const offenders: string[] = [];
    const updates: string[] = [];
    const files = dirs.flatMap(sources);
    for (const file of files) {
      const src = readFileSync(file, 'utf8');
      const rel = path.relative(root, file);
      for (const e of ENTITIES) {
        const updating = new RegExp(`\\bupdate\\s+${e.table}\\b`, 'i');
        for (const t of sqlTemplates(src)) if (updating.test(t.text) && /\bstatus\s*=/.test(t.text)) updates.push(`${e.table} ${rel}:${t.line}`);
        offenders.push(...literalsInUpdates(e.table, e.statuses, rel, src));
      }
    }
    expect(offenders).toEqual([]);
    // the scan did read the statements that change those statuses
    for (const e of ENTITIES) {
      for (const file of e.files) {
        expect(updates.filter((u) => u.startsWith(`${e.table} packages/core/src/${file}:`)).length).toBeGreaterThanOrEqual(2);
      }
    }
  });
});

describe('statements sent for the machine transitions', () => {
  let ctx: TestContext;
  let sql: Sql;
  let tenantId: string;
  beforeAll(async () => {
    ctx = await createTestContext();
    sql = ctx.sql;
    tenantId = (await seedTenant(sql)).id;
  });
  afterAll(() => ctx.close());

  it('write the statuses into the SQL text, never as bound values', async () => {
    const { row } = await seedMachine(sql, tenantId, { slots: 1 });
    const id = row.id as string;
    const statements = await recordStatements(sql, async () => {
      await recordHeartbeat(sql, id, { running: 1 });
      await recordMachineLoad(sql, id, 0);
      await recordGoodbye(sql, id);
      await recordLiveness(sql, [id]);
      await recordHeartbeats(sql, [{ machineId: id, running: 0 }, { machineId: id, running: 1 }]);
      await markSilentMachinesOffline(sql, 3600);
    });
    const updates = statements.filter((s) => /update machines/.test(s.text));
    expect(updates).toHaveLength(6);
    for (const s of updates) {
      for (const p of s.params) expect(MACHINE_STATUSES).not.toContain(p);
      expect(s.text).toMatch(/'(busy|online|offline)'/);
    }
    expect(updates[0]!.text).toContain("then 'busy' else 'online' end");
    expect(updates[2]!.text).toContain("set status = 'offline', running_jobs = 0");
    const [m] = await sql`select status from machines where id = ${id}`;
    expect(m!.status).toBe('busy');
  });
});
