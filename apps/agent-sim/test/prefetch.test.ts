import { AUTO_MAX, AutoPrefetch, WORK_BUDGET_MS, takeSize } from '../src/prefetch';

describe('the auto hand-off buffer', () => {
  it('takes one item until it has timed one', () => {
    expect(new AutoPrefetch().take()).toBe(1);
  });

  it('takes up to AUTO_MAX instant items, and one at a time once items take WORK_BUDGET_MS or more', () => {
    const instant = new AutoPrefetch();
    instant.observe(0);
    expect(instant.take()).toBe(AUTO_MAX);
    const slow = new AutoPrefetch();
    slow.observe(WORK_BUDGET_MS);
    expect(slow.take()).toBe(1);
    slow.observe(400);
    expect(slow.take()).toBe(1);
  });

  it('holds about WORK_BUDGET_MS of expected work: 3 ms items go three at a time', () => {
    const p = new AutoPrefetch();
    for (let i = 0; i < 20; i++) p.observe(3);
    expect(p.take()).toBe(Math.floor(WORK_BUDGET_MS / 3));
  });

  it('follows a change of speed within a few items, both ways', () => {
    const p = new AutoPrefetch();
    for (let i = 0; i < 20; i++) p.observe(0.1);
    expect(p.take()).toBe(AUTO_MAX);
    for (let i = 0; i < 3; i++) p.observe(200);
    expect(p.take()).toBe(1);
    for (let i = 0; i < 20; i++) p.observe(0.1);
    expect(p.take()).toBe(AUTO_MAX);
  });

  it('a fixed prefetch is taken as it is', () => {
    const p = new AutoPrefetch();
    p.observe(0);
    expect(takeSize(1, p)).toBe(1);
    expect(takeSize(10, p)).toBe(10);
    expect(takeSize('auto', p)).toBe(AUTO_MAX);
  });
});
