import { DbOutage, type Logger } from '@svc/core';
import { RunLife } from '../src/run-life';

/** When the agent keeps renewing a run's lease (pure logic; the lease at work: apps/dispatcher/test/fault-stalled-run.test.ts). */
const quiet = { warn: () => undefined, info: () => undefined } as unknown as Logger;
const STALL_MS = 1000;

function life(): RunLife {
  return new RunLife(STALL_MS, new DbOutage(quiet), new AbortController().signal);
}

/*
 * RunLife reads Date.now(): the tests hold that clock still (timers stay real), so the margins
 * below are exact however long a loaded host takes between two lines.
 */
const T = Date.UTC(2030, 0, 1);
beforeEach(() => {
  jest.useFakeTimers({
    now: T,
    doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'],
  });
});
afterEach(() => jest.useRealTimers());

describe('RunLife', () => {
  it('a run is alive while signs come, and not once they stop for the stall time', () => {
    const l = life();
    expect(l.alive(T + STALL_MS - 50)).toBe(true);
    expect(l.alive(T + STALL_MS + 50)).toBe(false);
    jest.setSystemTime(T + 5 * STALL_MS);
    expect(l.alive()).toBe(false);
    l.sign();
    expect(l.alive(T + 6 * STALL_MS - 50)).toBe(true);
    expect(l.alive(T + 6 * STALL_MS + 50)).toBe(false);
  });

  it('a database call that never answers stops the renewals; one that fails fast while Postgres is away does not', async () => {
    const hung = life();
    void hung.db('a call that hangs', () => new Promise(() => undefined));
    expect(hung.alive(T + STALL_MS / 2)).toBe(true);
    expect(hung.alive(T + STALL_MS + 50)).toBe(false);

    const waiting = life();
    let calls = 0;
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    // looked at between attempts, when the retry has just decided to wait for Postgres
    const betweenAttempts: boolean[] = [];
    const answered = waiting.db('a call during an outage', async () => {
      if (++calls < 3) throw refused;
      return 'answered';
    }, () => betweenAttempts.push(waiting.alive(T + 10 * STALL_MS)));
    expect(await answered).toBe('answered');
    expect(calls).toBe(3);
    // between attempts it waits for Postgres: alive, however long the outage lasts
    expect(betweenAttempts).toEqual([true, true]);
    // answered: a sign of life, and the usual stall time again
    expect(waiting.alive(T + STALL_MS - 50)).toBe(true);
    expect(waiting.alive(T + 10 * STALL_MS)).toBe(false);
  });
});
