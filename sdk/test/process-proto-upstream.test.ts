/**
 * The shared process.v1 codec (sdk/src/process-proto.ts) byte for byte against upstream's own
 * generated Python classes (k8s-agent-sandbox 1.0.8's process_pb2 on protobuf's upb runtime, from
 * the venv hack/python-sdk-venv.sh caches): each message built there from its JSON form and
 * serialized must be exactly what the codec writes, and must decode to the same message here. Maps
 * have one entry per case: protobuf leaves the order of map entries on the wire unspecified.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as proto from '../src/process-proto';

const VENV_SCRIPT = fileURLToPath(new URL('../../hack/python-sdk-venv.sh', import.meta.url));

const SERIALIZE = `
import base64, json, sys
from google.protobuf import json_format
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as p
out = []
for case in json.load(sys.stdin):
    message = json_format.ParseDict(case['json'], getattr(p, case['type'])())
    out.append(message.SerializeToString().hex())
print(json.dumps(out))
`;

const b64 = (text: string) => Buffer.from(text).toString('base64');

interface Case<T> {
  /** The upstream message's name in process_pb2. */
  readonly type: string;
  /** Its proto3 JSON form (field names as in the .proto; bytes in base64). */
  readonly json: object;
  readonly value: T;
  readonly encode: (m: T) => Buffer;
  readonly decode: (b: Buffer) => T;
}

const c = <T>(type: string, json: object, value: T, encode: (m: T) => Buffer, decode: (b: Buffer) => T): Case<unknown> =>
  ({ type, json, value, encode, decode } as Case<unknown>);

const CASES: readonly Case<unknown>[] = [
  c('ProcessConfig', { command: ['ls', '-l'], env_vars: { A: '1' }, cwd: '' },
    { command: ['ls', '-l'], envVars: { A: '1' }, cwd: '' }, proto.encodeProcessConfig, proto.decodeProcessConfig),
  c('ProcessConfig', { command: ['sh', 'h\u00e9'], env_vars: { A: '' } },
    { command: ['sh', 'h\u00e9'], envVars: { A: '' } }, proto.encodeProcessConfig, proto.decodeProcessConfig),
  c('ProcessConfig', { command: [], env_vars: { '': '\u2603' } }, { command: [], envVars: { '': '\u2603' } }, proto.encodeProcessConfig, proto.decodeProcessConfig),
  c('StartRequest', { config: { command: ['sh'] }, pty: { cols: 80, rows: 24 } },
    { config: { command: ['sh'], envVars: {} }, pty: { cols: 80, rows: 24 } }, proto.encodeStartRequest, proto.decodeStartRequest),
  c('StartRequest', { config: { command: ['sh'], cwd: 'w' }, pty: {} },
    { config: { command: ['sh'], envVars: {}, cwd: 'w' }, pty: { cols: 0, rows: 0 } }, proto.encodeStartRequest, proto.decodeStartRequest),
  c('ExecuteRequest', { config: { command: ['true'], env_vars: { PATH: '/bin' } } },
    { config: { command: ['true'], envVars: { PATH: '/bin' } } }, proto.encodeExecuteRequest, proto.decodeExecuteRequest),
  c('ExecuteResponse', { exit_code: -1, stdout: b64('hi') },
    { exitCode: -1, stdout: Buffer.from('hi'), stderr: Buffer.alloc(0) }, proto.encodeExecuteResponse, proto.decodeExecuteResponse),
  c('ExecuteResponse', { exit_code: 2147483647, stderr: Buffer.from([0, 255, 128]).toString('base64') },
    { exitCode: 2147483647, stdout: Buffer.alloc(0), stderr: Buffer.from([0, 255, 128]) }, proto.encodeExecuteResponse, proto.decodeExecuteResponse),
  c('StartResponse', { init: { process_id: 7 } }, { event: { init: { processId: 7 } } }, proto.encodeStartResponse, proto.decodeStartResponse),
  c('StartResponse', { stdout: '' }, { event: { stdout: Buffer.alloc(0) } }, proto.encodeStartResponse, proto.decodeStartResponse),
  c('StartResponse', { stderr: b64('x') }, { event: { stderr: Buffer.from('x') } }, proto.encodeStartResponse, proto.decodeStartResponse),
  c('StartResponse', { exit: { exit_code: -15 } }, { event: { exit: { exitCode: -15 } } }, proto.encodeStartResponse, proto.decodeStartResponse),
  c('StartResponse', { exit: {} }, { event: { exit: { exitCode: 0 } } }, proto.encodeStartResponse, proto.decodeStartResponse),
  c('WriteStdinRequest', { process_id: 3, eof: {} }, { processId: 3, payload: { eof: true } }, proto.encodeWriteStdinRequest, proto.decodeWriteStdinRequest),
  c('WriteStdinRequest', { process_id: 3, input: b64('abc') }, { processId: 3, payload: { input: Buffer.from('abc') } },
    proto.encodeWriteStdinRequest, proto.decodeWriteStdinRequest),
  c('WriteStdinRequest', { process_id: 3, input: '' }, { processId: 3, payload: { input: Buffer.alloc(0) } },
    proto.encodeWriteStdinRequest, proto.decodeWriteStdinRequest),
  c('SendSignalRequest', { process_id: 1, signal: 'SIGNAL_SIGKILL' }, { processId: 1, signal: proto.Signal.SIGKILL },
    proto.encodeSendSignalRequest, proto.decodeSendSignalRequest),
  c('ResizeTTYRequest', { process_id: 2, cols: 300, rows: 40 }, { processId: 2, cols: 300, rows: 40 }, proto.encodeResizeTtyRequest, proto.decodeResizeTtyRequest),
  c('ResizeTTYRequest', { process_id: 2, cols: 4294967295 }, { processId: 2, cols: 4294967295, rows: 0 }, proto.encodeResizeTtyRequest, proto.decodeResizeTtyRequest),
];

let upstream: string[];

beforeAll(() => {
  const python = execFileSync(VENV_SCRIPT, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 }).trim().split('\n').pop()!;
  const run = spawnSync(python, ['-c', SERIALIZE], { input: JSON.stringify(CASES.map(({ type, json }) => ({ type, json }))), encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`upstream's classes failed: ${run.stderr || run.error?.message}`);
  upstream = JSON.parse(run.stdout);
}, 660_000);

test('upstream serialized every case', () => {
  expect(upstream).toHaveLength(CASES.length);
});

test.each(CASES.map((k, i) => [i, k.type, k] as const))('case %d, %s: the same bytes as upstream\'s, read back to the same message', (i, _type, k) => {
  expect(k.encode(k.value).toString('hex')).toBe(upstream[i]);
  expect(k.decode(Buffer.from(upstream[i], 'hex'))).toEqual(k.value);
});

test('a difference would show (negative control): upstream writes an empty map value, a writer that left it out would not match', () => {
  const index = CASES.findIndex((k) => k.type === 'ProcessConfig' && JSON.stringify(k.json).includes('"A":""'));
  const withoutEmptyValue = new proto.ProtoWriter().string(1, 'sh').string(1, 'h\u00e9').bytes(2, new proto.ProtoWriter().string(1, 'A').finish(), true).finish();
  expect(withoutEmptyValue.toString('hex')).not.toBe(upstream[index]);
  // Both spellings decode to the same message: the difference is in the bytes only.
  expect(proto.decodeProcessConfig(withoutEmptyValue)).toEqual(CASES[index].value);
});
