import { writeSync } from 'node:fs';
import winston from 'winston';
import Transport from 'winston-transport';
import { activeTraceIds, tracingEnabled } from './tracing';

export type Logger = winston.Logger;

const MESSAGE = Symbol.for('message');

/** Flush at once past this many buffered bytes, whatever the turn of the event loop. */
const FLUSH_BYTES = 64 * 1024;

/**
 * JSON lines to standard output, written once per turn of the event loop instead of once per
 * line: the API logs every request, and on a busy host a write per line cost more CPU than the
 * rest of the line's work (BENCHMARKS.md, B1). Lines keep their order, are written before the
 * next I/O wait, and what is buffered when the process exits (normally, through process.exit, or
 * on an uncaught exception) is written synchronously then: nothing logged is lost.
 */
export class BufferedStdoutTransport extends Transport {
  private lines: string[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(private readonly fd = 1) {
    super();
    if (live.size === 0) process.on('exit', flushAll);
    live.add(this);
  }

  override log(info: Record<string | symbol, unknown>, callback: () => void): void {
    const line = `${info[MESSAGE] as string}\n`;
    this.lines.push(line);
    this.bytes += line.length;
    if (this.bytes >= FLUSH_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    callback();
  }

  /** Writes what is buffered, synchronously (the same as a console write to a file or pipe). */
  flush(): void {
    this.scheduled = false;
    if (this.lines.length === 0) return;
    const chunk = Buffer.from(this.lines.join(''));
    this.lines = [];
    this.bytes = 0;
    let off = 0;
    while (off < chunk.length) {
      try {
        off += writeSync(this.fd, chunk, off);
      } catch (err) {
        // a non-blocking pipe that is full: wait for the reader rather than drop lines
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      }
    }
  }

  override close(): void {
    this.flush();
    live.delete(this);
    if (live.size === 0) process.off('exit', flushAll);
  }
}

/** One exit listener for every transport of the process (tests create many loggers). */
const live = new Set<BufferedStdoutTransport>();
function flushAll(): void {
  for (const t of live) t.flush();
}

/**
 * A line as JSON: plain JSON.stringify (insertion order, far cheaper than winston's `json()` with
 * its key sorting, which was a measurable share of a busy API's work: BENCHMARKS.md, B1), and
 * winston's own for what plain JSON cannot write (BigInt, cycles).
 */
const careful = winston.format.json();
const fastJson = winston.format((info) => {
  try {
    (info as Record<symbol, unknown>)[MESSAGE] = JSON.stringify(info);
    return info;
  } catch {
    return careful.transform(info, careful.options) as typeof info;
  }
});

/** With tracing on: the active span's `trace_id` and `span_id` on every line logged inside one. */
const traceFields = winston.format((info) => {
  const ids = activeTraceIds();
  if (ids) Object.assign(info, ids);
  return info;
});

/** Structured JSON logs; children carry `request_id`, `service`, … on every line. */
export function createLogger(options: { level?: string; service: string; silent?: boolean }): Logger {
  return winston.createLogger({
    level: options.level ?? 'info',
    silent: options.silent ?? false,
    defaultMeta: { service: options.service },
    format: tracingEnabled()
      ? winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), traceFields(), fastJson())
      : winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), fastJson()),
    transports: [new BufferedStdoutTransport()],
  });
}
