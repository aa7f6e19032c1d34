import { MAX_TAKE } from '@svc/core/machine-protocol';
/**
 * How a simulated robot behaves for one process: durations, failures, reviews, progress and
 * log lines, resource metrics and crashes. Configured per process (docs/agent-sim.md); a job's
 * `input_data._sim` or an item's `data._sim` can force the outcome of that one run.
 */

export type Distribution =
  | { dist: 'fixed'; ms: number }
  | { dist: 'uniform'; min_ms: number; max_ms: number }
  | { dist: 'normal'; mean_ms: number; stddev_ms: number }
  | { dist: 'exponential'; mean_ms: number };

export type CrashMode = 'none' | 'job-start' | 'mid-job' | 'mid-item';

export interface Range {
  min: number;
  max: number;
}

export interface Behaviour {
  /** how long a job runs */
  duration: Distribution;
  /** how long one queue item takes inside a consumer job */
  item_duration: Distribution;
  /** probability that a job, or an item, fails with an application exception (retried as usual) */
  failure_rate: number;
  /**
   * probability that a job, or an item, fails with a business exception (the data is wrong: the
   * platform never retries it); drawn on the same draw as failure_rate, right after it (drawEnd)
   */
  business_failure_rate: number;
  /** probability that an item asks for human review */
  review_rate: number;
  /** progress updates over a job's duration */
  progress_steps: number;
  /** log lines written over a job's duration */
  log_lines: number;
  /**
   * items a consumer holds at once (the hand-off buffer): a fixed 1..100 (1 = strictly one at a
   * time), or 'auto' — one at a time for items of 10 ms or more, up to 4 for faster ones (see
   * prefetch.ts)
   */
  prefetch: number | 'auto';
  metrics: { cpu_percent: Range; ram_mb: Range; disk_read_mb: Range; disk_write_mb: Range };
  /** crash the whole agent process (SIGKILL itself): for fault tests */
  crash: CrashMode;
  /** with crash mid-item: after this many items processed by the agent process */
  crash_after_items: number;
  /** message of a simulated application failure (a business one says BUSINESS_FAILURE_MESSAGE) */
  failure_message: string;
  /** merged into every job's output_data */
  output: Record<string, unknown>;
  /**
   * probability that a job (not a queue consumer) asks a person for input halfway through and
   * waits for the answer, which it puts in output_data.input_value (docs/decisions/human-input.md)
   */
  input_rate: number;
  /** what it asks */
  input_prompt: string;
  /** `{"choices": [...]}` or `{"schema": {...}}` */
  input_options: Record<string, unknown>;
}

export const DEFAULT_BEHAVIOUR: Behaviour = {
  duration: { dist: 'uniform', min_ms: 500, max_ms: 2000 },
  item_duration: { dist: 'uniform', min_ms: 5, max_ms: 30 },
  failure_rate: 0,
  business_failure_rate: 0,
  review_rate: 0,
  progress_steps: 4,
  log_lines: 3,
  prefetch: 'auto',
  metrics: {
    cpu_percent: { min: 5, max: 60 },
    ram_mb: { min: 80, max: 400 },
    disk_read_mb: { min: 0, max: 20 },
    disk_write_mb: { min: 0, max: 10 },
  },
  crash: 'none',
  crash_after_items: 0,
  failure_message: 'Error simulado del robot',
  output: {},
  input_rate: 0,
  input_prompt: '¿Continuar con el proceso?',
  input_options: { choices: ['continuar', 'cancelar'] },
};

/**
 * The error_message of a simulated business failure: fixed, and unlike --failure-message's, so that
 * a person tells the two kinds apart in the console at a glance (a directive's error_message wins).
 */
export const BUSINESS_FAILURE_MESSAGE = 'Error de negocio simulado: los datos no son válidos';

/** How a simulated job or item ends: failed (with the kind of its exception), sent to review, or completed. */
export type DrawnEnd = 'application' | 'business' | 'review' | 'completed';

/**
 * How a job (`withReview` false) or an item ends, from one draw `r` in [0, 1): the bands are laid
 * end to end from 0, failure_rate (an application failure) first, then business_failure_rate (a
 * business failure), then, for an item, review_rate; what is left completes. One draw whatever the
 * rates, in the place the failure was always drawn: with business_failure_rate 0 every seed draws
 * and decides exactly what it did before the setting existed. Bands adding up to more than 1 leave
 * the later ones only what is left (failure_rate 0.8 with business_failure_rate 0.5: 0.2 business).
 * The Python simulator decides alike (svc_agent/sim/behaviour.py, draw_end).
 */
