import type { Queryable } from '../db/sql';
import { sha256 } from '../security/hash';
import type { MachineStatus } from '../catalog/schemas';
import { MACHINE_STATUS_TRANSITIONS as T, machineStatusSql } from './transitions';

/**
 * Machine status from heartbeats (docs/decisions/dispatch.md "Heartbeats and machine status"):
 *  - online  — heartbeats arrive and a slot is free;
 *  - busy    — heartbeats arrive and every slot runs a job;
 *  - offline — no heartbeat for `machineOfflineAfterSeconds` (the dispatcher's sweep says so),
 *              or the agent said goodbye.
 * The agent is the only one that knows how many jobs it runs, so it reports `running_jobs` on
 * every heartbeat and whenever that number changes; the status column is always derived from
 * it, so `machines/list` and auto-selection read a fresh status. The legal changes and the
 * statuses these statements write: MACHINE_STATUS_TRANSITIONS (machines/transitions.ts).
 */
export type MachineStatusValue = MachineStatus;

export interface AgentMachine {
  id: string;
  tenant_id: string;
  name: string;
  slots: number;
}

/** The active machine a machine key (`svc_mk_…`) belongs to, or null. */
export async function findMachineByKey(sql: Queryable, machineKey: string): Promise<AgentMachine | null> {
  const [row] = await sql<AgentMachine[]>`
    select id, tenant_id, name, slots from machines where machine_key_hash = ${sha256(machineKey)} and is_active`;
  return row ?? null;
}

/** The status a machine with this load reports. */
export function loadStatus(running: number, slots: number): typeof BUSY | typeof ONLINE {
  return running >= slots ? BUSY : ONLINE;
}

/** The statuses a load gives (`fill` / `comeBackBusy` and `free` / `comeBack` write the same). */
const BUSY = T.fill.to;
const ONLINE = T.free.to;
/** Where a silent machine, or one whose agent said goodbye, ends up; and where a comeback starts. */
const OFFLINE = T.goOffline.to;

export interface HeartbeatResult {
  /** the status before this heartbeat (offline → the machine just came back) */
  previous: MachineStatusValue;
  status: MachineStatusValue;
  slots: number;
  /** still active? An inactive machine's agent stops taking work. */
  is_active: boolean;
}

/** What a robot's heartbeat reports of its machine. */
export interface HeartbeatReport {
  running: number;
  agentVersion?: string | null;
  hostInfo?: Record<string, unknown> | null;
}

/**
 * One heartbeat: last_heartbeat_at, running_jobs and the derived status, in one statement.
 * `previous` is read under the row lock: a plain sub-select would report the status of the
 * statement's snapshot, so a machine the sweep marked offline while this waited for the row came
 * back "online → online" and no machine-online effect was recorded. The effect commits with
 * the heartbeat (outbox/effects.ts).
 */
export async function recordHeartbeat(sql: Queryable, machineId: string, report: HeartbeatReport): Promise<HeartbeatResult | null> {
  const [row] = await sql<HeartbeatResult[]>`
    with hb as (
      update machines m
         set last_heartbeat_at = now(), running_jobs = ${report.running},
             status = case when ${report.running}::int >= m.slots then ${machineStatusSql(sql, BUSY)} else ${machineStatusSql(sql, ONLINE)} end,
             agent_version = coalesce(${report.agentVersion ?? null}, m.agent_version),
             host_info = coalesce(${report.hostInfo ? sql.json(report.hostInfo as never) : null}::jsonb, m.host_info),
             updated_at = case when m.status = (case when ${report.running}::int >= m.slots then ${machineStatusSql(sql, BUSY)} else ${machineStatusSql(sql, ONLINE)} end)
                               then m.updated_at else now() end
        from (select status as previous from machines where id = ${machineId} for update) p
       where m.id = ${machineId}
      returning p.previous, m.status, m.slots, m.is_active, m.id, m.tenant_id),
    -- back from offline: its tenant's queues may get consumers on it now
    fx as (
      insert into outbox (kind, payload)
      select 'machine-online', jsonb_build_object('tenant_id', tenant_id, 'machine_id', id) from hb where previous = ${machineStatusSql(sql, T.comeBack.from[0])})
    select previous, status, slots, is_active from hb`;
  return row ?? null;
}

