import { consumerCapacity, forecastDeadlines } from '@svc/core/internals';

/** The deadline forecast's arithmetic (docs/decisions/deadline-forecast.md), with exact values. */
describe('forecastDeadlines', () => {
  const now = new Date('2026-12-02T14:00:00.000Z');
  const at = (seconds: number) => new Date(now.getTime() + seconds * 1000);

  it('knows only the counts without history', () => {
    expect(forecastDeadlines({ now, readyItems: 3, deadlines: [at(10), null, null], p50Seconds: null, consumers: 2 })).toEqual({
      handling_seconds_p50: null, consumers: 2, ready_items: 3, examined_items: 3, drain_at: null, late_items: null, machines_needed: null,
    });
  });

  it('finishes item k at now + ceil((k + 1) / consumers) × p50, in the order given', () => {
    // p50 10 s, 2 consumers: items 0,1 end at +10 s, 2,3 at +20 s, 4 at +30 s
    const deadlines = [at(10), at(9), at(20), null, at(25)];
    const f = forecastDeadlines({ now, readyItems: 5, deadlines, p50Seconds: 10, consumers: 2 });
    // item 1 (deadline +9 s) and item 4 (+25 s, ends +30 s) are late; item 0 ends exactly at its deadline
    expect(f.late_items).toBe(2);
    expect(f.drain_at).toBe(at(30).toISOString());
    // item 1 cannot be on time at all (less than one p50 left); item 0: ceil(1/1) = 1; item 2: s = 2,
    // ceil(3/2) = 2; item 4: s = 2, ceil(5/2) = 3
    expect(f.machines_needed).toBe(3);
    expect(forecastDeadlines({ now, readyItems: 5, deadlines, p50Seconds: 10, consumers: 3 }).late_items).toBe(1);
  });

  it('counts every item with a deadline late without consumers, and still says how many would do', () => {
    const f = forecastDeadlines({ now, readyItems: 2, deadlines: [at(100), null], p50Seconds: 10, consumers: 0 });
    expect(f).toMatchObject({ drain_at: null, late_items: 1, machines_needed: 1, consumers: 0 });
  });

  it('answers null machines_needed when no item has a deadline, or none can still make it', () => {
    expect(forecastDeadlines({ now, readyItems: 2, deadlines: [null, null], p50Seconds: 5, consumers: 1 })).toMatchObject({ late_items: 0, machines_needed: null });
    expect(forecastDeadlines({ now, readyItems: 2, deadlines: [at(-60), at(4)], p50Seconds: 5, consumers: 1 })).toMatchObject({ late_items: 2, machines_needed: null });
  });

  it('looks at the examined items only, and drains every ready item', () => {
    // 1,000 ready, the first 3 read: 4 consumers of 2 s take ceil(1000 / 4) × 2 s; item 0 cannot
    // make +1 s, items 1 and 2 need one consumer each to end at +2 s
    const f = forecastDeadlines({ now, readyItems: 1000, deadlines: [at(1), at(2), at(2)], p50Seconds: 2, consumers: 4 });
    expect(f).toMatchObject({ examined_items: 3, late_items: 1, machines_needed: 3, drain_at: at(500).toISOString() });
  });

  it('is exact for a long queue against a brute-force search of machines_needed', () => {
    const deadlines = Array.from({ length: 200 }, (_, k) => (k % 3 === 0 ? null : at(30 + ((k * 37) % 400))));
    const lateWith = (c: number) => deadlines.filter((d, k) => d !== null && now.getTime() + Math.ceil((k + 1) / c) * 7_000 > d.getTime()).length;
    const f = forecastDeadlines({ now, readyItems: 200, deadlines, p50Seconds: 7, consumers: 5 });
    expect(f.late_items).toBe(lateWith(5));
    const impossible = deadlines.filter((d) => d !== null && d.getTime() - now.getTime() < 7_000).length;
    let c = 1;
    while (lateWith(c) > impossible) c += 1;
    expect(f.machines_needed).toBe(c);
    expect(c).toBeGreaterThan(1);
  });
});

describe('consumerCapacity', () => {
  const m = (id: string, available: number, kind = 'unattended') => ({ id, available, kind });

  it('bounds each trigger by its maximum and the unattended machines by their slots', () => {
    expect(consumerCapacity([{ max_concurrent_jobs: 5, machine_id: null }], [m('a', 2), m('b', 1)])).toBe(3);
    expect(consumerCapacity([{ max_concurrent_jobs: 2, machine_id: null }], [m('a', 2), m('b', 1)])).toBe(2);
    expect(consumerCapacity([{ max_concurrent_jobs: 2, machine_id: null }], [m('a', 4, 'attended')])).toBe(0);
    expect(consumerCapacity([], [m('a', 4)])).toBe(0);
  });

  it('runs a trigger naming a machine only there, first, attended or not', () => {
    const machines = [m('a', 2), m('h', 1, 'attended'), m('b', 0)];
    expect(consumerCapacity([{ max_concurrent_jobs: 5, machine_id: 'h' }], machines)).toBe(1);
    expect(consumerCapacity([{ max_concurrent_jobs: 5, machine_id: 'gone' }], machines)).toBe(0);
    // the named trigger takes a's two slots; the unattended one gets nothing left on a or b
    expect(consumerCapacity([{ max_concurrent_jobs: 3, machine_id: null }, { max_concurrent_jobs: 2, machine_id: 'a' }], machines)).toBe(2);
    expect(consumerCapacity([{ max_concurrent_jobs: 3, machine_id: null }, { max_concurrent_jobs: 1, machine_id: 'a' }], machines)).toBe(2);
  });
});
