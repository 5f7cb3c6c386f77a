/**
 * The SDK's hand-written process.v1 codec against the runtime's own (operator/src/sandboxd, itself
 * checked against upstream's generated classes): what the SDK encodes the runtime decodes to the
 * same values, and what the runtime encodes the SDK reads back. Property-based, plus gRPC framing
 * split at every byte.
 */
import * as fc from 'fast-check';
import * as runtime from '../../operator/src/sandboxd/process-proto';
import {
  FrameReader, decodeStartResponse, encodeResizeTty, encodeSendSignal, encodeStartRequest, encodeWriteStdin, frame,
} from '../src/process-wire';

const text = fc.string({ unit: 'grapheme', maxLength: 20 });
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });

test('StartRequest: the runtime decodes what the SDK encodes', () => {
  fc.assert(fc.property(
    fc.array(text, { minLength: 1, maxLength: 5 }), fc.dictionary(text.filter((k) => k !== ''), text, { maxKeys: 4 }), fc.option(text, { nil: undefined }),
    (command, env, cwd) => {
      const decoded = runtime.decodeStartRequest(encodeStartRequest({ command, env, cwd }));
      expect(decoded.config).toEqual({ command, envVars: env, ...(cwd === undefined ? {} : { cwd }) });
      expect(decoded.pty).toBeUndefined();
    },
  ));
});

test('StartRequest with a PTY (0 x 0 included: presence asks for one) and ResizeTTY: the runtime decodes what the SDK encodes', () => {
  const side = fc.integer({ min: 0, max: 65535 });
  const id = fc.integer({ min: 1, max: 2 ** 31 - 1 });
  fc.assert(fc.property(fc.array(text, { minLength: 1, maxLength: 3 }), side, side, id, (command, cols, rows, processId) => {
    const decoded = runtime.decodeStartRequest(encodeStartRequest({ command, pty: { cols, rows } }));
    expect(decoded).toEqual({ config: { command, envVars: {} }, pty: { cols, rows } });
    expect(runtime.decodeResizeTtyRequest(encodeResizeTty(processId, cols, rows))).toEqual({ processId, cols, rows });
  }));
});

test('WriteStdin and SendSignal: the runtime decodes what the SDK encodes', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.uint8Array({ minLength: 1, maxLength: 64 }), (processId, input) => {
    expect(runtime.decodeWriteStdinRequest(encodeWriteStdin(processId, input))).toEqual({ processId, payload: { input: Buffer.from(input) } });
    expect(runtime.decodeWriteStdinRequest(encodeWriteStdin(processId, 'eof'))).toEqual({ processId, payload: { eof: true } });
    expect(runtime.decodeSendSignalRequest(encodeSendSignal(processId, runtime.Signal.SIGKILL))).toEqual({ processId, signal: 9 });
  }));
});

test('StartResponse: the SDK reads every event the runtime encodes, negative exit codes included', () => {
  const event = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 31 - 1 }).map((processId) => ({ init: { processId } })),
    fc.uint8Array({ maxLength: 64 }).map((b) => ({ stdout: Buffer.from(b) })),
    fc.uint8Array({ maxLength: 64 }).map((b) => ({ stderr: Buffer.from(b) })),
    int32.map((exitCode) => ({ exit: { exitCode } })),
  );
  fc.assert(fc.property(event, (e) => {
    const decoded = decodeStartResponse(runtime.encodeStartResponse({ event: e as runtime.StartEvent }));
    if ('init' in e) expect(decoded).toEqual({ kind: 'init', processId: e.init.processId });
    if ('stdout' in e) expect(decoded).toEqual({ kind: 'stdout', data: e.stdout });
    if ('stderr' in e) expect(decoded).toEqual({ kind: 'stderr', data: e.stderr });
    if ('exit' in e) expect(decoded).toEqual({ kind: 'exit', exitCode: e.exit.exitCode });
  }));
});

test('gRPC frames come out whole however the stream splits them', () => {
  const messagesArb = fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 1, maxLength: 5 });
  fc.assert(fc.property(messagesArb, fc.integer({ min: 1, max: 7 }), (messages, step) => {
    const wire = Buffer.concat(messages.map((m) => frame(Buffer.from(m))));
    const reader = new FrameReader();
    const out: Buffer[] = [];
    for (let at = 0; at < wire.length; at += step) out.push(...reader.push(wire.subarray(at, at + step)));
    expect(out.map((b) => [...b])).toEqual(messages.map((m) => [...m]));
  }));
});