export function drawEnd(b: Pick<Behaviour, 'failure_rate' | 'business_failure_rate' | 'review_rate'>, r: number, withReview: boolean): DrawnEnd {
  if (r < b.failure_rate) return 'application';
  if (r < b.failure_rate + b.business_failure_rate) return 'business';
  if (withReview && r < b.failure_rate + b.business_failure_rate + b.review_rate) return 'review';
  return 'completed';
}

/** The kind of a failure forced by a directive (`_sim.exception: "business"`; anything else is application). */
export function forcedException(d: SimDirective): 'business' | 'application' {
  return d.exception === 'business' ? 'business' : 'application';
}

/** "250ms", "2s", "1.5s", "100-500ms", "1s-3s" → a distribution; objects pass through. */
export function parseDistribution(input: unknown): Distribution {
  if (typeof input === 'number') return { dist: 'fixed', ms: input };
  if (typeof input === 'string') {
    const ms = (s: string): number => {
      const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(s);
      if (!m) throw new Error(`not a duration: "${s}" (use 250ms, 2s, 1m or a range like 100-500ms)`);
      const n = Number(m[1]);
      return m[2] === 's' ? n * 1000 : m[2] === 'm' ? n * 60_000 : n;
    };
    const range = /^(.+?)-(.+)$/.exec(input);
    if (range) {
      const unit = /(ms|s|m)\s*$/.exec(range[2]!)?.[1] ?? 'ms';
      const lo = /(ms|s|m)\s*$/.test(range[1]!) ? range[1]! : range[1]! + unit;
      return { dist: 'uniform', min_ms: ms(lo), max_ms: ms(range[2]!) };
    }
    return { dist: 'fixed', ms: ms(input) };
  }
  if (input && typeof input === 'object' && 'dist' in input) {
    const d = input as Distribution;
    if (['fixed', 'uniform', 'normal', 'exponential'].includes(d.dist)) return d;
  }
  throw new Error(`not a duration distribution: ${JSON.stringify(input)}`);
}

