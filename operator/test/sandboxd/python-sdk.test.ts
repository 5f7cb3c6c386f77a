/**
 * Our runtime's gRPC ProcessService driven by upstream's own generated stubs: the ones the Python
 * SDK k8s-agent-sandbox 1.0.8 ships (k8s_agent_sandbox._proto.process.v1), in a venv that
 * hack/python-sdk-venv.sh makes once and caches outside the work tree (the first run takes about
 * a minute).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SandboxdServer } from '../../src/sandboxd/server';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

const CLIENT = `
import json, sys, grpc
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as p, process_pb2_grpc as g
stub = g.ProcessServiceStub(grpc.insecure_channel(sys.argv[1]))
out = {}
r = stub.Execute(p.ExecuteRequest(config=p.ProcessConfig(
    command=['/bin/sh', '-c', 'echo "$X"; pwd; echo e >&2; exit 4'], env_vars={'X': 'from-python'}, cwd='sub')), timeout=30)
out['execute'] = {'exit_code': r.exit_code, 'stdout': r.stdout.decode(), 'stderr': r.stderr.decode()}
events = []
for ev in stub.Start(p.StartRequest(config=p.ProcessConfig(command=['/bin/sh', '-c', 'head -c 9000 /dev/zero; kill -TERM $$'])), timeout=30):
    kind = ev.WhichOneof('event')
    if kind == 'init':
        events.append(['init', ev.init.process_id])
    elif kind == 'exit':
        events.append(['exit', ev.exit.exit_code])
    else:
        events.append([kind, len(getattr(ev, kind))])
out['start'] = events
try:
    stub.Execute(p.ExecuteRequest(config=p.ProcessConfig(command=[])), timeout=30)
except grpc.RpcError as e:
    out['empty'] = [e.code().name, e.details()]
print(json.dumps(out))
`;

let base: string;
let server: SandboxdServer;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sandboxd-python-')));
  mkdirSync(path.join(base, 'sub'));
  server = new SandboxdServer({ workspace: base, port: 0, listenAddress: '127.0.0.1', grpcPort: 0, execTimeoutMs: 60_000, maxOutputBytes: 1024, allowRoot: true });
  await server.start();
});

afterAll(async () => {
  await server.drain(1000);
  rmSync(base, { recursive: true, force: true });
});

test('upstream\'s generated Python stubs: Execute, a Start stream, and INVALID_ARGUMENT', async () => {
  const venv = await run(path.join(REPO, 'hack/python-sdk-venv.sh'), [], { timeout: 600_000 });
  const python = venv.stdout.trim().split('\n').pop()!;
  const { stdout } = await run(python, ['-c', CLIENT, `127.0.0.1:${server.grpcAddress!.port}`], { timeout: 60_000 });
  const out = JSON.parse(stdout);
  expect(out.execute).toEqual({ exit_code: 4, stdout: `from-python\n${path.join(base, 'sub')}\n`, stderr: 'e\n' });
  const start: [string, number][] = out.start;
  expect(start[0]).toEqual(['init', expect.any(Number)]);
  expect(start[start.length - 1]).toEqual(['exit', -1]);
  const chunks = start.slice(1, -1);
  expect(chunks.every(([kind, n]) => kind === 'stdout' && n <= 4096)).toBe(true);
  expect(chunks.reduce((sum, [, n]) => sum + n, 0)).toBe(9000);
  expect(out.empty).toEqual(['INVALID_ARGUMENT', 'command is required']);
}, 660_000);
