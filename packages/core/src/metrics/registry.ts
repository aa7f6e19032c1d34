import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from 'prom-client';

/**
 * The process's one Prometheus registry (prom-client). Metrics are declared at module scope next
 * to the code whose events they count, through the helpers below, so a module loaded twice (jest
 * isolates modules per file) gets the metric already registered instead of a duplicate-name error.
 * Counters and histograms move in process, as the work happens; gauges of the platform's state
 * are read from Postgres on scrape (metrics/platform.ts). Every name starts with `svc_`.
 */
export const metricsRegistry = new Registry();

let defaultsOn = false;

/** Node's default process metrics (CPU, memory, event-loop lag, GC), registered once on first scrape. */
function ensureDefaultMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

export function counter<L extends string = never>(config: CounterConfiguration<L>): Counter<L> {
  return (metricsRegistry.getSingleMetric(config.name) as Counter<L> | undefined) ?? new Counter({ ...config, registers: [metricsRegistry] });
}

export function histogram<L extends string = never>(config: HistogramConfiguration<L>): Histogram<L> {
  return (metricsRegistry.getSingleMetric(config.name) as Histogram<L> | undefined) ?? new Histogram({ ...config, registers: [metricsRegistry] });
}

export function gauge<L extends string = never>(config: GaugeConfiguration<L>): Gauge<L> {
  return (metricsRegistry.getSingleMetric(config.name) as Gauge<L> | undefined) ?? new Gauge({ ...config, registers: [metricsRegistry] });
}

/** The exposition (Prometheus text format) and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  ensureDefaultMetrics();
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}

/** Buckets (seconds) for things that take from milliseconds to minutes: jobs, items, latencies. */
export const WORK_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
/** Buckets (seconds) for an HTTP request or a periodic pass. */
export const FAST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
