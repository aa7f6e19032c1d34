import { EventEmitter } from 'node:events';
import { createLogger, onShutdownSignals } from '@svc/core';
import { type SignalTarget } from '@svc/core/internals';

/**
 * The signal handling the API, the dispatcher and agent-sim share: the first SIGTERM/SIGINT
 * drains then exits 0, a second one exits 1 at once, a failed drain exits 1. A stand-in for
 * `process` records the exits (the real processes are signalled in apps/dispatcher/test).
 */
function fakeProcess() {
  const emitter = new EventEmitter();
  const exits: number[] = [];
  const target: SignalTarget = {
    on: (signal, listener) => emitter.on(signal, listener),
    exit: (code) => void exits.push(code),
  };
  return { target, exits, signal: (s: 'SIGTERM' | 'SIGINT') => emitter.emit(s) };
}

const logger = createLogger({ service: 'test', silent: true });
const tick = () => new Promise((r) => setImmediate(r));

describe('onShutdownSignals', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('on %s drains once, then exits 0', async (signal) => {
    const p = fakeProcess();
    let finish!: () => void;
    let drains = 0;
    onShutdownSignals(logger, () => {
      drains += 1;
      return new Promise<void>((r) => (finish = r));
    }, p.target);
    p.signal(signal);
    await tick();
    expect({ drains, exits: p.exits }).toEqual({ drains: 1, exits: [] });
    finish();
    await tick();
    expect({ drains, exits: p.exits }).toEqual({ drains: 1, exits: [0] });
  });

  it('exits 1 at once on a second signal while draining, without draining again', async () => {
    const p = fakeProcess();
    let drains = 0;
    onShutdownSignals(logger, async () => {
      drains += 1;
      await new Promise<void>(() => undefined); // a drain that hangs
    }, p.target);
    p.signal('SIGTERM');
    await tick();
    p.signal('SIGINT');
    await tick();
    expect({ drains, exits: p.exits }).toEqual({ drains: 1, exits: [1] });
  });

  it('exits 1 when the drain fails', async () => {
    const p = fakeProcess();
    onShutdownSignals(logger, async () => {
      throw new Error('pool already closed');
    }, p.target);
    p.signal('SIGTERM');
    await tick();
    expect(p.exits).toEqual([1]);
  });
});
