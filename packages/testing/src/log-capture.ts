import Transport from 'winston-transport';
import type { Logger } from '@svc/core';

export interface CapturedLog {
  /** What was logged at the captured level or above, oldest first (winston's info objects). */
  entries: Array<Record<string, unknown>>;
  /** Stops capturing. */
  stop(): void;
}

/**
 * Records what `logger` and its children log at `level` or above — e.g. to assert that hostile
 * requests never log at error level (every 500 logs its stack there).
 */
export function captureLog(logger: Logger, level = 'error'): CapturedLog {
  const entries: Array<Record<string, unknown>> = [];
  const transport = new (class extends Transport {
    override log(info: Record<string, unknown>, callback: () => void): void {
      entries.push(info);
      callback();
    }
  })({ level });
  logger.add(transport);
  return { entries, stop: () => void logger.remove(transport) };
}
