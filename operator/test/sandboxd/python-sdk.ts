/**
 * Runs a gRPC client written with upstream's own generated stubs (the Python SDK
 * k8s-agent-sandbox 1.0.8's k8s_agent_sandbox._proto.process.v1) against an address, from the venv
 * hack/python-sdk-venv.sh makes once and caches outside the work tree (the first run takes about a
 * minute). The client calls Execute, a Start stream and an Execute with an empty command, sending
 * the given metadata on each, and prints what it got as JSON.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../hack/python-sdk-venv.sh', import.meta.url));

const CLIENT = `
import json, sys, grpc
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as p, process_pb2_grpc as g
stub = g.ProcessServiceStub(grpc.insecure_channel(sys.argv[1]))
md = list(json.loads(sys.argv[2]).items())
out = {}
def status(e):
    return [e.code().name, e.details()]
try:
    r = stub.Execute(p.ExecuteRequest(config=p.ProcessConfig(
        command=['/bin/sh', '-c', 'echo "$X"; pwd; echo e >&2; exit 4'], env_vars={'X': 'from-python'}, cwd='sub')), timeout=30, metadata=md)
    out['execute'] = {'exit_code': r.exit_code, 'stdout': r.stdout.decode(), 'stderr': r.stderr.decode()}
except grpc.RpcError as e:
    out['execute'] = status(e)
events = []
try:
    req = p.StartRequest(config=p.ProcessConfig(command=['/bin/sh', '-c', 'head -c 9000 /dev/zero; kill -TERM $$']))
    for ev in stub.Start(req, timeout=30, metadata=md):
        kind = ev.WhichOneof('event')
        if kind == 'init':
            events.append(['init', ev.init.process_id])
        elif kind == 'exit':
            events.append(['exit', ev.exit.exit_code])
        else:
            events.append([kind, len(getattr(ev, kind))])
    out['start'] = events
except grpc.RpcError as e:
    out['start'] = status(e)
try:
    stub.Execute(p.ExecuteRequest(config=p.ProcessConfig(command=[])), timeout=30, metadata=md)
except grpc.RpcError as e:
    out['empty'] = status(e)
print(json.dumps(out))
`;

/**
 * The SDK's legacy-runtime Filesystem (direct connection, no router): `files.write` of bytes (a
 * `requests` multipart form) and of a binary stream (the SDK's own streamed framing), with a
 * non-ASCII name too, then read, list and exists.
 */
const FILES = `
import io, json, sys
from k8s_agent_sandbox.connector import SandboxConnector
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
from k8s_agent_sandbox.files.filesystem import Filesystem
fs = Filesystem(SandboxConnector('s', 'default', SandboxDirectConnectionConfig(api_url=sys.argv[1]), k8s_helper=None), None, 'test')
streamed = bytes(range(256)) * 1200
fs.write('py/bytes.txt', b'from the python sdk')
fs.write('py/streamed.bin', io.BytesIO(streamed))
fs.write('py/n\u00e4me.txt', 'unicode')
print(json.dumps({
    'read': fs.read('py/bytes.txt').decode(),
    'streamed_ok': fs.read('py/streamed.bin') == streamed,
    'list': sorted((e.name, e.type, e.size) for e in fs.list('py')),
    'exists': fs.exists('py/n\u00e4me.txt'),
}))
`;

async function venvPython(): Promise<string> {
  const venv = await run(SCRIPT, [], { timeout: 600_000 });
  return venv.stdout.trim().split('\n').pop()!;
}

/** What the Python client saw at `address` (host:port). */
export async function pythonClient(address: string, metadata: Record<string, string> = {}): Promise<any> {
  const { stdout } = await run(await venvPython(), ['-c', CLIENT, address, JSON.stringify(metadata)], { timeout: 60_000 });
  return JSON.parse(stdout);
}

/** What the SDK's Filesystem saw against the legacy runtime at `url` (http://host:port). */
export async function pythonFiles(url: string): Promise<any> {
  const { stdout } = await run(await venvPython(), ['-c', FILES, url], { timeout: 60_000 });
  return JSON.parse(stdout);
}

/** Checks a Start stream as the client printed it: init, stdout chunks of at most `chunk` bytes adding up to `total`, exit `exit`. */
export function expectStream(start: [string, number][], total: number, chunk: number, exit: number): void {
  expect(start[0]).toEqual(['init', expect.any(Number)]);
  expect(start[start.length - 1]).toEqual(['exit', exit]);
  const chunks = start.slice(1, -1);
  expect(chunks.every(([kind, n]) => kind === 'stdout' && n <= chunk)).toBe(true);
  expect(chunks.reduce((sum, [, n]) => sum + n, 0)).toBe(total);
}
