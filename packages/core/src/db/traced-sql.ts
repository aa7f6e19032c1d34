import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Sql } from './sql';

/** How much of a statement's text a span keeps. */
const STATEMENT_CHARS = 2000;

type Thenable = { then: (f?: (v: unknown) => unknown, r?: (e: unknown) => unknown) => Promise<unknown> };

/**
 * postgres.js has no OpenTelemetry instrumentation: with tracing on (only then: createSql
 * applies this when `tracingEnabled()`), each statement run through `sql` or a transaction's
 * `tx` gets a client span, child of the context that awaited it, from when it is awaited to its
 * answer. A query is lazy in postgres.js (it runs when awaited), so a fragment that is only
 * interpolated into another statement, and never awaited, gets no span of its own.
 */
export function withTracedStatements<T extends Sql>(sql: T): T {
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const q = Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args);
      const strings = args[0] as TemplateStringsArray | undefined;
      if (!Array.isArray(strings) || !('raw' in strings)) return q;
      return traced(q as Thenable, strings);
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'begin' && typeof value === 'function') {
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const body = args[last] as (tx: Sql) => unknown;
          args[last] = (tx: Sql) => body(withTracedStatements(tx));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function traced<Q extends Thenable>(q: Q, strings: TemplateStringsArray): Q {
  const then = q.then;
  let started = false;
  q.then = function (this: Q, onFulfilled, onRejected) {
    if (!started) {
      started = true;
      const text = strings.reduce((acc, s, i) => (i === 0 ? s : `${acc}$${i}${s}`), '').replace(/\s+/g, ' ').trim();
      const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'statement';
      const span = trace.getTracer('svc').startSpan(`pg ${verb}`, {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'postgresql', 'db.statement': text.slice(0, STATEMENT_CHARS) },
      }, context.active());
      then.call(this,
        () => span.end(),
        (err: unknown) => {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
          span.end();
        });
    }
    return then.call(this, onFulfilled, onRejected);
  } as Q['then'];
  return q;
}
