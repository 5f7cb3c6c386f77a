/**
 * The process.v1 codec the SDK and the runtime share (sdk/src/process-proto.ts): round trips of every
 * message with unknown fields of every wire type around them, fixed byte vectors (the encodings
 * upstream's generated code produces: operator/test/sandboxd/python-sdk.test.ts drives the runtime
 * with those), and malformed input as ProtoDecodeError.
 */
import fc from 'fast-check';
import {
  decodeExecuteRequest, decodeExecuteResponse, decodeProcessConfig, decodeResizeTtyRequest, decodeSendSignalRequest, decodeStartRequest,
  decodeStartResponse, decodeWriteStdinRequest, decodeEmpty, encodeExecuteRequest, encodeExecuteResponse, encodeProcessConfig,
  encodeResizeTtyRequest, encodeSendSignalRequest, encodeStartRequest, encodeStartResponse, encodeWriteStdinRequest,
  ProtoDecodeError, ProtoWriter, type StartResponse, type WriteStdinRequest,
} from '../src/process-proto';

const hex = (b: Buffer) => b.toString('hex');
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const uint32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const bytes = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const config = fc.record({
  command: fc.array(text, { maxLength: 5 }),
  envVars: fc.dictionary(text, text, { maxKeys: 4 }),
  cwd: fc.option(text, { nil: undefined }),
}).map(({ cwd, ...rest }) => (cwd === undefined ? rest : { ...rest, cwd }));

