import * as fc from 'fast-check';
import { NameHash } from '../../src/api/name-hash';

// Reference vectors computed with Go's hash/fnv.New32a, printed with %08x (upstream's NameHash).
const VECTORS: Array<[string, string]> = [
  ['', '811c9dc5'],
  ['a', 'e40c292c'],
  ['my-sandbox', '374de8f5'],
  ['my-warm-pool', '034dafb4'],
  ['pool', '91dd7983'],
  ['test-template-custom', '999443e6'],
  ['python-sandbox-template', 'd274c066'],
];

/** A deliberately naive FNV-1a over BigInt, as an independent oracle. */
function fnv1aOracle(input: string): string {
  return fnv1aBytes(new TextEncoder().encode(input));
}

function fnv1aBytes(bytes: Iterable<number>): string {
  let hash = 0x811c9dc5n;
  for (const byte of bytes) {
    hash ^= BigInt(byte); // eslint-disable-line no-bitwise
    hash = (hash * 0x01000193n) % 2n ** 32n;
  }
  return hash.toString(16).padStart(8, '0');
}

describe('NameHash', () => {
  test.each(VECTORS)('NameHash(%j) = %s', (input, expected) => {
    expect(NameHash.of(input)).toBe(expected);
  });

  test('always 8 lowercase hex digits', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => /^[0-9a-f]{8}$/.test(NameHash.of(s))));
  });

  test('agrees with an independent BigInt implementation on any Unicode input', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), (s) => NameHash.of(s) === fnv1aOracle(s)));
  });

  test('hashes UTF-8 bytes, not UTF-16 code units', () => {
    // "é" is one UTF-16 unit but two UTF-8 bytes; hashing code units would give a different value.
    expect(NameHash.of('é')).toBe(fnv1aBytes([0xc3, 0xa9]));
    expect(NameHash.of('é')).not.toBe(fnv1aBytes([0xe9]));
  });
});
