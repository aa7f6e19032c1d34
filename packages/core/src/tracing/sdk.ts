import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';

/**
 * The OpenTelemetry SDK, loaded only by `startTracing` (tracing/index.ts). Spans go in batches
 * to the OTLP/HTTP endpoint of OTEL_EXPORTER_OTLP_ENDPOINT (JSON; the exporter reads the
 * standard OTEL_EXPORTER_OTLP_* and OTEL_BSP_* variables itself); the W3C trace context
 * propagator and an AsyncLocalStorage context manager are registered with the provider. Node's
 * http server and client are instrumented (the API's request spans); Postgres statements are
 * spanned by core's own wrapper (db/traced-sql.ts), BullMQ jobs by the dispatch code.
 */
export function startSdk(service: string): () => Promise<void> {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // the exporter's own requests would trace themselves
        ignoreOutgoingRequestHook: () => true,
        ignoreIncomingRequestHook: (req) => req.url === '/metrics' || req.url === '/health',
      }),
    ],
  });
  // servers made after this point are traced; modules that already hold `http` share its exports,
  // which the instrumentation patches when it is required again
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('node:http');
  return () => provider.shutdown();
}
