/**
 * Optional tracing. The SDK does not import OpenTelemetry: pass a Tracer from `@opentelemetry/api`
 * (`trace.getTracer('my-agent')`) as the client's `tracer`, and every claim, run and file call
 * becomes a span (errors recorded, status set); pass `propagator` too (for example
 * `propagation.inject` from the same package) to send W3C trace headers through the router.
 * Without a tracer every hook is a no-op.
 */

/** The part of OpenTelemetry's `Span` the SDK uses. */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown;
  recordException(exception: Error): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** The part of OpenTelemetry's `Tracer` the SDK uses. */
export interface TracerLike {
  startActiveSpan<T>(name: string, options: { attributes?: Record<string, string | number | boolean> }, fn: (span: SpanLike) => T): T;
}

/** Writes the active trace context into outgoing headers (e.g. `(h) => propagation.inject(context.active(), h)`). */
export type PropagatorLike = (headers: Record<string, string>) => void;

/** OpenTelemetry's `SpanStatusCode.ERROR`. */
const STATUS_ERROR = 2;

export class Tracing {
  public constructor(private readonly tracer?: TracerLike, private readonly propagator?: PropagatorLike) {}

  /** Runs `fn` in a span named `name` (or plainly, without a tracer). */
  public span<T>(name: string, attributes: Record<string, string | number | boolean>, fn: (span?: SpanLike) => Promise<T>): Promise<T> {
    if (!this.tracer) return fn();
    return this.tracer.startActiveSpan(name, { attributes }, async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        if (err instanceof Error) span.recordException(err);
        span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        span.end();
      }
    });
  }

  /** Trace headers for an outgoing request ({} without a propagator). */
  public headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    this.propagator?.(headers);
    return headers;
  }
}
