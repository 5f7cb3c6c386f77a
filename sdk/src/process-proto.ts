/**
 * sandboxd's gRPC `process.v1.ProcessService` messages in protobuf's binary wire format, by hand:
 * the one codec of the SDK (its gRPC process client) and of the runtime (operator/src/sandboxd,
 * which bundles this file), so the two cannot drift apart. Field numbers and types are those of
 * upstream's `packages/sandboxd/spec/process/v1/process.proto` (kubernetes-sigs/agent-sandbox), the
 * same descriptor the Python SDK 1.0.8 ships compiled; the runtime's tests drive it with that SDK's
 * generated stubs. It depends on nothing but Node's Buffer: a generated codec would add a protobuf
 * runtime to the SDK's dependencies for five small messages.
 *
 * The wire format: just what these messages need (varints, length-delimited fields, skipping
 * unknown fields of every wire type). int32 values are written as 64-bit sign-extended varints
 * (negative numbers take ten bytes), uint32 as plain varints; when reading, the low 32 bits are
 * kept, as the protobuf runtimes do.
 *
 * Decoding follows protobuf's rules: unknown fields (and known numbers with an unexpected wire
 * type) are skipped, a repeated embedded message merges (its encodings are concatenated before
 * decoding), the last member of a oneof wins, `cwd` and `pty` keep their presence. A malformed
 * encoding throws ProtoDecodeError.
 */
/* eslint-disable no-bitwise -- the wire format is defined in 7-bit groups, tags and two's complement */

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_BYTES = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

export class ProtoDecodeError extends Error {}

/** The low 32 bits of a varint as read, as a signed int32. */
export function toInt32(value: number): number {
  return value | 0;
}

/** Appends fields; `finish()` returns the encoded message. */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  /** A varint of a non-negative integer below 2^53, or of a negative int32 (sign-extended to 64 bits). */
  public varint(value: number): this {
    const bytes: number[] = [];
    if (value < 0) {
      // Two's complement over 64 bits: the low 32 bits, then all ones above.
      let low = value >>> 0;
      for (let i = 0; i < 4; i++) {
        bytes.push((low & 0x7f) | 0x80);
        low >>>= 7;
      }
      bytes.push((low & 0x0f) | 0x70 | 0x80, 0xff, 0xff, 0xff, 0xff, 0x01);
    } else {
      let v = value;
      while (v >= 0x80) {
        bytes.push((v % 0x80) | 0x80);
        v = Math.floor(v / 0x80);
      }
      bytes.push(v);
    }
    this.parts.push(Buffer.from(bytes));
    return this;
  }

  public tag(field: number, wireType: number): this {
    return this.varint(field * 8 + wireType);
  }

  /** An int32 or enum field; proto3 leaves zero out unless `always`. */
  public int32(field: number, value: number, always = false): this {
    if (value === 0 && !always) return this;
    return this.tag(field, WIRE_VARINT).varint(value | 0);
  }

  public uint32(field: number, value: number): this {
    if (value === 0) return this;
    return this.tag(field, WIRE_VARINT).varint(value >>> 0);
  }

  /** A bytes, string or embedded-message field; proto3 leaves an empty one out unless `always`. */
  public bytes(field: number, value: Buffer | Uint8Array, always = false): this {
    if (value.length === 0 && !always) return this;
    this.tag(field, WIRE_BYTES).varint(value.length);
    this.parts.push(Buffer.from(value.buffer, value.byteOffset, value.length));
    return this;
  }

  public string(field: number, value: string, always = false): this {
    return this.bytes(field, Buffer.from(value, 'utf8'), always);
  }

  public finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** One field as read: its number, wire type and value (a number for varints, a slice for bytes). */
export type ProtoField =
  | { readonly field: number; readonly wireType: typeof WIRE_VARINT; readonly value: number }
  | { readonly field: number; readonly wireType: typeof WIRE_BYTES; readonly value: Buffer };

/** Reads the fields of one message in order; fields of the other wire types are skipped. */
export function* readFields(buf: Buffer): Generator<ProtoField> {
  const reader = new Reader(buf);
  while (!reader.done) {
    const key = reader.varint32();
    const field = key >>> 3;
    const wireType = key & 7;
    if (field === 0) throw new ProtoDecodeError('field number 0 is invalid');
    if (wireType === WIRE_VARINT) yield { field, wireType, value: reader.varint32() };
    else if (wireType === WIRE_BYTES) yield { field, wireType, value: reader.lengthDelimited() };
    else reader.skip(wireType, field);
  }
}

class Reader {
  private pos = 0;

  public constructor(private readonly buf: Buffer) {}

