import type { Queryable, Sql } from './sql';

/** Only the pool batches: a transaction's statements must stay on it, in order. */
export function isPool(sql: Queryable): sql is Sql {
  return typeof (sql as Sql).begin === 'function';
}

/**
 * Fuses concurrent calls into one statement (the same idea as a DataLoader, without a cache), or
 * one Redis script (the API's rate-limit counts).
 *
 * Calls made in the same turn of the event loop join one batch (sent from `setImmediate`); while
 * `maxInFlight` batches are running, new calls wait and leave together as the next batch. On an
 * idle process a call thus goes out alone, at once; under load, many calls share one round trip,
 * one parse and one commit. Every call still gets its own result — or its own error: when
 * Postgres refuses a batch statement (nothing of it was written), each of its calls is run again
 * alone through `runOne`, so one bad input fails only its own caller, with the error it would
 * have had without batching. Any other failure (a lost connection: the outcome is unknown) is
 * every caller's error, never retried.
 */
export interface BatcherOptions<I, O> {
  /** Runs many inputs as one; resolves one output per input, in the same order. */
  runBatch(inputs: I[]): Promise<O[]>;
  /** Runs one input alone (after a failed batch). */
  runOne(input: I): Promise<O>;
  maxBatch?: number;
  maxInFlight?: number;
}

interface Pending<I, O> {
  input: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

export class Batcher<I, O> {
  private pending: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: BatcherOptions<I, O>) {
    this.maxBatch = options.maxBatch ?? 100;
    this.maxInFlight = options.maxInFlight ?? 4;
  }

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
        void this.flush(this.pending.splice(0, this.maxBatch));
      }
    });
  }

  private async flush(batch: Pending<I, O>[]): Promise<void> {
    this.inFlight++;
    try {
      let outputs: O[];
      try {
        outputs = await this.options.runBatch(batch.map((p) => p.input));
      } catch (err) {
        if (refusedBeforeWriting(err)) {
          await Promise.all(batch.map((p) => this.options.runOne(p.input).then(p.resolve, p.reject)));
        } else {
          for (const p of batch) p.reject(err);
        }
        return;
      }
      if (outputs.length !== batch.length) {
        const err = new Error(`batch returned ${outputs.length} results for ${batch.length} inputs`);
        for (const p of batch) p.reject(err);
        return;
      }
      batch.forEach((p, i) => p.resolve(outputs[i]!));
    } finally {
      this.inFlight--;
      this.schedule();
    }
  }
}

/**
 * Postgres answered the statement with an error (so a single statement wrote nothing), or the
 * client failed before sending it (e.g. JSON too deep to serialise).
 */
function refusedBeforeWriting(err: unknown): boolean {
  if (err instanceof RangeError || err instanceof TypeError) return true;
  const e = err as { name?: string; code?: unknown };
  return e?.name === 'PostgresError' && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code);
}
