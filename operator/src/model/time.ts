/** The two time formats on the wire: metav1.Time (whole seconds) and Go's RFC3339Nano. */

/** Milliseconds since the epoch of an RFC 3339 time, or undefined when absent or unparsable. */
export function timeMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** metav1.Time: RFC 3339 in UTC with whole seconds, what Go clients send and expect. */
export function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Go's time.RFC3339Nano: UTC, fractional seconds without trailing zeros. */
export function rfc3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.?0+Z$/, 'Z');
}
