/**
 * Output for a model's context: bounded in UTF-8 bytes, cut on character boundaries, and saying
 * what was left out so the model can ask for the rest in a narrower way.
 */

/** The byte length of `text` in UTF-8. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The start of the character that byte `at` belongs to (UTF-8 continuation bytes are 0x80 to 0xBF). */
function charStart(bytes: Buffer, at: number): number {
  let i = Math.max(0, Math.min(at, bytes.length));
  while (i > 0 && i < bytes.length && bytes[i] >= 0x80 && bytes[i] < 0xc0) i--;
  return i;
}

/**
 * `text` when it fits in `maxBytes`; otherwise its head and tail (the end of a command's output
 * usually says what went wrong) around a line naming how many bytes were left out.
 */
export function truncateMiddle(text: string, maxBytes: number): { text: string; omittedBytes: number } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, omittedBytes: 0 };
  const headEnd = charStart(bytes, Math.floor(maxBytes * 0.4));
  const tailStart = charStart(bytes, bytes.length - (maxBytes - headEnd));
  const omittedBytes = tailStart - headEnd;
  const head = bytes.subarray(0, headEnd).toString('utf8');
  const tail = bytes.subarray(tailStart).toString('utf8');
  return { text: `${head}\n[... ${omittedBytes} of ${bytes.length} bytes left out ...]\n${tail}`, omittedBytes };
}

/** The first whole characters of `bytes` within `maxBytes`. */
export function utf8Head(bytes: Buffer, maxBytes: number): Buffer {
  return bytes.length <= maxBytes ? bytes : bytes.subarray(0, charStart(bytes, maxBytes));
}

/**
 * Shares `budget` bytes between two texts of `a` and `b` bytes: each keeps all it has when both
 * fit; otherwise neither gets less than half unless it needs less, and the rest goes to the other.
 */
export function shareBudget(a: number, b: number, budget: number): [number, number] {
  if (a + b <= budget) return [a, b];
  const half = Math.floor(budget / 2);
  if (a <= half) return [a, budget - a];
  if (b <= half) return [budget - b, b];
  return [half, budget - half];
}
