import type { Queryable, Sql } from '../db/sql';
import { Batcher, isPool } from '../db/call-batcher';
import { RUN_STATUSES, jobStatusInSql } from '../jobs/transitions';
import type { LeaseRenewal } from './job-run';

/** A run its machine still owns, as a heartbeat's answer shows it. */
export interface OwnedRun {
  id: string;
  stop_requested: boolean;
  queue_id: string | null;
}

export interface LeaseRenewals {
  machineId: string;
  runs: readonly LeaseRenewal[];
  leaseSeconds: number;
}

/**
 * The lease renewals of many heartbeats (many machines) in one statement, each with
 * renewJobLeases's effect: the jobs are locked in id order (two renewal batches never wait on each
 * other in a circle; one caught in a deadlock with a sweep is run again request by request, as any
 * batch Postgres refused, db/call-batcher.ts), with the lock the update itself would take (a child
 * job's insert is not held up), a run renews only for its own machine and attempt while its job runs, and a run
 * listed twice (two heartbeats of one machine in one batch) is renewed when either says it is
 * alive. One list of owned runs per request, in order.
 */
export async function renewManyJobLeases(sql: Queryable, requests: readonly LeaseRenewals[]): Promise<OwnedRun[][]> {
  const runs = new Map<string, { id: string; attempt: number; machineId: string; alive: boolean; leaseSeconds: number }>();
  for (const r of requests) {
    for (const run of r.runs) {
      const key = `${run.id}|${run.attempt}|${r.machineId}`;
      const seen = runs.get(key);
      if (seen) {
        seen.alive ||= run.alive;
        seen.leaseSeconds = Math.max(seen.leaseSeconds, r.leaseSeconds);
      } else runs.set(key, { id: run.id, attempt: run.attempt, machineId: r.machineId, alive: run.alive, leaseSeconds: r.leaseSeconds });
    }
  }
  if (runs.size === 0) return requests.map(() => []);
  const list = [...runs.values()];
  const rows = await sql<Array<OwnedRun & { machine_id: string; attempt: number }>>`
    with input as (
      select * from unnest(${list.map((r) => r.id)}::uuid[], ${list.map((r) => r.attempt)}::int[], ${list.map((r) => r.machineId)}::uuid[],
                           ${list.map((r) => (r.alive ? 1 : 0))}::int[], ${list.map((r) => r.leaseSeconds)}::float8[])
             as r(id, attempt, machine_id, alive, lease_seconds)),
    locked as (
      select j.id from jobs j join input r on j.id = r.id and j.attempt = r.attempt and j.machine_id = r.machine_id
       where ${jobStatusInSql(sql, 'j.status', RUN_STATUSES)}
       order by j.id for no key update of j)
    update jobs j
       set lease_expires_at = case when r.alive = 1 then now() + make_interval(secs => r.lease_seconds) else j.lease_expires_at end,
           acknowledged_at = coalesce(j.acknowledged_at, now())
      from input r
     where j.id in (select id from locked) and j.id = r.id and j.attempt = r.attempt and j.machine_id = r.machine_id
    returning j.id, j.attempt, j.machine_id, j.stop_requested, j.queue_id`;
  const owned = new Map(rows.map((row) => [`${row.id}|${row.attempt}|${row.machine_id}`, { id: row.id, stop_requested: row.stop_requested, queue_id: row.queue_id }]));
  return requests.map((r) => r.runs.flatMap((run) => {
    const o = owned.get(`${run.id}|${run.attempt}|${r.machineId}`);
    return o ? [o] : [];
  }));
}

/**
 * Busy robots' heartbeats at fleet size: the lease renewals of one event-loop turn of the API
 * process (and those that arrive while earlier ones are written) go out as one statement, as the
 * heartbeats themselves do (machines/heartbeat-batched.ts).
 */
const bySql = new WeakMap<Sql, Batcher<LeaseRenewals, OwnedRun[]>>();

export function renewJobLeasesBatched(sql: Queryable, machineId: string, runs: readonly LeaseRenewal[], leaseSeconds: number): Promise<OwnedRun[]> {
  const request = { machineId, runs, leaseSeconds };
  if (runs.length === 0) return Promise.resolve([]);
  if (!isPool(sql)) return renewManyJobLeases(sql, [request]).then(([owned]) => owned!);
  let batcher = bySql.get(sql);
  if (!batcher) {
    batcher = new Batcher({
      runBatch: (requests) => renewManyJobLeases(sql, requests),
      runOne: (r) => renewManyJobLeases(sql, [r]).then(([owned]) => owned!),
      maxBatch: 1000,
      // one at a time: what arrives meanwhile leaves together next, and robots' batchers and
      // budget together stay within what the HTTP API leaves them of the pool
      maxInFlight: 1,
    });
    bySql.set(sql, batcher);
  }
  return batcher.run(request);
}