/** A field with a number none of the messages uses, of any wire type (groups nest one unknown varint). */
const fieldNumber = fc.integer({ min: 20, max: 2 ** 29 - 1 });
const unknownField = fc.tuple(fieldNumber, fc.integer({ min: 0, max: 4 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), bytes)
  .map(([field, kind, big, payload]) => {
    const w = new ProtoWriter();
    switch (kind) {
      case 0: {
        // Any 64-bit varint, up to ten bytes (the writer's own varint stops at 2^53).
        const out: number[] = [];
        let v = big;
        while (v >= 0x80n) {
          out.push(Number(v % 0x80n) + 0x80);
          v /= 0x80n;
        }
        out.push(Number(v));
        return Buffer.concat([w.tag(field, 0).finish(), Buffer.from(out)]);
      }
      case 1: return Buffer.concat([w.tag(field, 1).finish(), Buffer.alloc(8, 7)]);
      case 2: return w.bytes(field, payload, true).finish();
      case 3: return Buffer.concat([w.tag(field, 3).tag(field + 1, 0).varint(5).tag(field, 4).finish()]);
      default: return Buffer.concat([w.tag(field, 5).finish(), Buffer.alloc(4, 9)]);
    }
  });

/** The encoding with unknown fields before and after (fields may come in any order). */
const withUnknown = (encoded: Buffer) => fc.tuple(fc.array(unknownField, { maxLength: 3 }), fc.array(unknownField, { maxLength: 3 }))
  .map(([before, after]) => Buffer.concat([...before, encoded, ...after]));

function roundTrips<T>(arb: fc.Arbitrary<T>, encode: (m: T) => Buffer, decode: (b: Buffer) => T): void {
  fc.assert(fc.property(arb, (m) => {
    expect(decode(encode(m))).toEqual(m);
  }));
  fc.assert(fc.property(arb.chain((m) => withUnknown(encode(m)).map((b) => [m, b] as const)), ([m, b]) => {
    expect(decode(b)).toEqual(m);
  }));
}

describe('process.v1 codec: round trips, unknown fields skipped', () => {
  test('ProcessConfig (repeated string, map, proto3 optional)', () => roundTrips(config, encodeProcessConfig, decodeProcessConfig));
  test('StartRequest (optional embedded PTY)', () => roundTrips(
    fc.record({ config: config, pty: fc.record({ cols: uint32, rows: uint32 }) }, { requiredKeys: [] }), encodeStartRequest, decodeStartRequest));
  test('ExecuteRequest', () => roundTrips(fc.record({ config }, { requiredKeys: [] }), encodeExecuteRequest, decodeExecuteRequest));
  test('ExecuteResponse (negative int32)', () => roundTrips(fc.record({ exitCode: int32, stdout: bytes, stderr: bytes }), encodeExecuteResponse, decodeExecuteResponse));
  test('StartResponse (oneof, members set to their zero value)', () => roundTrips<StartResponse>(fc.oneof(
    fc.constant({}),
    int32.map((processId) => ({ event: { init: { processId } } })),
    bytes.map((stdout) => ({ event: { stdout } })),
    bytes.map((stderr) => ({ event: { stderr } })),
    int32.map((exitCode) => ({ event: { exit: { exitCode } } })),
  ), encodeStartResponse, decodeStartResponse));
  test('WriteStdinRequest (oneof with google.protobuf.Empty)', () => roundTrips<WriteStdinRequest>(fc.oneof(
    int32.map((processId) => ({ processId })),
    fc.tuple(int32, bytes).map(([processId, input]) => ({ processId, payload: { input } })),
    int32.map((processId) => ({ processId, payload: { eof: true as const } })),
  ), encodeWriteStdinRequest, decodeWriteStdinRequest));
  test('SendSignalRequest', () => roundTrips(fc.record({ processId: int32, signal: int32 }), encodeSendSignalRequest, decodeSendSignalRequest));
  test('ResizeTTYRequest', () => roundTrips(fc.record({ processId: int32, cols: uint32, rows: uint32 }), encodeResizeTtyRequest, decodeResizeTtyRequest));
  test('empty messages read unknown fields and nothing else', () => {
    fc.assert(fc.property(withUnknown(Buffer.alloc(0)), (b) => {
      expect(decodeEmpty(b)).toEqual({});
    }));
  });
});

describe('process.v1 codec: fixed byte vectors', () => {
  test('ProcessConfig: argv, one env entry, cwd present but empty', () => {
    const encoded = encodeProcessConfig({ command: ['ls', '-l'], envVars: { A: '1' }, cwd: '' });
    expect(hex(encoded)).toBe('0a026c73' + '0a022d6c' + '1206' + '0a0141' + '120131' + '1a00');
    expect(decodeProcessConfig(encoded)).toEqual({ command: ['ls', '-l'], envVars: { A: '1' }, cwd: '' });
    expect(decodeProcessConfig(Buffer.from('0a026c73', 'hex'))).toEqual({ command: ['ls'], envVars: {} });
  });

  test('StartRequest with a PTY of 80x24', () => {
    expect(hex(encodeStartRequest({ config: { command: ['sh'], envVars: {} }, pty: { cols: 80, rows: 24 } }))).toBe('0a040a027368' + '1204' + '0850' + '1018');
  });

  test('exit code -1 is a ten-byte varint', () => {
    const encoded = encodeExecuteResponse({ exitCode: -1, stdout: Buffer.from('hi'), stderr: Buffer.alloc(0) });
    expect(hex(encoded)).toBe('08ffffffffffffffffff01' + '12026869');
    expect(decodeExecuteResponse(encoded).exitCode).toBe(-1);
  });

  test('StartResponse events: init 1, an empty stdout chunk, exit 0', () => {
    expect(hex(encodeStartResponse({ event: { init: { processId: 1 } } }))).toBe('0a020801');
    expect(hex(encodeStartResponse({ event: { stdout: Buffer.alloc(0) } }))).toBe('1200');
    expect(hex(encodeStartResponse({ event: { exit: { exitCode: 0 } } }))).toBe('2200');
    // The last member of the oneof wins.
    expect(decodeStartResponse(Buffer.from('0a0208011a0178', 'hex'))).toEqual({ event: { stderr: Buffer.from('x') } });
  });

  test('WriteStdin eof, SendSignal SIGKILL, ResizeTTY 300x40', () => {
    expect(hex(encodeWriteStdinRequest({ processId: 3, payload: { eof: true } }))).toBe('08031a00');
    expect(hex(encodeSendSignalRequest({ processId: 1, signal: 9 }))).toBe('08011009');
    expect(hex(encodeResizeTtyRequest({ processId: 2, cols: 300, rows: 40 }))).toBe('0802' + '10ac02' + '1828');
  });

  test('a repeated embedded message merges', () => {
    // config { command: "a" } then config { command: "b", cwd: "w" }
    expect(decodeExecuteRequest(Buffer.from('0a030a0161' + '0a060a01621a0177', 'hex'))).toEqual({ config: { command: ['a', 'b'], envVars: {}, cwd: 'w' } });
  });

  test.each([
    ['a truncated varint', '08'],
    ['a length past the end', '0a05616263'],
    ['field number 0', '0001'],
    ['a group without its end', '0b0801'],
    ['wire type 6', '0e'],
    ['an end tag outside a group', '0c'],
  ])('%s is a decode error', (_what, bytesHex) => {
    expect(() => decodeExecuteRequest(Buffer.from(bytesHex, 'hex'))).toThrow(ProtoDecodeError);
  });
});
