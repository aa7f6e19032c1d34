import type { Queryable, Sql } from '../db/sql';
import { Batcher, isPool } from '../db/call-batcher';
import { sha256 } from '../security/hash';
import { findMachineByKey, type AgentMachine } from './heartbeat';

/**
 * Robots reconnecting together (an API replica died and its robots come to the others) look
 * their keys up in one statement per event-loop turn rather than one each (db/call-batcher.ts).
 * Not a cache: a key rotated a moment ago opens nothing, not even for a moment.
 */
const bySql = new WeakMap<Sql, Batcher<string, AgentMachine | null>>();

export function findMachineByKeyBatched(sql: Queryable, machineKey: string): Promise<AgentMachine | null> {
  if (!isPool(sql)) return findMachineByKey(sql, machineKey);
  let batcher = bySql.get(sql);
  if (!batcher) {
    batcher = new Batcher({
      runBatch: (keys) => (keys.length === 1 ? findMachineByKey(sql, keys[0]!).then((m) => [m]) : findMachinesByKeys(sql, keys)),
      runOne: (key) => findMachineByKey(sql, key),
      maxBatch: 500,
      maxInFlight: 2,
    });
    bySql.set(sql, batcher);
  }
  return batcher.run(machineKey);
}

/** The active machine of each key (null for none), in order. */
export async function findMachinesByKeys(sql: Queryable, machineKeys: readonly string[]): Promise<Array<AgentMachine | null>> {
  const hashes = machineKeys.map((k) => sha256(k).toString('hex'));
  const rows = await sql<Array<AgentMachine & { hash: string }>>`
    select m.id, m.tenant_id, m.name, m.slots, k.hash
      from (select distinct h as hash from unnest(${hashes}::text[]) as h) k
      join machines m on m.machine_key_hash = decode(k.hash, 'hex') and m.is_active`;
  const byHash = new Map(rows.map(({ hash, ...m }) => [hash, m as AgentMachine]));
  return hashes.map((h) => byHash.get(h) ?? null);
}
