/**
 * Structured JSON logs (pino). The runtime and controllers depend only on the small Logger
 * interface, so tests can pass a silent or capturing logger.
 */
import { pino } from 'pino';

export interface LogFn {
  (message: string): void;
  (fields: object, message?: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  /** A logger that adds `bindings` to every line (e.g. `{ controller: 'sandbox' }`). */
  child(bindings: Record<string, unknown>): Logger;
}

/** JSON lines on stdout at `level` and above; `time` is ISO 8601 so humans and Loki both read it. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // Errors logged as `{ err }` keep their message, stack and Kubernetes reason.
    serializers: { err: pino.stdSerializers.err },
  });
}

const noop: LogFn = () => {};

/** Discards everything; for tests and optional loggers. */
export const SILENT_LOGGER: Logger = { debug: noop, info: noop, warn: noop, error: noop, child: () => SILENT_LOGGER };

/**
 * `base.child(bindings)`, made only when something is logged: a request's logger costs nothing
 * on the path where it logs nothing.
 */
export function lazyChild(base: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const get = () => (child ??= base.child(bindings));
  const fn = (level: 'debug' | 'info' | 'warn' | 'error'): LogFn => ((...args: unknown[]) => (get()[level] as (...a: unknown[]) => void)(...args)) as LogFn;
  return { debug: fn('debug'), info: fn('info'), warn: fn('warn'), error: fn('error'), child: (more) => get().child(more) };
}
