import type { Logger } from './logger';

/** The part of `process` the shutdown handling uses (a test passes its own). */
export interface SignalTarget {
  on(signal: 'SIGTERM' | 'SIGINT', listener: () => void): unknown;
  exit(code: number): void;
}

/**
 * Graceful stop of a long-running process (API, dispatcher, agent-sim). The first SIGTERM or
 * SIGINT drains: `drain` stops taking work, lets what runs finish and closes connections, then
 * the process exits 0. A second signal while draining exits 1 at once, so an operator (Ctrl-C
 * twice) or an orchestrator is never stuck behind a drain that hangs. A drain that fails exits 1.
 */
export function onShutdownSignals(logger: Logger, drain: () => Promise<void>, target: SignalTarget = process): void {
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) {
      logger.warn('second signal: exiting now', { signal });
      target.exit(1);
      return;
    }
    stopping = true;
    logger.info('draining', { signal });
    try {
      await drain();
    } catch (err) {
      logger.error('drain failed: exiting', { signal, err: err instanceof Error ? err.message : String(err) });
      target.exit(1);
      return;
    }
    logger.info('stopped');
    target.exit(0);
  };
  target.on('SIGTERM', () => void shutdown('SIGTERM'));
  target.on('SIGINT', () => void shutdown('SIGINT'));
}
