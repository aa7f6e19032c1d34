/**
 * Dates and numbers as people read them: in the browser's time zone and language (Intl), a
 * recent moment relative ("hace 3 minutos"). Pure: the clock and the locale are parameters, so
 * jest pins them.
 */

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/** Closer than this reads "ahora": the browser's and the server's clocks differ by a few seconds. */
const NOW_WITHIN_SECONDS = 10;

/** "hace 5 minutos", "dentro de 2 horas": the largest unit that fits, rounded toward zero. */
export function relativeTime(iso: string, now: Date, locale: string): string {
  const seconds = Math.round((new Date(iso).getTime() - now.getTime()) / 1000);
  const rtf = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  const abs = Math.abs(seconds);
  if (abs < NOW_WITHIN_SECONDS) return rtf.format(0, 'second');
  for (const [unit, size] of UNITS) {
    if (abs >= size || unit === 'second') return rtf.format(Math.trunc(seconds / size), unit);
  }
  return rtf.format(0, 'second');
}

/** Date and time in the browser's zone (or `timeZone`, for tests). */
export function absoluteTime(iso: string, locale: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'medium', ...(timeZone ? { timeZone } : {}) }).format(new Date(iso));
}

/** Within this much of now a moment reads better relative; further away, as a date. */
const RELATIVE_WITHIN_MS = 24 * 3600 * 1000;

export function smartTime(iso: string, now: Date, locale: string, timeZone?: string): string {
  const distance = Math.abs(new Date(iso).getTime() - now.getTime());
  return distance < RELATIVE_WITHIN_MS ? relativeTime(iso, now, locale) : absoluteTime(iso, locale, timeZone);
}

export function formatCount(n: number, locale: string): string {
  return new Intl.NumberFormat(locale).format(n);
}

/** A duration in milliseconds as "850 ms", "12,5 s", "3 min 4 s". */
export function formatDuration(ms: number, locale: string): string {
  if (ms < 1000) return `${formatCount(Math.round(ms), locale)} ms`;
  if (ms < 60_000) return `${new Intl.NumberFormat(locale, { maximumFractionDigits: 1 }).format(ms / 1000)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return seconds ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

/** Pages of a list, from the API's meta (at least one, so "página 1 de 1" for an empty list). */
export function pageCount(total: number, limit: number): number {
  return Math.max(1, Math.ceil(total / limit));
}