/** A small seeded generator (mulberry32), so a run can be repeated with --seed. */
export function createRandom(seed?: number): () => number {
  if (seed === undefined) return Math.random;
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sample(d: Distribution, random: () => number): number {
  switch (d.dist) {
    case 'fixed':
      return Math.max(0, d.ms);
    case 'uniform':
      return Math.max(0, d.min_ms + random() * (d.max_ms - d.min_ms));
    case 'normal': {
      const u = Math.max(random(), 1e-12);
      const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
      return Math.max(0, d.mean_ms + z * d.stddev_ms);
    }
    case 'exponential':
      return -Math.log(Math.max(random(), 1e-12)) * d.mean_ms;
  }
}

export function between(r: Range, random: () => number): number {
  return r.min + random() * (r.max - r.min);
}

/** One run's simulated resource use, drawn once so its metrics stay consistent while it runs. */
export interface MetricsProfile {
  cpuAvg: number;
  cpuPeak: number;
  ramAvg: number;
  ramPeak: number;
  diskReadMb: number;
  diskWriteMb: number;
}

export function metricsProfile(b: Behaviour, random: () => number): MetricsProfile {
  const cpuAvg = between(b.metrics.cpu_percent, random);
  const ramAvg = between(b.metrics.ram_mb, random);
  return {
    cpuAvg,
    cpuPeak: Math.min(100, cpuAvg * (1 + random() * 0.6)),
    ramAvg,
    ramPeak: ramAvg * (1 + random() * 0.3),
    diskReadMb: between(b.metrics.disk_read_mb, random),
    diskWriteMb: between(b.metrics.disk_write_mb, random),
  };
}

/**
 * The contract's ResourceMetrics after `elapsedMs` of a run whose whole expected length is
 * `totalMs` (disk volumes grow with progress; one sample per second).
 */
export function metricsAt(p: MetricsProfile, elapsedMs: number, totalMs = elapsedMs) {
  const round = (n: number) => Math.round(n * 100) / 100;
  const share = totalMs > 0 ? Math.min(1, elapsedMs / totalMs) : 1;
  return {
    cpu_percent_avg: round(p.cpuAvg),
    cpu_percent_peak: round(p.cpuPeak),
    ram_mb_avg: round(p.ramAvg),
    ram_mb_peak: round(p.ramPeak),
    disk_read_mb: round(p.diskReadMb * share),
    disk_write_mb: round(p.diskWriteMb * share),
    sample_count: Math.max(1, Math.round(elapsedMs / 1000)),
    duration_seconds: round(elapsedMs / 1000),
  };
}

/** The contract's ResourceMetrics for a whole run of `durationMs`, simulated. */
export function simulateMetrics(b: Behaviour, durationMs: number, random: () => number) {
  return metricsAt(metricsProfile(b, random), durationMs);
}

/** Per-run directive (`input_data._sim` / `data._sim`), for tests and demos. */
export interface SimDirective {
  outcome?: 'complete' | 'fail' | 'review';
  /** with outcome fail: the kind of the failure (`business`; anything else is an application one) */
  exception?: string;
  duration_ms?: number;
  error_message?: string;
  crash?: boolean;
  /** on its first try (retry_count 0) the robot gets stuck, silent, until its run is taken away */
  stall?: boolean;
  output?: Record<string, unknown>;
  /** ask a person for input (true: the behaviour's question) whatever input_rate says */
  input?: boolean | { prompt?: string; options?: Record<string, unknown> };
}

export function directiveOf(payload: Record<string, unknown> | null | undefined): SimDirective {
  const raw = payload && typeof payload === 'object' ? (payload as { _sim?: unknown })._sim : undefined;
  return raw && typeof raw === 'object' ? (raw as SimDirective) : {};
}

/** Defaults ← file defaults ← process entry, each a partial behaviour (durations parsed). */
export function mergeBehaviour(base: Behaviour, patch: Record<string, unknown> | undefined): Behaviour {
  if (!patch) return base;
  if (typeof patch !== 'object' || Array.isArray(patch)) throw new Error(`a behaviour must be an object, not ${JSON.stringify(patch)}`);
  const out: Behaviour = { ...base, metrics: { ...base.metrics } };
  for (const [k, v] of Object.entries(patch)) {
    switch (k) {
      case 'duration':
      case 'item_duration':
        out[k] = parseDistribution(v);
        break;
      case 'failure_rate':
      case 'business_failure_rate':
      case 'review_rate':
      case 'input_rate':
        out[k] = probability(k, v);
        break;
      case 'progress_steps':
      case 'log_lines':
      case 'crash_after_items':
        out[k] = nonNegativeInt(k, v);
        break;
      case 'prefetch':
        out.prefetch = prefetchSetting(v);
        break;
      case 'crash':
        if (!['none', 'job-start', 'mid-job', 'mid-item'].includes(String(v))) throw new Error(`crash must be none, job-start, mid-job or mid-item`);
        out.crash = v as CrashMode;
        break;
      case 'failure_message':
        out.failure_message = String(v);
        break;
      case 'output':
        if (v !== null && v !== undefined && (typeof v !== 'object' || Array.isArray(v))) throw new Error('output must be an object');
        out.output = (v ?? {}) as Record<string, unknown>;
        break;
      case 'input_prompt':
        out.input_prompt = String(v);
        break;
      case 'input_options':
        if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('input_options must be {"choices": [...]} or {"schema": {...}}');
        out.input_options = v as Record<string, unknown>;
        break;
      case 'metrics':
        if (v !== null && v !== undefined && (typeof v !== 'object' || Array.isArray(v))) throw new Error('metrics must be an object of ranges');
        for (const [mk, mv] of Object.entries((v ?? {}) as Record<string, unknown>)) {
          if (!(mk in out.metrics)) throw new Error(`unknown metric ${mk}`);
          const pair: unknown[] = Array.isArray(mv) ? mv : [mv, mv];
          if (pair.length !== 2 || !pair.every((x) => typeof x === 'number' && Number.isFinite(x))) throw new Error(`metrics.${mk} must be a number or [min, max]`);
          out.metrics[mk as keyof Behaviour['metrics']] = { min: pair[0] as number, max: pair[1] as number };
        }
        break;
      default:
        throw new Error(`unknown behaviour setting "${k}"`);
    }
  }
  return out;
}

/**
 * A number as both simulators read one: a JSON number, or text that is a plain decimal number
 * (whatever Number() would make of '', '0x1', null, [] or true, and float() of '1_0'); NaN else.
 * ASCII digits and blanks only: the two languages' \d and \s differ beyond them.
 */
const DECIMAL = /^[ \t\r\n]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\r\n]*$/;
function strictNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  return typeof v === 'string' && DECIMAL.test(v) ? Number(v) : NaN;
}

function probability(name: string, v: unknown): number {
  const n = strictNumber(v);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error(`${name} must be between 0 and 1`);
  return n;
}

function prefetchSetting(v: unknown): number | 'auto' {
  if (v === 'auto') return 'auto';
  const n = typeof v === 'boolean' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_TAKE) throw new Error(`prefetch must be auto or an integer from 1 to ${MAX_TAKE}`);
  return n;
}

function nonNegativeInt(name: string, v: unknown): number {
  const n = typeof v === 'boolean' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}
