/**
 * sandboxd's `process.v1.ProcessService` messages and service table, encoded by hand with
 * `./protowire`. Field numbers and types are those of upstream's
 * `packages/sandboxd/spec/process/v1/process.proto` (kubernetes-sigs/agent-sandbox), the same
 * descriptor the Python SDK 1.0.8 ships compiled.
 *
 * Decoding follows protobuf's rules: unknown fields (and known numbers with an unexpected wire
 * type) are skipped, a repeated embedded message merges (its encodings are concatenated before
 * decoding), the last member of a oneof wins, `cwd` and `pty` keep their presence.
 */
import type { ServiceDefinition } from '@grpc/grpc-js';
import { ProtoWriter, readFields, toInt32, WIRE_BYTES, WIRE_VARINT } from './protowire';

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
    w.bytes(2, new ProtoWriter().string(1, key).string(2, value).finish(), true);
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

export const PROCESS_SERVICE = 'process.v1.ProcessService';

function method<Req, Res>(name: string, streaming: boolean, encReq: (m: Req) => Buffer, decReq: (b: Buffer) => Req,
  encRes: (m: Res) => Buffer, decRes: (b: Buffer) => Res) {
  return {
    path: `/${PROCESS_SERVICE}/${name}`,
    requestStream: false,
    responseStream: streaming,
    requestSerialize: encReq,
    requestDeserialize: decReq,
    responseSerialize: encRes,
    responseDeserialize: decRes,
  };
}

/** The service table for grpc-js servers and clients (`makeGenericClientConstructor`). */
export const PROCESS_SERVICE_DEFINITION = {
  Start: method('Start', true, encodeStartRequest, decodeStartRequest, encodeStartResponse, decodeStartResponse),
  Execute: method('Execute', false, encodeExecuteRequest, decodeExecuteRequest, encodeExecuteResponse, decodeExecuteResponse),
  WriteStdin: method('WriteStdin', false, encodeWriteStdinRequest, decodeWriteStdinRequest, encodeEmpty, decodeEmpty),
  SendSignal: method('SendSignal', false, encodeSendSignalRequest, decodeSendSignalRequest, encodeEmpty, decodeEmpty),
  ResizeTTY: method('ResizeTTY', false, encodeResizeTtyRequest, decodeResizeTtyRequest, encodeEmpty, decodeEmpty),
} satisfies ServiceDefinition;
