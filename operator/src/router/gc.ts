/**
 * V8's incremental marking in the router process (--incremental-marking, off by default).
 *
 * Why off: a proxied body arrives as a fresh Buffer per chunk (the HTTP client's parser copies
 * each one), so streaming 1 MiB responses allocates megabytes of short-lived external memory a
 * second. Under that load V8 kept starting a full marking cycle every 10 to 20 ms on a heap of
 * about 17 MB that was not growing (each freed under 1 MB), and the router spent about twice the
 * CPU per MiB that it spends with marking off (bench/data-plane/router.ts; bench/README.md has the
 * numbers). Off, a full collection still runs when the old generation reaches its limit, in one
 * pause that grows with the caches (a few milliseconds per ten megabytes of live heap), and far
 * less often.
 *
 * V8 reads the flag each time it would start marking, so setting it at start-up (after V8 is
 * initialized) takes effect for the rest of the process.
 */
import { setFlagsFromString } from 'node:v8';

export function setIncrementalMarking(on: boolean): void {
  setFlagsFromString(on ? '--incremental-marking' : '--no-incremental-marking');
}
