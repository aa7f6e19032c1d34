import type { DbOutage, Engine, Logger } from '@svc/core';
import type { HeartbeatResult } from '@svc/core/machine-protocol';

/** Most heartbeats in one statement of a flush. */
const FLUSH_CHUNK = 1000;

/**
 * The heartbeats of this API process's robots that only say "still here" (the same load, version
 * and host as the last one written): kept here and written together, one statement per period for
 * every robot heard since the last (core's recordLiveness: the last heartbeat moves, nothing else
 * the robot reported is overwritten, and a machine the sweep had marked offline comes back). A
 * heartbeat that changes anything is written at once by its session. So a machine's `last_heartbeat_at` trails its robot by at most `flushMs`,
 * which the offline verdict (three heartbeat periods and more) leaves room for, and Postgres does
 * one statement a period for a fleet rather than one per robot per period.
 */
export interface Liveness {
  /** Records the robot as alive by the next flush; `applied` gets what Postgres answered (null: no such machine). */
  later(machineId: string, applied: (result: HeartbeatResult | null) => void): void;
  /** The machine said goodbye: what is pending for it is dropped, and `settled` waits for a flush writing it. */
  forget(machineId: string): void;
  /** Resolves once no flush is being written. */
  settled(): Promise<void>;
  /** Writes what is pending and stops. */
  close(): Promise<void>;
}

type Applied = (result: HeartbeatResult | null) => void;

export function createLiveness(engine: Engine, options: { flushMs: number; logger: Logger; outage: DbOutage }): Liveness {
  let pending = new Map<string, Applied>();
  /** machines that said goodbye: a failed flush does not put them back */
  const forgotten = new Set<string>();
  let flushing: Promise<void> | null = null;

  const flush = async (): Promise<void> => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const entries = [...batch];
    for (let i = 0; i < entries.length; i += FLUSH_CHUNK) {
      const chunk = entries.slice(i, i + FLUSH_CHUNK);
      try {
        const results = await engine.machines.liveness(chunk.map(([machineId]) => machineId));
        options.outage.ok();
        chunk.forEach(([, applied], k) => applied(results[k] ?? null));
      } catch (err) {
        // written by the next flush, unless the machine said goodbye meanwhile
        for (const [id, applied] of chunk) if (!pending.has(id) && !forgotten.has(id)) pending.set(id, applied);
        if (!options.outage.failed(err, 'recording heartbeats')) options.logger.warn('heartbeats could not be recorded', { err: (err as Error).message });
      }
    }
  };

  const tick = () => {
    if (flushing) return;
    flushing = flush().finally(() => {
      flushing = null;
    });
  };
  const timer = setInterval(tick, options.flushMs);
  timer.unref();

  return {
    later(machineId, applied) {
      forgotten.delete(machineId);
      pending.set(machineId, applied);
    },
    forget(machineId) {
      pending.delete(machineId);
      forgotten.add(machineId);
    },
    async settled() {
      while (flushing) await flushing;
    },
    async close() {
      clearInterval(timer);
      while (flushing) await flushing;
      await flush();
    },
  };
}
