import { absoluteTime, formatCount, formatDuration, pageCount, relativeTime, smartTime } from '../src/lib/format';

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

  it('counts at least one page, and a partial last page', () => {
    expect(pageCount(0, 20)).toBe(1);
    expect(pageCount(20, 20)).toBe(1);
    expect(pageCount(21, 20)).toBe(2);
  });
});