  public get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** A varint of up to ten bytes; the low 32 bits (as an unsigned number). */
  public varint32(): number {
    let result = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new ProtoDecodeError('truncated varint');
      const b = this.buf[this.pos++];
      if (i < 5) result = (result | ((b & 0x7f) << (7 * i))) >>> 0;
      if ((b & 0x80) === 0) return result;
    }
    throw new ProtoDecodeError('varint longer than ten bytes');
  }

  /** A length, which must be a varint below 2^31 that fits in what is left. */
  public lengthDelimited(): Buffer {
    const start = this.pos;
    const length = this.varint32();
    if (length > 0x7fffffff || this.pos - start > 5) throw new ProtoDecodeError('length out of range');
    if (length > this.buf.length - this.pos) throw new ProtoDecodeError('length beyond the end of the message');
    const value = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return value;
  }

  private advance(n: number): void {
    if (n > this.buf.length - this.pos) throw new ProtoDecodeError('truncated fixed-width field');
    this.pos += n;
  }

  /** Skips one value of `wireType` (a whole group, up to its end tag, for a start-group). */
  public skip(wireType: number, field: number): void {
    switch (wireType) {
      case WIRE_VARINT: this.varint32(); return;
      case WIRE_FIXED64: this.advance(8); return;
      case WIRE_BYTES: this.lengthDelimited(); return;
      case WIRE_FIXED32: this.advance(4); return;
      case WIRE_START_GROUP:
        for (;;) {
          if (this.done) throw new ProtoDecodeError(`group ${field} has no end`);
          const key = this.varint32();
          if ((key & 7) === WIRE_END_GROUP) {
            if (key >>> 3 !== field) throw new ProtoDecodeError(`group ${field} ended by the end tag of ${key >>> 3}`);
            return;
          }
          this.skip(key & 7, key >>> 3);
        }
      default: throw new ProtoDecodeError(`wire type ${wireType} is invalid here`);
    }
  }
}

export interface ProcessConfig {
  readonly command: readonly string[];
  readonly envVars: Readonly<Record<string, string>>;
  /** proto3 `optional`: undefined when absent, '' when sent empty. */
  readonly cwd?: string;
}

export interface Pty {
  readonly cols: number;
  readonly rows: number;
}

export interface StartRequest {
  readonly config?: ProcessConfig;
  readonly pty?: Pty;
}

export interface ExecuteRequest {
  readonly config?: ProcessConfig;
}

/** `oneof event`; undefined when the message sets none. */
export type StartEvent =
  | { readonly init: { readonly processId: number } }
  | { readonly stdout: Buffer }
  | { readonly stderr: Buffer }
  | { readonly exit: { readonly exitCode: number } };

export interface StartResponse {
  readonly event?: StartEvent;
}