/**
 * The machine's busy slots changed on the platform's side (a run handed out or ended by the API
 * holding its connection): its status follows, but its last heartbeat is not touched and an
 * offline machine stays offline. Only the robot's own heartbeats say it is alive: a robot whose
 * network went silent must go offline even while the platform ends its runs.
 */
export async function recordMachineLoad(sql: Queryable, machineId: string, running: number): Promise<void> {
  await sql`
    update machines m
       set running_jobs = ${running},
           status = case when ${running}::int >= m.slots then ${machineStatusSql(sql, BUSY)} else ${machineStatusSql(sql, ONLINE)} end,
           updated_at = case when m.status = (case when ${running}::int >= m.slots then ${machineStatusSql(sql, BUSY)} else ${machineStatusSql(sql, ONLINE)} end) then m.updated_at else now() end
     where m.id = ${machineId} and m.status <> ${machineStatusSql(sql, OFFLINE)}`;
}

/** The agent is going away (graceful shutdown): offline now rather than after the timeout. */
export async function recordGoodbye(sql: Queryable, machineId: string): Promise<void> {
  await sql`update machines set status = ${machineStatusSql(sql, T.goOffline.to)}, running_jobs = 0, updated_at = now() where id = ${machineId}`;
}

/**
 * The dispatcher's sweep: machines whose heartbeats stopped for `offlineAfterSeconds` become
 * offline. Returns them (their running jobs are then given up, see job sweeps). Not within
 * `offlineAfterSeconds` of a Postgres (re)start: no agent could heartbeat while it was down.
 */
export async function markSilentMachinesOffline(
  sql: Queryable,
  offlineAfterSeconds: number,
): Promise<Array<{ id: string; tenant_id: string; name: string }>> {
  return sql<Array<{ id: string; tenant_id: string; name: string }>>`
    update machines set status = ${machineStatusSql(sql, T.goOffline.to)}, running_jobs = 0, updated_at = now()
    where status <> ${machineStatusSql(sql, T.goOffline.to)}
      and (last_heartbeat_at is null or last_heartbeat_at < now() - make_interval(secs => ${offlineAfterSeconds}))
      and pg_postmaster_start_time() < now() - make_interval(secs => ${offlineAfterSeconds})
    returning id, tenant_id, name`;
}

/**
 * Where a job created by the engine (a chain, a retry) runs: the preferred machine if it is not
 * offline; else the least-loaded online machine of the tenant; else a busy one; else the
 * preferred machine even offline (the job waits for it). Only active machines. Load = pending
 * and running jobs per slot.
 */
export async function pickMachineForFollowUp(sql: Queryable, tenantId: string, preferMachineId: string | null): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`
    select m.id from machines m
    where m.tenant_id = ${tenantId} and m.is_active
      -- an attended machine keeps a job that was already on it, and is never picked for another
      and (m.kind = 'unattended' or m.id = ${preferMachineId}::uuid)
    order by case when m.id = ${preferMachineId}::uuid and m.status <> 'offline' then 0
                  when m.status = 'online' then 1
                  when m.status = 'busy' then 2
                  when m.id = ${preferMachineId}::uuid then 3
                  else 4 end,
             (select count(*) from jobs a where a.machine_id = m.id and a.status in ('pending', 'running', 'waiting_input'))::float8 / m.slots,
             m.id
    limit 1`;
  return row?.id ?? null;
}

/**
 * Of the machines `connections` name, with the SHA-256 (hex) of the key each connected with, the
 * ids of those no longer active under that same key (a rotated key, a deactivated or deleted
 * machine): their connections are cut. The API's machine connections check this together; the
 * answer is usually empty, so a fleet's check costs one statement and no rows.
 */
export async function findLapsedMachineKeys(sql: Queryable, connections: ReadonlyArray<{ id: string; keyHashHex: string }>): Promise<string[]> {
  if (connections.length === 0) return [];
  const rows = await sql<Array<{ id: string }>>`
    select k.id from unnest(${connections.map((c) => c.id)}::uuid[], ${connections.map((c) => c.keyHashHex)}::text[]) as k(id, hash)
     where not exists (select 1 from machines m where m.id = k.id and m.machine_key_hash = decode(k.hash, 'hex') and m.is_active)`;
  return rows.map((r) => r.id);
}
