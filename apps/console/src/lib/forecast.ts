/**
 * The stats' deadline forecast as one sentence a supervisor reads at a glance
 * (docs/decisions/deadline-forecast.md). Pure: the texts, the locale and the time zone are
 * parameters, so jest pins them.
 */
import type { DataOf } from '@svc/client';

/** The stats' forecast, as the API's OpenAPI document declares it. */
export type Forecast = DataOf<'getQueueStats'>['forecast'];

export interface ForecastTexts {
  nothingReady: string;
  noHistory: string;
  noConsumers: string;
  drainsAt: (when: string) => string;
  late: (n: string) => string;
  ofFirst: (n: string) => string;
  onTime: string;
  needed: (n: string) => string;
  noneWouldHelp: string;
  onDay: (day: string, time: string) => string;
}

/** "14:20" today, "3 dic, 09:10" another day: the drain is read as a time on the wall clock. */
function wallClock(iso: string, now: Date, texts: ForecastTexts, locale: string, timeZone?: string): string {
  const zone = timeZone ? { timeZone } : {};
  const time = new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit', ...zone }).format(new Date(iso));
  const day = (d: Date) => new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'short', day: 'numeric', ...zone }).format(d);
  return day(new Date(iso)) === day(now) ? time : texts.onDay(day(new Date(iso)), time);
}

export function forecastSentence(f: Forecast, texts: ForecastTexts, locale: string, now: Date, timeZone?: string): string {
  if (f.ready_items === 0) return `${texts.nothingReady}.`;
  if (f.handling_seconds_p50 === null) return `${texts.noHistory}.`;
  const n = (v: number) => new Intl.NumberFormat(locale).format(v);
  const parts = [f.drain_at === null ? texts.noConsumers : texts.drainsAt(wallClock(f.drain_at, now, texts, locale, timeZone))];
  const late = f.late_items ?? 0;
  const capped = f.examined_items < f.ready_items ? texts.ofFirst(n(f.examined_items)) : '';
  if (late === 0) {
    if (f.machines_needed !== null) parts.push(texts.onTime + capped);
  } else {
    parts.push(texts.late(n(late)) + capped);
    // with as many consumers as needed only the items no number of machines can save stay late
    parts.push(f.machines_needed !== null && f.machines_needed > f.consumers ? texts.needed(n(f.machines_needed)) : texts.noneWouldHelp);
  }
  return parts.join('; ') + '.';
}
