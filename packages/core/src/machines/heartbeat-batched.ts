import type { Queryable, Sql } from '../db/sql';
import { Batcher, isPool } from '../db/call-batcher';
import { recordHeartbeat, type HeartbeatReport, type HeartbeatResult } from './heartbeat';
import { MACHINE_STATUS_TRANSITIONS as T, machineStatusInSql, machineStatusSql } from './transitions';

/**
 * Heartbeats at fleet size: the API process holding many robots' connections writes the
 * heartbeats of one event-loop turn (and those that arrive while earlier ones are written) as one
 * statement (recordHeartbeats), with the same effect per machine as one statement each: one
 * parse, one plan and one commit for all of them. On an idle process a heartbeat still goes out
 * alone, at once; a statement Postgres refuses is run again heartbeat by heartbeat
 * (db/call-batcher.ts).
 */
const bySql = new WeakMap<Sql, Batcher<HeartbeatReport & { machineId: string }, HeartbeatResult | null>>();

export function recordHeartbeatBatched(sql: Queryable, machineId: string, report: HeartbeatReport): Promise<HeartbeatResult | null> {
  if (!isPool(sql)) return recordHeartbeat(sql, machineId, report);
  let batcher = bySql.get(sql);
  if (!batcher) {
    batcher = new Batcher({
      runBatch: (reports) => (reports.length === 1
        ? recordHeartbeat(sql, reports[0]!.machineId, reports[0]!).then((r) => [r])
        : recordHeartbeats(sql, reports)),
      runOne: (r) => recordHeartbeat(sql, r.machineId, r),
      maxBatch: 1000,
      maxInFlight: 2,
    });
    bySql.set(sql, batcher);
  }
  return batcher.run({ ...report, machineId });
}

/**
 * Many heartbeats in one statement, each with recordHeartbeat's effect: the rows are locked in id
 * order (two batches never wait on each other in a circle), each machine's status before the
 * heartbeat is read under its lock, and a machine back from offline gets its effect in the
 * outbox. Two heartbeats of one machine in a batch record the later one. One result per report,
 * in order.
 */
export async function recordHeartbeats(sql: Queryable, reports: ReadonlyArray<HeartbeatReport & { machineId: string }>): Promise<Array<HeartbeatResult | null>> {
  const rows = await sql<ResultRow[]>`
    with input as (
      select * from unnest(${reports.map((r) => r.machineId)}::uuid[], ${reports.map((r) => r.running)}::int[],
                           ${reports.map((r) => r.agentVersion ?? null)}::text[],
                           ${reports.map((r) => (r.hostInfo ? JSON.stringify(r.hostInfo) : null))}::text[])
             with ordinality as i(id, running, version, host, ord)),
    latest as (select distinct on (id) id, running, version, host from input order by id, ord desc),
    locked as (select m.id, m.status as previous from machines m where m.id in (select id from latest) order by m.id for update),
    hb as (
      update machines m
         set last_heartbeat_at = now(), running_jobs = l.running,
             status = case when l.running >= m.slots then ${machineStatusSql(sql, T.fill.to)} else ${machineStatusSql(sql, T.free.to)} end,
             agent_version = coalesce(l.version, m.agent_version),
             host_info = coalesce(l.host::jsonb, m.host_info),
             updated_at = case when m.status = (case when l.running >= m.slots then ${machineStatusSql(sql, T.fill.to)} else ${machineStatusSql(sql, T.free.to)} end)
                               then m.updated_at else now() end
        from latest l join locked k on k.id = l.id
       where m.id = l.id
      returning k.previous, m.status, m.slots, m.is_active, m.id, m.tenant_id),
    ${comebacksThenResults(sql)}`;
  return resultsInOrder(rows);
}

/**
 * Heartbeats that say only "still here", for many machines in one statement (the API's liveness
 * flush): `last_heartbeat_at` moves, and nothing the robot reported before is overwritten (its
 * load may have changed since, written by another statement). A machine the sweep had marked
 * offline comes back, `busy` or `online` by the load it has, with its comeback effect; `previous`
 * tells the caller, whose robot then reports its load again. One result per id, in order (null:
 * no such machine).
 */
export async function recordLiveness(sql: Queryable, machineIds: readonly string[]): Promise<Array<HeartbeatResult | null>> {
  const rows = await sql<ResultRow[]>`
    with input as (select * from unnest(${machineIds}::uuid[]) with ordinality as i(id, ord)),
    locked as (select m.id, m.status as previous from machines m where m.id in (select id from input) order by m.id for update),
    hb as (
      update machines m
         set last_heartbeat_at = now(),
             status = case when ${machineStatusInSql(sql, 'm.status', T.comeBack.from)} then (case when m.running_jobs >= m.slots then ${machineStatusSql(sql, T.comeBackBusy.to)} else ${machineStatusSql(sql, T.comeBack.to)} end) else m.status end,
             updated_at = case when ${machineStatusInSql(sql, 'm.status', T.comeBack.from)} then now() else m.updated_at end
        from locked k
       where m.id = k.id
      returning k.previous, m.status, m.slots, m.is_active, m.id, m.tenant_id),
    ${comebacksThenResults(sql)}`;
  return resultsInOrder(rows);
}

type ResultRow = HeartbeatResult & { found: boolean };

/**
 * The end of a batch statement whose `hb` step updated the machines (returning `previous`, the new
 * status, slots, is_active, id and tenant_id) for the ids of its `input` step (with `ord`): the
 * comeback effect of every machine that was offline, then one row per input, in order.
 */
function comebacksThenResults(sql: Queryable) {
  return sql`
    fx as (
      insert into outbox (kind, payload)
      select 'machine-online', jsonb_build_object('tenant_id', tenant_id, 'machine_id', id) from hb where previous = ${machineStatusSql(sql, T.comeBack.from[0])})
    select hb.id is not null as found, hb.previous, hb.status, hb.slots, hb.is_active
      from input i left join hb on hb.id = i.id order by i.ord`;
}

function resultsInOrder(rows: ResultRow[]): Array<HeartbeatResult | null> {
  return rows.map((r) => (r.found ? { previous: r.previous, status: r.status, slots: r.slots, is_active: r.is_active } : null));
}
