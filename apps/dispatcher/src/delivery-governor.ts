import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Holds the webhook delivery thread to a small share of one core while the rest of the host is
 * busy (docs/decisions/events.md, "Delivery yields to the work"). The idle CPU class alone does
 * not do it on every host: on a virtual machine whose hypervisor meters the CPU a guest uses, a
 * thread in SCHED_IDLE still takes from the work's rate in proportion to the CPU it uses
 * (BENCHMARKS.md, "Issue 17, third session"). So while the other threads of the host keep more
 * than half of its cores busy, the thread pauses after its work for as long as keeps it to
 * `share` of one core; on a quiet host it runs at full speed. Deliveries wait, nothing is lost, and not for
 * ever: an event that has waited longer than `maxLagMs` goes at full speed, busy host or not
 * (on a host busy for good the backlog would otherwise grow without end).
 */

/** CPU times in milliseconds, read together. */
export interface CpuReading {
  /** wall clock */
  at: number;
  /** every core's busy time (user, nice, system, irq, softirq; not idle, I/O wait or steal) */
  hostBusyMs: number;
  /** this thread's own (user and system) */
  ownMs: number;
}

/** Short windows: the thread works in short bursts between its pauses, not half-second ones. */
const WINDOW_MS = 100;
/** Long enough for the smallest share (0.01) after a whole window of work. */
const MAX_PAUSE_MS = 10_000;

/**
 * How long to pause after the window from `before` to `after`: zero on a quiet host or within the
 * share; otherwise long enough that the thread's CPU over the window and the pause is `share` of
 * one core (at most 10 s).
 */
export function pauseAfter(before: CpuReading, after: CpuReading, share: number, cores: number): number {
  const wall = after.at - before.at;
  if (wall <= 0 || share >= 1) return 0;
  const own = Math.max(0, after.ownMs - before.ownMs);
  const othersCores = Math.max(0, after.hostBusyMs - before.hostBusyMs - own) / wall;
  if (othersCores <= cores / 2) return 0;
  return Math.min(MAX_PAUSE_MS, Math.max(0, Math.round(own / share - wall)));
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** The host's busy time and this thread's CPU from /proc (Linux), or null where there is none. */
export function readCpu(): CpuReading | null {
  try {
    const host = readFileSync('/proc/stat', 'utf8');
    const cpu = host.slice(0, host.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …
    const busy = cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]!;
    const own = readFileSync('/proc/thread-self/stat', 'utf8');
    // the fields after the command name, which is in parentheses and may hold spaces
    const fields = own.slice(own.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    if (!Number.isFinite(busy) || !Number.isFinite(ticks)) return null;
    return { at: Date.now(), hostBusyMs: (busy * 1000) / TICKS_PER_SECOND, ownMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return null;
  }
}

export interface DeliveryGovernor {
  /** Called before each request, with the time the event has waited since. */
  pace(waitingSince: number): Promise<void>;
  /** Ends the pause under way and any later one at once (the thread is closing). */
  release(): void;
}

/**
 * A pace for the deliverer: every tenth of a second it compares the readings and, when the host
 * is busy and the thread took more than its share, waits; never for an event that has waited
 * longer than `maxLagMs`.
 */
export function createDeliveryGovernor(
  share: number,
  maxLagMs: number,
  read: () => CpuReading | null = readCpu,
  cores = availableParallelism(),
): DeliveryGovernor {
  let released = false;
  let wake: (() => void) | null = null;
  // turns run side by side (docs/decisions/webhook-fairness.md): they share one pause, so that
  // the share holds for the thread and release() ends it for all of them
  let pausing: Promise<void> | null = null;
  const release = () => {
    released = true;
    wake?.();
  };
  const first = read();
  if (!first || share >= 1) return { pace: () => Promise.resolve(), release };
  let last = first;
  let behind = false;
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  }).finally(() => {
    wake = null;
    pausing = null;
  });
  const pace = async (waitingSince: number) => {
    if (released) return;
    if (Date.now() - waitingSince > maxLagMs) {
      behind = true;
      return;
    }
    if (pausing) return pausing;
    if (behind) {
      // back within the bound: the next window starts now, not where it was left
      behind = false;
      last = read() ?? last;
      return;
    }
    // /proc is read ten times a second at most, not per request
    if (Date.now() - last.at < WINDOW_MS) return;
    const now = read();
    if (!now) return;
    const ms = pauseAfter(last, now, share, cores);
    if (ms > 0) {
      pausing = pause(ms);
      await pausing;
    }
    last = ms > 0 ? read() ?? now : now;
  };
  return { pace, release };
}
