import { ValidationError } from '@svc/core';
import { assertValidCron, isValidTimeZone, nextTick, nextTicks, ticksBetween } from '@svc/core/internals';

const iso = (d: Date | null) => d?.toISOString() ?? null;

function fieldOf(fn: () => void): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).issues[0]!.field;
  }
  return undefined;
}

describe('schedule next-run computation (croner)', () => {
  it('reads five fields at minute precision and six with leading seconds', () => {
    expect(nextTicks('*/15 * * * *', 'UTC', new Date('2026-01-01T10:07:30Z'), 3).map(iso))
      .toEqual(['2026-01-01T10:15:00.000Z', '2026-01-01T10:30:00.000Z', '2026-01-01T10:45:00.000Z']);
    expect(nextTicks('*/5 * * * * *', 'UTC', new Date('2026-01-01T00:00:01.500Z'), 3).map(iso))
      .toEqual(['2026-01-01T00:00:05.000Z', '2026-01-01T00:00:10.000Z', '2026-01-01T00:00:15.000Z']);
  });

  it('reads the times in the schedule\'s time zone', () => {
    // 09:00 in Madrid is 08:00 UTC in winter (CET) and 07:00 UTC in summer (CEST)
    expect(iso(nextTick('0 9 * * *', 'Europe/Madrid', new Date('2026-01-15T00:00:00Z')))).toBe('2026-01-15T08:00:00.000Z');
    expect(iso(nextTick('0 9 * * *', 'Europe/Madrid', new Date('2026-07-15T00:00:00Z')))).toBe('2026-07-15T07:00:00.000Z');
    expect(iso(nextTick('0 9 * * *', 'America/New_York', new Date('2026-01-15T00:00:00Z')))).toBe('2026-01-15T14:00:00.000Z');
  });

  it('runs 02:30 Europe/Madrid once on the spring change day, at 03:30 CEST (02:30 does not exist)', () => {
    // 2026-03-29: clocks go from 02:00 CET to 03:00 CEST
    const runs = nextTicks('30 2 * * *', 'Europe/Madrid', new Date('2026-03-27T12:00:00Z'), 4).map(iso);
    expect(runs).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: the day still gets its one run, an hour after the gap
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    const onTheDay = runs.filter((r) => r!.startsWith('2026-03-29'));
    expect(onTheDay).toHaveLength(1);
  });

  it('runs 02:30 Europe/Madrid once on the autumn change day although 02:30 happens twice', () => {
    // 2026-10-25: clocks go from 03:00 CEST back to 02:00 CET; 02:30 is 00:30Z and again 01:30Z
    const runs = nextTicks('30 2 * * *', 'Europe/Madrid', new Date('2026-10-23T12:00:00Z'), 4).map(iso);
    expect(runs).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:30:00.000Z', // 02:30 CET, the second occurrence: one run only
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
    // from the first occurrence on, the fire loop never finds a second run that day
    expect(ticksBetween('30 2 * * *', 'Europe/Madrid', new Date('2026-10-24T23:00:00Z'), new Date('2026-10-25T23:00:00Z'), 10).map(iso))
      .toEqual(['2026-10-25T01:30:00.000Z']);
  });

  it('lists the ticks due in a window, after the last one fired and bounded', () => {
    const after = new Date('2026-01-01T00:00:00Z');
    expect(ticksBetween('* * * * * *', 'UTC', after, new Date('2026-01-01T00:00:03Z'), 10).map(iso))
      .toEqual(['2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z', '2026-01-01T00:00:03.000Z']);
    expect(ticksBetween('* * * * * *', 'UTC', after, new Date('2026-01-01T01:00:00Z'), 5)).toHaveLength(5);
    expect(ticksBetween('0 0 * * *', 'UTC', after, new Date('2026-01-01T12:00:00Z'), 5)).toEqual([]);
  });

  it('refuses bad expressions and unknown zones with a 422 naming the field', () => {
    expect(fieldOf(() => assertValidCron('61 * * * *', 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron('* * * *', 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron('* * * * * * *', 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron('? * * * *', 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron('0 0 30 2 *', 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron(`${'1,'.repeat(70)}1 * * * *`, 'UTC'))).toBe('body → cron');
    expect(fieldOf(() => assertValidCron('* * * * *', 'Mars/Olympus'))).toBe('body → timezone');
    expect(fieldOf(() => assertValidCron('0 9 * * 1-5', 'Europe/Madrid'))).toBeUndefined();
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('')).toBe(false);
  });
});
