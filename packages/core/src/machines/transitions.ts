import { statusSqlFor } from '../db/status-sql';
import { MACHINE_STATUSES, type MachineStatus } from '../catalog/schemas';

/**
 * The machine state machine (docs/decisions/dispatch.md "Heartbeats and machine status";
 * docs/architecture.md, invariant 2). MACHINE_STATUS_TRANSITIONS is the only place where legal
 * machine status changes are written down; MACHINE_STATUSES (catalog/schemas.ts) is the one list
 * of statuses. The statements of machines/heartbeat.ts and heartbeat-batched.ts take every status
 * they write or test from it, written into the SQL text by machineStatusSql / machineStatusInSql
 * (db/status-sql.ts). The status is derived from the load the robot reports: a heartbeat that
 * leaves a machine in the status it had (busy → busy) is no transition. A test scans the sources
 * for machine status literals in SQL that updates machines (packages/core/test/status-tables.test.ts).
 */
export const MACHINE_STATUS_TRANSITIONS = {
  /** A heartbeat or a load change the platform saw (recordMachineLoad): every slot runs a job. */
  fill: { from: ['online'], to: 'busy' },
  /** A heartbeat or a load change: a slot is free again. */
  free: { from: ['busy'], to: 'online' },
  /**
   * A heartbeat from a machine marked offline (recordHeartbeat, recordHeartbeats, recordLiveness)
   * with a slot free: back, with its machine-online effect in the outbox.
   */
  comeBack: { from: ['offline'], to: 'online' },
  /** The same, every slot running a job. */
  comeBackBusy: { from: ['offline'], to: 'busy' },
  /**
   * The dispatcher's sweep finds its heartbeats stopped (markSilentMachinesOffline), or its agent
   * says goodbye (recordGoodbye): `running_jobs` 0.
   */
  goOffline: { from: ['online', 'busy'], to: 'offline' },
} as const satisfies Record<string, { from: readonly MachineStatus[]; to: MachineStatus }>;

export type MachineTransitionName = keyof typeof MACHINE_STATUS_TRANSITIONS;

export function canTransitionMachine(from: MachineStatus, to: MachineStatus): boolean {
  return Object.values(MACHINE_STATUS_TRANSITIONS).some((t) => (t.from as readonly MachineStatus[]).includes(from) && t.to === to);
}

/** A machine status, or a guard over several, written into the SQL text (db/status-sql.ts). */
export const { statusSql: machineStatusSql, statusInSql: machineStatusInSql } = statusSqlFor<MachineStatus>('machine', MACHINE_STATUSES);
