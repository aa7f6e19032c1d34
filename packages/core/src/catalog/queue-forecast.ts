/**
 * The deadline forecast of a queue (docs/decisions/deadline-forecast.md): pure arithmetic over
 * what one read of the queue returns, so the rule lives here once and is tested with exact values.
 *
 * The model: every ready item takes `p50` of one consumer's time, consumers take items in the
 * platform's take order (priority, deadline, creation: `compareTakeOrder`) and all work at once, so
 * the item at position k (0-based) finishes at now + ceil((k + 1) / consumers) × p50.
 */

/** The queue's triggers as dispatch reads them: how many consumer jobs each may run, and where. */
export interface ForecastTrigger {
  max_concurrent_jobs: number;
  /** The one machine the trigger runs on, or null for any unattended machine of the workspace. */
  machine_id: string | null;
}

/** A machine that is active and not offline, with the slots the queue's consumers may hold. */
export interface ForecastMachine {
  id: string;
  kind: string;
  /** Slots not held by other work (jobs that are not this queue's consumers). */
  available: number;
}

/**
 * How many consumer jobs of the queue can work at once now: what `startQueueConsumers` could place,
 * counting the slots the queue's consumers already hold. A trigger naming a machine runs only there,
 * the others only on unattended machines; every trigger is bounded by its `max_concurrent_jobs`.
 * Named triggers are served first from their own machine: they can use no other, so any slot of
 * theirs an unattended trigger used could be swapped for one elsewhere, and the greedy is the most.
 */
export function consumerCapacity(triggers: readonly ForecastTrigger[], machines: readonly ForecastMachine[]): number {
  const left = new Map(machines.map((m) => [m.id, Math.max(0, m.available)]));
  let total = 0;
  for (const t of triggers) {
    if (t.machine_id === null) continue;
    const free = left.get(t.machine_id) ?? 0;
    const n = Math.min(Math.max(0, t.max_concurrent_jobs), free);
    left.set(t.machine_id, free - n);
    total += n;
  }
  const wanted = triggers.filter((t) => t.machine_id === null).reduce((n, t) => n + Math.max(0, t.max_concurrent_jobs), 0);
  const pool = machines.filter((m) => m.kind === 'unattended').reduce((n, m) => n + (left.get(m.id) ?? 0), 0);
  return total + Math.min(wanted, pool);
}

export interface ForecastInput {
  now: Date;
  /** Every ready item of the queue (the stats' `ready`). */
  readyItems: number;
  /** Deadlines of the first ready items in take order (null where an item has none); may be capped. */
  deadlines: ReadonlyArray<Date | null>;
  /** Median handling time in seconds, or null without history. */
  p50Seconds: number | null;
  consumers: number;
}

export interface DeadlineForecast {
  handling_seconds_p50: number | null;
  consumers: number;
  ready_items: number;
  /** How many ready items, from the head of the take order, late_items and machines_needed looked at. */
  examined_items: number;
  drain_at: string | null;
  late_items: number | null;
  machines_needed: number | null;
}

/**
 * The forecast of `input`. Without history (no p50) nothing but the counts is known; without
 * consumers nothing finishes, so `drain_at` is null and every examined item with a deadline is late,
 * while `machines_needed` still answers how many would make them.
 *
 * `machines_needed` is the fewest consumers with which every examined item that can still be on time
 * is: item k with a deadline is on time with c consumers when ceil((k + 1) / c) ≤ s, s being the
 * whole p50s left before its deadline, i.e. when c ≥ ceil((k + 1) / s). An item whose deadline is
 * less than one p50 away (s < 1, a passed deadline included) is late with any number of consumers: it
 * is counted in `late_items` and left out here; when every item with a deadline is such, or none has
 * one, it is null.
 */
export function forecastDeadlines(input: ForecastInput): DeadlineForecast {
  const { now, readyItems, deadlines, p50Seconds, consumers } = input;
  const examined = Math.min(deadlines.length, readyItems);
  const base = { handling_seconds_p50: p50Seconds, consumers, ready_items: readyItems, examined_items: examined };
  if (p50Seconds === null || !(p50Seconds > 0)) {
    return { ...base, drain_at: null, late_items: null, machines_needed: null };
  }
  const p50Ms = p50Seconds * 1000;
  const t0 = now.getTime();
  let late = 0;
  let needed = 0;
  for (let k = 0; k < examined; k++) {
    const deadline = deadlines[k];
    if (deadline === null || deadline === undefined) continue;
    // whole p50s before the deadline: a small epsilon keeps an exact fit (d = now + s·p50) on time
    const s = Math.floor((deadline.getTime() - t0) / p50Ms + 1e-9);
    if (consumers <= 0 || Math.ceil((k + 1) / consumers) > s) late += 1;
    if (s >= 1) needed = Math.max(needed, Math.ceil((k + 1) / s));
  }
  const drainAt = consumers > 0 ? new Date(t0 + Math.ceil(readyItems / consumers) * p50Ms).toISOString() : null;
  return { ...base, drain_at: drainAt, late_items: late, machines_needed: needed > 0 ? needed : null };
}
