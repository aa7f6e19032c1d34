import { DbOutage, type Logger } from '@svc/core';
import { RunLife } from '../src/run-life';

/** When the agent keeps renewing a run's lease (pure logic; the lease at work: apps/dispatcher/test/fault-stalled-run.test.ts). */
const quiet = { warn: () => undefined, info: () => undefined } as unknown as Logger;
const STALL_MS = 1000;

function life(): RunLife {
  return new RunLife(STALL_MS, new DbOutage(quiet), new AbortController().signal);
}

describe('RunLife', () => {
  it('a run is alive while signs come, and not once they stop for the stall time', () => {
    const l = life();
    const t = Date.now();
    expect(l.alive(t + STALL_MS - 50)).toBe(true);
    expect(l.alive(t + STALL_MS + 50)).toBe(false);
    l.sign();
    expect(l.alive(Date.now() + STALL_MS - 50)).toBe(true);
  });

  it('a database call that never answers stops the renewals; one that fails fast while Postgres is away does not', async () => {
    const hung = life();
    void hung.db('a call that hangs', () => new Promise(() => undefined));
    expect(hung.alive(Date.now() + STALL_MS / 2)).toBe(true);
    expect(hung.alive(Date.now() + STALL_MS + 50)).toBe(false);

    const waiting = life();
    let calls = 0;
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const answered = waiting.db('a call during an outage', async () => {
      if (++calls < 3) throw refused;
      return 'answered';
    });
    await new Promise((r) => setTimeout(r, 50));
    // between attempts it waits for Postgres: alive, however long the outage lasts
    expect(waiting.alive(Date.now() + 10 * STALL_MS)).toBe(true);
    expect(await answered).toBe('answered');
    expect(calls).toBe(3);
  });
});
