import { context, propagation, trace, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';

/**
 * OpenTelemetry traces, off by default (docs/decisions/observability.md). A process turns them on
 * with `startTracing(env, service)` before anything else, when OTEL_EXPORTER_OTLP_ENDPOINT is set;
 * only then is the SDK (./sdk) loaded. Off, everything here is a flag test: no span, no context
 * carried, no wrapper around the Postgres client, no log fields. The API (@opentelemetry/api) is
 * the only OpenTelemetry module loaded either way.
 *
 * Context crosses processes in W3C trace context form (`traceparent`, `tracestate`): the outbox
 * effect a command records carries the command's, the dispatcher's relay publishes the effect in
 * a span of its own and puts that one in the BullMQ job's data, and the agent runs the job in a
 * span under it.
 */
export type TraceCarrier = Record<string, string>;

let on = false;
let stop: (() => Promise<void>) | null = null;

export function tracingEnabled(): boolean {
  return on;
}

/** Starts the SDK when the environment asks for it (OTEL_EXPORTER_OTLP_ENDPOINT); a no-op otherwise. */
export function startTracing(env: Record<string, string | undefined>, service: string): boolean {
  if (on || !env.OTEL_EXPORTER_OTLP_ENDPOINT) return on;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('./sdk') as typeof import('./sdk');
  stop = sdk.startSdk(service);
  on = true;
  return true;
}

/** Exports what is buffered and stops (part of a process's shutdown). */
export async function stopTracing(): Promise<void> {
  const s = stop;
  stop = null;
  if (s) await s().catch(() => undefined);
}

const tracer = () => trace.getTracer('svc');

/** Runs `fn` in a new active span (ended when it settles, its error recorded); just `fn` when tracing is off. */
export function withSpan<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => Promise<T> | T, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!on) {
    try {
      return Promise.resolve(fn(undefined));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The active context as a carrier (W3C trace context), or undefined when off or outside any span. */
export function currentTraceCarrier(): TraceCarrier | undefined {
  if (!on || !trace.getActiveSpan()) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** Runs `fn` with the context a carrier names as the active one (the parent of the spans it starts). */
export function withTraceCarrier<T>(carrier: TraceCarrier | undefined, fn: () => T): T {
  if (!on || !carrier) return fn();
  return context.with(propagation.extract(context.active(), carrier), fn);
}

/** Names the active span (an HTTP server span gets its route template) and adds attributes. */
export function describeActiveSpan(name: string, attributes: Attributes = {}): void {
  if (!on) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.updateName(name);
  span.setAttributes(attributes);
}

/** `trace_id` and `span_id` of the active span for a log line, or undefined. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = on ? trace.getActiveSpan() : undefined;
  if (!span) return undefined;
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

export interface ChildSpan {
  /** the span's own context, for what continues from it elsewhere */
  carrier: TraceCarrier;
  end(err?: Error): void;
}

/** A span (not made active) whose parent is the carrier's context; undefined when off. */
export function startChildSpan(name: string, parent: TraceCarrier, attributes: Attributes = {}): ChildSpan | undefined {
  if (!on) return undefined;
  const parentCtx = propagation.extract(context.active(), parent);
  const span = tracer().startSpan(name, { kind: SpanKind.PRODUCER, attributes }, parentCtx);
  const carrier: TraceCarrier = {};
  propagation.inject(trace.setSpan(parentCtx, span), carrier);
  return {
    carrier,
    end(err) {
      if (err) {
        span.recordException(err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      }
      span.end();
    },
  };
}

export { SpanKind };
