import fc from 'fast-check';
import { WatchStreamParser } from '../../src/runtime/watch-stream';

const event = fc.record({
  type: fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'),
  object: fc.record({
    metadata: fc.record({ name: fc.string({ maxLength: 20 }), resourceVersion: fc.stringMatching(/^[0-9]{1,8}$/) }),
    // Multi-byte characters (emoji, CJK) so chunk splits fall inside UTF-8 sequences too.
    data: fc.string({ unit: 'grapheme', maxLength: 40 }),
  }),
});

/** Split `bytes` at the given cut points (any byte offset). */
function chunks(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let start = 0;
  for (const p of points) {
    out.push(bytes.subarray(start, p));
    start = p;
  }
  out.push(bytes.subarray(start));
  return out;
}

describe('WatchStreamParser', () => {
  test('delivers every event, in order, however the byte stream is chunked', () => {
    fc.assert(fc.property(fc.array(event, { maxLength: 15 }), fc.array(fc.nat(), { maxLength: 40 }), (events, cuts) => {
      const bytes = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''), 'utf8');
      const seen: unknown[] = [];
      const parser = new WatchStreamParser((e) => seen.push(e));
      for (const chunk of chunks(bytes, cuts)) parser.push(chunk);
      parser.end();
      expect(seen).toEqual(events);
    }), { numRuns: 500 });
  });

  test('a stream cut inside an event reports the truncation at end(), after the complete events', () => {
    fc.assert(fc.property(fc.array(event, { minLength: 1, maxLength: 8 }), fc.nat(), (events, cut) => {
      const whole = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''), 'utf8');
      const lastStart = whole.lastIndexOf('\n', whole.length - 2) + 1;
      // Cut strictly inside the last event's JSON (before its closing brace).
      const at = lastStart + 1 + (cut % (whole.length - 2 - lastStart));
      const seen: unknown[] = [];
      const parser = new WatchStreamParser((e) => seen.push(e));
      parser.push(whole.subarray(0, at));
      expect(seen).toEqual(events.slice(0, -1));
      expect(() => parser.end()).toThrow(/ended in the middle of an event/);
    }));
  });

  test('a last event without its newline still counts; blank lines are ignored', () => {
    const seen: unknown[] = [];
    const parser = new WatchStreamParser((e) => seen.push(e));
    parser.push('\n{"type":"ADDED","object":{"a":1}}\n\n\r\n{"type":"DELETED"');
    parser.push(',"object":{"a":1}}');
    parser.end();
    expect(seen).toEqual([{ type: 'ADDED', object: { a: 1 } }, { type: 'DELETED', object: { a: 1 } }]);
  });

  test('a line that is not JSON is an error naming the line', () => {
    const parser = new WatchStreamParser(() => undefined);
    expect(() => parser.push('<html>proxy error</html>\n')).toThrow(/not JSON.*<html>proxy error/);
  });
});
