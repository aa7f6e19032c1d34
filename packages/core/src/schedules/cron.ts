import { Cron } from 'croner';
import { ValidationError } from '../errors';
import { es } from '../messages/server-messages';

/**
 * Cron expressions of schedules (docs/decisions/schedules.md), read by croner, never by a parser
 * of ours. Five fields (minute precision) or six (a leading seconds field), or croner's nicknames
 * (`@daily`, `@hourly`…). Day of month and day of week are OR-ed when both are restricted, as in
 * Vixie cron (croner's legacy mode, its default).
 *
 * Times are wall-clock times in the schedule's IANA time zone; croner resolves daylight-saving
 * changes: a time that does not exist (the spring gap) runs at the same offset after the gap
 * (02:30 → 03:30 in Europe/Madrid), and a time that happens twice (the autumn overlap) runs once,
 * at its second occurrence. So a daily schedule runs exactly once on both change days.
 */

/** Admin-supplied and parsed on every tick: bounded like any code-like input. */
export const CRON_MAX_LENGTH = 120;
export const TIMEZONE_MAX_LENGTH = 64;

function cronOf(cron: string, timezone: string): Cron {
  return new Cron(cron, { timezone, paused: true });
}

/** Whether `timezone` is an IANA zone name this runtime knows (Intl is the source of truth). */
export function isValidTimeZone(timezone: string): boolean {
  if (timezone.length === 0 || timezone.length > TIMEZONE_MAX_LENGTH) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Throws a 422 naming `cron` or `timezone` when either is unusable. `?` is refused: croner
 * replaces it with the time the expression is read, so the same schedule would mean different
 * ticks on each read. An expression that never fires again (e.g. 30 February) is refused too.
 */
export function assertValidCron(cron: string, timezone: string, at: Date = new Date()): void {
  if (!isValidTimeZone(timezone)) {
    throw ValidationError.single(['body', 'timezone'], es.schedules.unknownTimezone, 'timezone');
  }
  const fail = (reason: string) => ValidationError.single(['body', 'cron'], es.schedules.invalidCron(reason), 'cron');
  if (cron.length > CRON_MAX_LENGTH) throw fail(es.schedules.cronTooLong(CRON_MAX_LENGTH));
  if (cron.includes('?')) throw fail(es.schedules.questionMarkNotSupported);
  let next: Date | null;
  try {
    next = cronOf(cron, timezone).nextRun(at);
  } catch (err) {
    throw fail((err as Error).message.replace(/^CronPattern: /, ''));
  }
  if (next === null) throw fail(es.schedules.neverRuns);
}

/** The first tick strictly after `after`, or null when the expression never fires again. */
export function nextTick(cron: string, timezone: string, after: Date): Date | null {
  return cronOf(cron, timezone).nextRun(after);
}

/** The next `count` ticks strictly after `after`. */
export function nextTicks(cron: string, timezone: string, after: Date, count: number): Date[] {
  return cronOf(cron, timezone).nextRuns(count, after);
}

/**
 * The ticks in (`after`, `until`], at most `limit` of them (oldest first): what a fire pass finds
 * due. A tick equal to `after` is not included: `after` is the tick fired last.
 */
export function ticksBetween(cron: string, timezone: string, after: Date, until: Date, limit: number): Date[] {
  const out: Date[] = [];
  const c = cronOf(cron, timezone);
  let t = c.nextRun(after);
  while (t !== null && t.getTime() <= until.getTime() && out.length < limit) {
    out.push(t);
    t = c.nextRun(t);
  }
  return out;
}