export interface ExecuteResponse {
  readonly exitCode: number;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

export interface WriteStdinRequest {
  readonly processId: number;
  /** `oneof payload`: bytes to write, or end of input. */
  readonly payload?: { readonly input: Buffer } | { readonly eof: true };
}

export enum Signal {
  UNSPECIFIED = 0,
  SIGINT = 2,
  SIGKILL = 9,
  SIGTERM = 15,
}

export interface SendSignalRequest {
  readonly processId: number;
  readonly signal: number;
}

export interface ResizeTtyRequest {
  readonly processId: number;
  readonly cols: number;
  readonly rows: number;
}

/** google.protobuf.Empty and the service's empty responses. */
export type Empty = Record<string, never>;

const EMPTY: Buffer = Buffer.alloc(0);
const text = (b: Buffer) => b.toString('utf8');

/** Collects the encodings of an embedded message field, which merge when it repeats. */
class Embedded {
  private parts?: Buffer[];
  public add(b: Buffer): void {
    (this.parts ??= []).push(b);
  }
  public get present(): boolean {
    return this.parts !== undefined;
  }
  public get bytes(): Buffer {
    return Buffer.concat(this.parts ?? []);
  }
}

export function encodeProcessConfig(m: ProcessConfig): Buffer {
  const w = new ProtoWriter();
  for (const arg of m.command) w.string(1, arg, true);
  for (const [key, value] of Object.entries(m.envVars)) {
    // A map entry carries its key and value even when empty, as protobuf's runtimes write them.
    w.bytes(2, new ProtoWriter().string(1, key, true).string(2, value, true).finish(), true);
  }
  if (m.cwd !== undefined) w.string(3, m.cwd, true);
  return w.finish();
}

export function decodeProcessConfig(buf: Buffer): ProcessConfig {
  const command: string[] = [];
  // No prototype: a key such as __proto__ is an ordinary entry.
  const envVars: Record<string, string> = Object.create(null);
  let cwd: string | undefined;
  for (const f of readFields(buf)) {
    if (f.wireType !== WIRE_BYTES) continue;
    if (f.field === 1) {
      command.push(text(f.value));
    } else if (f.field === 2) {
      let key = '';
      let value = '';
      for (const e of readFields(f.value)) {
        if (e.wireType !== WIRE_BYTES) continue;
        if (e.field === 1) key = text(e.value);
        else if (e.field === 2) value = text(e.value);
      }
      envVars[key] = value;
    } else if (f.field === 3) {
      cwd = text(f.value);
    }
  }
  return cwd === undefined ? { command, envVars } : { command, envVars, cwd };
}

function encodePty(m: Pty): Buffer {
  return new ProtoWriter().uint32(1, m.cols).uint32(2, m.rows).finish();
}

function decodePty(buf: Buffer): Pty {
  let cols = 0;
  let rows = 0;
  for (const f of readFields(buf)) {
    if (f.wireType !== WIRE_VARINT) continue;
    if (f.field === 1) cols = f.value;
    else if (f.field === 2) rows = f.value;
  }
  return { cols, rows };
}

/** Decodes a message whose fields are all embedded messages, by field number. */
function embeddedFields(buf: Buffer, fields: readonly number[]): Embedded[] {
  const found = fields.map(() => new Embedded());
  for (const f of readFields(buf)) {
    const i = fields.indexOf(f.field);
    if (i >= 0 && f.wireType === WIRE_BYTES) found[i].add(f.value);
  }
  return found;
}

export function encodeStartRequest(m: StartRequest): Buffer {
  const w = new ProtoWriter();
  if (m.config) w.bytes(1, encodeProcessConfig(m.config), true);
  if (m.pty) w.bytes(2, encodePty(m.pty), true);
  return w.finish();
}

export function decodeStartRequest(buf: Buffer): StartRequest {
  const [config, pty] = embeddedFields(buf, [1, 2]);
  return {
    ...(config.present ? { config: decodeProcessConfig(config.bytes) } : {}),
    ...(pty.present ? { pty: decodePty(pty.bytes) } : {}),
  };
}

export function encodeExecuteRequest(m: ExecuteRequest): Buffer {
  return m.config ? new ProtoWriter().bytes(1, encodeProcessConfig(m.config), true).finish() : EMPTY;
}

export function decodeExecuteRequest(buf: Buffer): ExecuteRequest {
  const [config] = embeddedFields(buf, [1]);
  return config.present ? { config: decodeProcessConfig(config.bytes) } : {};
}

/** The single int32 field 1 of InitEvent and ExitEvent. */
function decodeInt32Field1(buf: Buffer): number {
  let value = 0;
  for (const f of readFields(buf)) {
    if (f.field === 1 && f.wireType === WIRE_VARINT) value = toInt32(f.value);
  }
  return value;
}

export function encodeStartResponse(m: StartResponse): Buffer {
  const e = m.event;
  const w = new ProtoWriter();
  if (e === undefined) return EMPTY;
  if ('init' in e) w.bytes(1, new ProtoWriter().int32(1, e.init.processId).finish(), true);
  else if ('stdout' in e) w.bytes(2, e.stdout, true);
  else if ('stderr' in e) w.bytes(3, e.stderr, true);
  else w.bytes(4, new ProtoWriter().int32(1, e.exit.exitCode).finish(), true);
  return w.finish();
}

export function decodeStartResponse(buf: Buffer): StartResponse {
  let member = 0;
  let parts: Buffer[] = [];
  for (const f of readFields(buf)) {
    if (f.wireType !== WIRE_BYTES || f.field < 1 || f.field > 4) continue;
    // A oneof's last member wins; the same message member seen again merges.
    if (f.field !== member || f.field === 2 || f.field === 3) parts = [];
    member = f.field;
    parts.push(f.value);
  }
  const value = Buffer.concat(parts);
  switch (member) {
    case 1: return { event: { init: { processId: decodeInt32Field1(value) } } };
    case 2: return { event: { stdout: value } };
    case 3: return { event: { stderr: value } };
    case 4: return { event: { exit: { exitCode: decodeInt32Field1(value) } } };
    default: return {};
  }
}

export function encodeExecuteResponse(m: ExecuteResponse): Buffer {
  return new ProtoWriter().int32(1, m.exitCode).bytes(2, m.stdout).bytes(3, m.stderr).finish();
}

export function decodeExecuteResponse(buf: Buffer): ExecuteResponse {
  let exitCode = 0;
  let stdout = EMPTY;
  let stderr = EMPTY;
  for (const f of readFields(buf)) {
    if (f.field === 1 && f.wireType === WIRE_VARINT) exitCode = toInt32(f.value);
    else if (f.field === 2 && f.wireType === WIRE_BYTES) stdout = f.value;
    else if (f.field === 3 && f.wireType === WIRE_BYTES) stderr = f.value;
  }
  return { exitCode, stdout, stderr };
}

export function encodeWriteStdinRequest(m: WriteStdinRequest): Buffer {
  const w = new ProtoWriter().int32(1, m.processId);
  if (m.payload && 'input' in m.payload) w.bytes(2, m.payload.input, true);
  else if (m.payload) w.bytes(3, EMPTY, true);
  return w.finish();
}

export function decodeWriteStdinRequest(buf: Buffer): WriteStdinRequest {
  let processId = 0;
  let payload: WriteStdinRequest['payload'];
  for (const f of readFields(buf)) {
    if (f.field === 1 && f.wireType === WIRE_VARINT) processId = toInt32(f.value);
    else if (f.field === 2 && f.wireType === WIRE_BYTES) payload = { input: f.value };
    else if (f.field === 3 && f.wireType === WIRE_BYTES) payload = { eof: true };
  }
  return payload === undefined ? { processId } : { processId, payload };
}

export function encodeSendSignalRequest(m: SendSignalRequest): Buffer {
  return new ProtoWriter().int32(1, m.processId).int32(2, m.signal).finish();
}

export function decodeSendSignalRequest(buf: Buffer): SendSignalRequest {
  let processId = 0;
  let signal = 0;
  for (const f of readFields(buf)) {
    if (f.field === 1 && f.wireType === WIRE_VARINT) processId = toInt32(f.value);
    else if (f.field === 2 && f.wireType === WIRE_VARINT) signal = toInt32(f.value);
  }
  return { processId, signal };
}

export function encodeResizeTtyRequest(m: ResizeTtyRequest): Buffer {
  return new ProtoWriter().int32(1, m.processId).uint32(2, m.cols).uint32(3, m.rows).finish();
}

export function decodeResizeTtyRequest(buf: Buffer): ResizeTtyRequest {
  let processId = 0;
  let cols = 0;
  let rows = 0;
  for (const f of readFields(buf)) {
    if (f.wireType !== WIRE_VARINT) continue;
    if (f.field === 1) processId = toInt32(f.value);
    else if (f.field === 2) cols = f.value;
    else if (f.field === 3) rows = f.value;
  }
  return { processId, cols, rows };
}

/** Empty messages: nothing to write, and every field read is unknown. */
export function encodeEmpty(_m: Empty): Buffer {
  return EMPTY;
}

export function decodeEmpty(buf: Buffer): Empty {
  // Read only to reject a malformed encoding; every field is unknown.
  void [...readFields(buf)];
  return {};
}

/** The service's full name, as gRPC paths spell it (`/process.v1.ProcessService/Start`). */
export const PROCESS_SERVICE = 'process.v1.ProcessService';

function method<Req, Res>(name: string, responseStream: boolean, requestSerialize: (m: Req) => Buffer, requestDeserialize: (b: Buffer) => Req,
  responseSerialize: (m: Res) => Buffer, responseDeserialize: (b: Buffer) => Res) {
  return { path: `/${PROCESS_SERVICE}/${name}`, requestStream: false, responseStream, requestSerialize, requestDeserialize, responseSerialize, responseDeserialize };
}

/**
 * The service's methods: each one's path, whether it streams its responses, and its messages'
 * codec. The shape of a grpc-js ServiceDefinition (the runtime serves it, tests make clients of it
 * with makeGenericClientConstructor), spelled without grpc-js, which the SDK does not depend on.
 */
export const PROCESS_SERVICE_DEFINITION = {
  Start: method('Start', true, encodeStartRequest, decodeStartRequest, encodeStartResponse, decodeStartResponse),
  Execute: method('Execute', false, encodeExecuteRequest, decodeExecuteRequest, encodeExecuteResponse, decodeExecuteResponse),
  WriteStdin: method('WriteStdin', false, encodeWriteStdinRequest, decodeWriteStdinRequest, encodeEmpty, decodeEmpty),
  SendSignal: method('SendSignal', false, encodeSendSignalRequest, decodeSendSignalRequest, encodeEmpty, decodeEmpty),
  ResizeTTY: method('ResizeTTY', false, encodeResizeTtyRequest, decodeResizeTtyRequest, encodeEmpty, decodeEmpty),
};
