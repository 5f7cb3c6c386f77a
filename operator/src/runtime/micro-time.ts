/**
 * metav1.MicroTime: RFC 3339 with exactly six fractional digits. The API server rejects
 * `Date#toISOString()`'s three digits for Lease acquireTime/renewTime and Event eventTime with a
 * 400 (kubernetes-client/javascript#828), so these fields are always written with this function.
 */
export function formatMicroTime(date: Date): string {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ, always UTC
  return `${iso.slice(0, 23)}000Z`;
}

/** Milliseconds since the epoch of a metav1.Time or MicroTime string, or undefined if malformed. */
export function parseKubeTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/i.exec(text);
  if (!match) return undefined;
  // Date.parse only promises three fractional digits; cut the rest ourselves.
  const millis = ((match[2] ?? '') + '000').slice(0, 3);
  const ms = Date.parse(`${match[1]}.${millis}${match[3].toUpperCase()}`);
  return Number.isNaN(ms) ? undefined : ms;
}
