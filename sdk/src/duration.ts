/**
 * Durations in options: a number of seconds, or a string like `90s`, `15m`, `2h`, `1h30m`.
 * Anything else is a SandboxConfigError naming the option.
 */
import { SandboxConfigError } from './errors.js';

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/** A duration in seconds (> 0). */
export type Duration = number | string;

/** Parses a Duration to milliseconds; `field` names the option in the error. */
export function durationMs(value: Duration, field: string): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value <= 0) throw new SandboxConfigError(field, `must be a positive number of seconds or a string like "15m", got ${value}`);
    return value * 1000;
  }
  const text = String(value).trim();
  const parts = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/.test(text) ? text.match(/\d+(?:\.\d+)?(?:ms|s|m|h|d)/g) : null;
  if (!parts) throw new SandboxConfigError(field, `must be a number of seconds or a string like "90s", "15m", "2h" or "1h30m", got "${text}"`);
  let seconds = 0;
  for (const part of parts) {
    const [, n, unit] = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(part)!;
    seconds += Number(n) * UNIT_SECONDS[unit];
  }
  if (seconds <= 0) throw new SandboxConfigError(field, `must be longer than zero, got "${text}"`);
  return seconds * 1000;
}

/** RFC 3339 in UTC at second precision, as the API server stores `shutdownTime`. */
export function rfc3339Seconds(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
