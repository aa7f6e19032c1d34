import { createDeliveryGovernor, pauseAfter, readCpu, type CpuReading } from '../src/delivery-governor';

/**
 * The delivery thread's hold on its CPU share while the rest of the host is busy
 * (docs/decisions/events.md, "Delivery yields to the work"): pure arithmetic over two readings,
 * and the pace built on it with readings given by the test.
 */
const at = (ms: number, hostBusyMs: number, ownMs: number): CpuReading => ({ at: ms, hostBusyMs, ownMs });

describe('pauseAfter', () => {
  it('does not pause on a quiet host, however much the thread took', () => {
    // two cores; the thread took a whole core for a second, the others half a core
    expect(pauseAfter(at(0, 0, 0), at(1000, 1500, 1000), 0.1, 2)).toBe(0);
    // exactly half the cores busy with others is still quiet
    expect(pauseAfter(at(0, 0, 0), at(1000, 2000, 1000), 0.1, 2)).toBe(0);
  });

  it('on a busy host, pauses until the thread is down to its share of one core', () => {
    // others took 1.5 of 2 cores for 500 ms; the thread 250 ms: 250 / 0.1 = 2,500 ms in all
    expect(pauseAfter(at(0, 0, 0), at(500, 1000, 250), 0.1, 2)).toBe(2000);
    // within its share: no pause
    expect(pauseAfter(at(0, 0, 0), at(500, 800, 40), 0.1, 2)).toBe(0);
    // a larger share, a shorter pause
    expect(pauseAfter(at(0, 0, 0), at(500, 1000, 250), 0.25, 2)).toBe(500);
  });

  it('pauses ten seconds at most, never with a share of a whole core, and ignores readings that do not advance', () => {
    expect(pauseAfter(at(0, 0, 0), at(500, 1500, 500), 0.01, 2)).toBe(10_000);
    expect(pauseAfter(at(0, 0, 0), at(500, 1000, 250), 1, 2)).toBe(0);
    expect(pauseAfter(at(500, 0, 0), at(500, 1000, 250), 0.1, 2)).toBe(0);
    // a thread clock that went backwards counts as nothing taken
    expect(pauseAfter(at(0, 0, 300), at(500, 1000, 250), 0.1, 2)).toBe(0);
  });
});

describe('createDeliveryGovernor', () => {
  it('reads at most ten times a second and waits out the pause it computes', async () => {
    const start = Date.now();
    const readings = [at(start - 600, 0, 0), at(start, 1100, 30)];
    let reads = 0;
    // then the clock's own time, the counters still: a new window starts after the pause
    const read = () => readings[reads++] ?? at(Date.now(), 1100, 30);
    // others: (1100 - 30) / 600 ms = 1.8 cores of 2; the thread took 30 ms: 30 / 0.04 - 600 = 150 ms
    const { pace } = createDeliveryGovernor(0.04, 60_000, read, 2);
    const t0 = Date.now();
    await pace(Date.now());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(reads).toBe(3); // the first reading, the window's end, and a new start after the pause
    // within the same tenth of a second: nothing read, no wait
    await pace(Date.now());
    expect(reads).toBe(3);
  });

  it('release ends a pause under way at once, and no later call pauses', async () => {
    let reads = 0;
    // a busy host and a thread far over its share: the longest pause every window
    const read = () => {
      reads++;
      return at(Date.now() - (reads === 1 ? 1000 : 0), reads === 1 ? 0 : 3000, reads === 1 ? 0 : 1000);
    };
    const governor = createDeliveryGovernor(0.01, 60_000, read, 2);
    const t0 = Date.now();
    const paused = governor.pace(Date.now());
    setTimeout(() => governor.release(), 50);
    await paused;
    expect(Date.now() - t0).toBeLessThan(2000);
    await governor.pace(Date.now());
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('turns running side by side share one pause: one window is read for them all, and release ends it for every one', async () => {
    let reads = 0;
    // a busy host and a thread far over its share: the longest pause (10 s)
    const read = () => {
      reads++;
      return at(Date.now() - (reads === 1 ? 1000 : 0), reads === 1 ? 0 : 3000, reads === 1 ? 0 : 1000);
    };
    const governor = createDeliveryGovernor(0.01, 60_000, read, 2);
    const first = governor.pace(Date.now());
    const others = [governor.pace(Date.now()), governor.pace(Date.now())];
    // the others wait in the first one's pause instead of reading and pausing on their own
    expect(reads).toBe(2);
    governor.release();
    await Promise.all([first, ...others]);
    // and a new window starts after the pause, once
    expect(reads).toBe(3);
  });

  it('is a no-op without /proc readings or with a share of a whole core', async () => {
    let reads = 0;
    const none = createDeliveryGovernor(0.1, 60_000, () => { reads++; return null; }, 2).pace;
    await none(Date.now());
    await none(Date.now());
    expect(reads).toBe(1);
    const whole = createDeliveryGovernor(1, 60_000, () => { reads++; return at(0, 0, 0); }, 2).pace;
    await whole(Date.now());
    expect(reads).toBe(2);
  });

  it('never holds back an event that has waited longer than the bound, and starts a new window after one', async () => {
    // a busy host and a thread far over its share: every window would call for the longest pause
    let clock = 0;
    let reads = 0;
    const read = () => {
      reads++;
      clock += 1000;
      return at(Date.now() - 10_000 + clock, clock * 3, clock);
    };
    const { pace } = createDeliveryGovernor(0.01, 30_000, read, 2);
    const t0 = Date.now();
    await pace(Date.now() - 31_000);
    await pace(Date.now() - 45_000);
    expect(Date.now() - t0).toBeLessThan(100);
    expect(reads).toBe(1); // only the first reading: events past the bound do not read
    // back within the bound: a fresh reading starts the next window, no pause for the spurt
    await pace(Date.now());
    expect(reads).toBe(2);
    expect(Date.now() - t0).toBeLessThan(100);
  });

  it('reads this host: busy time and the thread\'s own time advance with work', () => {
    const before = readCpu();
    if (process.platform !== 'linux') {
      expect(before).toBeNull();
      return;
    }
    let x = 0;
    const until = Date.now() + 120;
    while (Date.now() < until) x++;
    const after = readCpu()!;
    expect(x).toBeGreaterThan(0);
    expect(after.ownMs - before!.ownMs).toBeGreaterThanOrEqual(50);
    expect(after.hostBusyMs - before!.hostBusyMs).toBeGreaterThanOrEqual(after.ownMs - before!.ownMs - 20);
  });
});
