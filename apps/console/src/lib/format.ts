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

/**
 * A duration in milliseconds as "850 ms", "12,5 s", "3 min 4 s". Each form rounds the whole
 * duration to its own precision first and then splits it, so a rounding never shows a unit at its
 * limit: 119,6 s is "2 min", not "1 min 60 s"; 59,96 s is "1 min", not "60 s"; 999,7 ms is "1 s".
 */
export function formatDuration(ms: number, locale: string): string {
  const wholeMs = Math.round(ms);
  if (wholeMs < 1000) return `${formatCount(wholeMs, locale)} ms`;
  const tenths = Math.round(ms / 100);
  if (tenths < 600) return `${new Intl.NumberFormat(locale, { maximumFractionDigits: 1 }).format(tenths / 10)} s`;
  const totalSeconds = Math.round(ms / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  return seconds ? `${formatCount(minutes, locale)} min ${seconds} s` : `${formatCount(minutes, locale)} min`;
}

/**
 * The locale the console formats numbers and dates in: the browser's preferred language when it
 * is a variant of the texts' language (es-MX, es-AR: their own date order and separators), else
 * the texts' own (an English browser keeps "hace 3 minutos" among Spanish texts, not
 * "3 minutes ago"). docs/decisions/console.md, "Texts".
 */
export function formattingLocale(textsLocale: string, browserLanguages: readonly string[]): string {
  const primary = (tag: string) => tag.split('-')[0]!.toLowerCase();
  for (const tag of browserLanguages) {
    if (!tag || primary(tag) !== primary(textsLocale)) continue;
    try {
      return Intl.getCanonicalLocales(tag)[0]!;
    } catch {
      // not a valid language tag: the next one, or the texts' own
    }
  }
  return textsLocale;
}

/** Pages of a list, from the API's meta (at least one, so "página 1 de 1" for an empty list). */
export function pageCount(total: number, limit: number): number {
  return Math.max(1, Math.ceil(total / limit));
}
