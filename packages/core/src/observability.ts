/**
 * `@svc/core/observability`: Prometheus metrics and OpenTelemetry traces of every process
 * (docs/decisions/observability.md). Traces are off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
 */
export {
  renderMetrics, observeHttpRequest, rateLimitRejections, apiKeyCacheLookups, UNMATCHED_ROUTE,
  startMetricsServer, metricsAuthorized, dispatcherPassSeconds, dispatcherPassesStarted, countAgentCut, trackAgentHub,
} from './metrics';
export type { AgentCutReason } from './metrics';
export {
  startTracing, stopTracing, tracingEnabled, withSpan, withTraceCarrier, currentTraceCarrier, describeActiveSpan, SpanKind,
} from './tracing';
