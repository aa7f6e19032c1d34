import { absoluteTime, formatCount, formatDuration, formattingLocale, pageCount, relativeTime, smartTime } from '../src/lib/format';

const NOW = new Date('2026-11-24T12:00:00Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();

/** Dates, numbers and paging as the console shows them (Intl, Spanish). */
describe('formatting in the console', () => {
  it('says how long ago a recent moment was, in Spanish, with the largest unit that fits', () => {
    expect(relativeTime(ago(30), NOW, 'es')).toBe('hace 30 segundos');
    // a few seconds either way is "now": the browser's clock and the server's differ that much
    expect(relativeTime(ago(5), NOW, 'es')).toBe('ahora');
    expect(relativeTime(ago(-3), NOW, 'es')).toBe('ahora');
    expect(relativeTime(ago(3 * 60 + 20), NOW, 'es')).toBe('hace 3 minutos');
    expect(relativeTime(ago(2 * 3600), NOW, 'es')).toBe('hace 2 horas');
    expect(relativeTime(ago(-90 * 60), NOW, 'es')).toBe('dentro de 1 hora');
    expect(relativeTime(ago(0), NOW, 'es')).toBe('ahora');
    expect(relativeTime(ago(26 * 3600), NOW, 'es')).toBe('ayer');
  });

  it('shows a moment in the given time zone (the browser\'s in the page)', () => {
    const iso = '2026-11-24T23:30:00Z';
    expect(absoluteTime(iso, 'es', 'UTC')).toContain('23:30:00');
    expect(absoluteTime(iso, 'es', 'Europe/Madrid')).toContain('0:30:00'); // the next day in Madrid
    expect(absoluteTime(iso, 'es', 'Europe/Madrid')).toMatch(/25/);
  });

  it('is relative within a day and a date beyond', () => {
    expect(smartTime(ago(600), NOW, 'es', 'UTC')).toBe('hace 10 minutos');
    expect(smartTime(ago(3 * 24 * 3600), NOW, 'es', 'UTC')).toContain('2026');
  });

  it('formats counts and durations for Spanish readers', () => {
    expect(formatCount(1234567, 'es')).toBe('1.234.567');
    expect(formatDuration(850, 'es')).toBe('850 ms');
    expect(formatDuration(12_500, 'es')).toBe('12,5 s');
    expect(formatDuration(184_000, 'es')).toBe('3 min 4 s');
    expect(formatDuration(120_000, 'es')).toBe('2 min');
  });

  it('rounds a duration whole before splitting it: never "2 min 60 s", "60 s" or "1000 ms"', () => {
    expect(formatDuration(179_600, 'es')).toBe('3 min');
    expect(formatDuration(179_400, 'es')).toBe('2 min 59 s');
    expect(formatDuration(119_500, 'es')).toBe('2 min');
    expect(formatDuration(59_960, 'es')).toBe('1 min');
    expect(formatDuration(59_940, 'es')).toBe('59,9 s');
    expect(formatDuration(999.7, 'es')).toBe('1 s');
    expect(formatDuration(999.4, 'es')).toBe('999 ms');
    expect(formatDuration(60_000, 'es')).toBe('1 min');
    expect(formatDuration(3_599_500, 'es')).toBe('60 min');
    // every duration up to 10 minutes, in steps of 50 ms: the seconds part is always below 60
    const atLimit: string[] = [];
    for (let ms = 0; ms <= 600_000; ms += 50) {
      const text = formatDuration(ms, 'es');
      if (/(^|\D)60 s$/.test(text) || /^1\.?000 ms$/.test(text)) atLimit.push(`${ms}: ${text}`);
    }
    expect(atLimit).toEqual([]);
  });

  it("formats numbers and dates in the browser's language when it is a variant of the texts' language, else in the texts' own", () => {
    expect(formattingLocale('es', ['es-MX', 'en-US'])).toBe('es-MX');
    expect(formattingLocale('es', ['en-US', 'es-AR'])).toBe('es-AR');
    expect(formattingLocale('es', ['ES'])).toBe('es');
    expect(formattingLocale('es', ['en-US', 'de'])).toBe('es');
    expect(formattingLocale('es', [])).toBe('es');
    expect(formattingLocale('es', ['es-??', 'es-CL'])).toBe('es-CL');
    // the chosen locale shows its own conventions, the texts stay as written
    expect(formatCount(1234567.5, formattingLocale('es', ['es-MX']))).toBe('1,234,567.5');
    expect(formatCount(1234567.5, formattingLocale('es', ['en-US']))).toBe('1.234.567,5');
  });

  it('counts at least one page, and a partial last page', () => {
    expect(pageCount(0, 20)).toBe(1);
    expect(pageCount(20, 20)).toBe(1);
    expect(pageCount(21, 20)).toBe(2);
  });
});
