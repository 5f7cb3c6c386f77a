/**
 * The few messages of sandboxd's gRPC `process.v1.ProcessService` the SDK sends and reads, in
 * protobuf's wire format (field numbers of `packages/sandboxd/spec/process/v1/process.proto` in
 * kubernetes-sigs/agent-sandbox), written by hand so the SDK needs no protobuf or gRPC library:
 * StartRequest (with its optional PTY), StartResponse, WriteStdinRequest, SendSignalRequest and
 * ResizeTTYRequest, plus gRPC's 5-byte framing.
 */
/* eslint-disable no-bitwise -- protobuf's wire format is 7-bit groups, tags and two's complement */

/** `Signal` enum values (the signals SendSignal takes). */
export const SIGNAL_SIGINT = 2;
export const SIGNAL_SIGKILL = 9;
export const SIGNAL_SIGTERM = 15;

export interface StartRequest {
  readonly command: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Run on a new pseudo-terminal of this size: its output arrives as stdout. */
  readonly pty?: { readonly cols: number; readonly rows: number };
}

/** One event of the Start stream. */
export type StartEvent =
  | { readonly kind: 'init'; readonly processId: number }
  | { readonly kind: 'stdout' | 'stderr'; readonly data: Buffer }
  | { readonly kind: 'exit'; readonly exitCode: number };

function varint(value: number): Buffer {
  const bytes: number[] = [];
  // int32 negatives are encoded as 10-byte two's complement varints.
  let v = BigInt.asUintN(64, BigInt(value));
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    bytes.push(byte);
  } while (v !== 0n);
  return Buffer.from(bytes);
}

function tag(field: number, wireType: number): Buffer {
  return varint((field << 3) | wireType);
}

function lengthDelimited(field: number, payload: Buffer): Buffer {
  return Buffer.concat([tag(field, 2), varint(payload.length), payload]);
}

function varintField(field: number, value: number): Buffer {
  return Buffer.concat([tag(field, 0), varint(value)]);
}

/** A uint32 field, left out when 0 (proto3's default). */
function uint32Field(field: number, value: number): Buffer {
  return value === 0 ? Buffer.alloc(0) : varintField(field, value >>> 0);
}

export function encodeStartRequest(request: StartRequest): Buffer {
  const config: Buffer[] = request.command.map((arg) => lengthDelimited(1, Buffer.from(arg, 'utf8')));
  for (const [key, value] of Object.entries(request.env ?? {})) {
    config.push(lengthDelimited(2, Buffer.concat([lengthDelimited(1, Buffer.from(key, 'utf8')), lengthDelimited(2, Buffer.from(value, 'utf8'))])));
  }
  if (request.cwd !== undefined) config.push(lengthDelimited(3, Buffer.from(request.cwd, 'utf8')));
  const message = [lengthDelimited(1, Buffer.concat(config))];
  // Pty: uint32 cols = 1, rows = 2 (an empty message when both are 0: presence is what asks for a PTY).
  if (request.pty) message.push(lengthDelimited(2, Buffer.concat([uint32Field(1, request.pty.cols), uint32Field(2, request.pty.rows)])));
  return Buffer.concat(message);
}

/** ResizeTTYRequest: int32 process_id = 1, uint32 cols = 2, rows = 3. */
export function encodeResizeTty(processId: number, cols: number, rows: number): Buffer {
  return Buffer.concat([varintField(1, processId), uint32Field(2, cols), uint32Field(3, rows)]);
}

export function encodeWriteStdin(processId: number, input: Uint8Array | 'eof'): Buffer {
  const payload = input === 'eof' ? lengthDelimited(3, Buffer.alloc(0)) : lengthDelimited(2, Buffer.from(input));
  return Buffer.concat([varintField(1, processId), payload]);
}

export function encodeSendSignal(processId: number, signal: number): Buffer {
  return Buffer.concat([varintField(1, processId), varintField(2, signal)]);
}

/** Reads the fields of one message: [field number, wire type, value (number or bytes)]. */
function* fields(message: Buffer): Generator<[number, number, number | Buffer]> {
  let at = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (at >= message.length) throw new Error('truncated protobuf varint');
      const byte = message[at++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < message.length) {
    const key = Number(readVarint());
    const field = key >> 3;
    const wireType = key & 7;
    if (wireType === 0) {
      yield [field, wireType, Number(BigInt.asIntN(32, readVarint()))];
    } else if (wireType === 2) {
      const length = Number(readVarint());
      if (at + length > message.length) throw new Error('truncated protobuf field');
      yield [field, wireType, message.subarray(at, at + length)];
      at += length;
    } else if (wireType === 5) {
      at += 4;
    } else if (wireType === 1) {
      at += 8;
    } else {
      throw new Error(`unsupported protobuf wire type ${wireType}`);
    }
  }
}

/** The int32 field 1 of a small message (InitEvent.process_id, ExitEvent.exit_code); 0 when absent. */
function firstInt(message: Buffer): number {
  for (const [field, wireType, value] of fields(message)) if (field === 1 && wireType === 0) return value as number;
  return 0;
}

export function decodeStartResponse(message: Buffer): StartEvent | undefined {
  for (const [field, wireType, value] of fields(message)) {
    if (wireType !== 2) continue;
    const bytes = value as Buffer;
    if (field === 1) return { kind: 'init', processId: firstInt(bytes) };
    if (field === 2) return { kind: 'stdout', data: Buffer.from(bytes) };
    if (field === 3) return { kind: 'stderr', data: Buffer.from(bytes) };
    if (field === 4) return { kind: 'exit', exitCode: firstInt(bytes) };
  }
  return undefined;
}

/** gRPC's length-prefixed message framing (uncompressed). */
export function frame(message: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** Splits a stream of gRPC frames into messages, across chunk boundaries. */
export class FrameReader {
  private buffered = Buffer.alloc(0);

  public push(chunk: Buffer): Buffer[] {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    const messages: Buffer[] = [];
    while (this.buffered.length >= 5) {
      if (this.buffered[0] !== 0) throw new Error('compressed gRPC messages are not supported');
      const length = this.buffered.readUInt32BE(1);
      if (this.buffered.length < 5 + length) break;
      messages.push(this.buffered.subarray(5, 5 + length));
      this.buffered = this.buffered.subarray(5 + length);
    }
    return messages;
  }
}
