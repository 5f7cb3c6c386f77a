/**
 * The MCP server (mcp/, the built agent-sandbox-mcp command) end to end on the local control plane,
 * driven by the official MCP client: over stdio (StdioClientTransport spawns the server) and over
 * streamable HTTP (StreamableHTTPClientTransport). The server claims a sandbox from a warm pool as a
 * ServiceAccount that may only use claims and reaches it through the router (--auth=kubernetes).
 * Output streams as progress notifications both ways the SDK runs commands: over stdio with
 * --grpc-port (sandboxd's gRPC ProcessService), over HTTP through the runtime's streamed /execute.
 * Covered: the tool list; a Python program written, run (progress before the result) and read
 * back; the claim deleted (checked in the Kubernetes API) when the client closes stdin, DELETEs its
 * HTTP session, or the server gets SIGTERM; the idle release; bad flags refused before starting.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { waitFor } from '../../../tools/control-plane/kube';
import { startMcpHttpServer } from '../../../tools/shared/mcp-server';
import { OperatorProcess } from '../../../tools/shared/operator-process';
import { DataPlane } from '../data-plane/data-plane';
import { serviceAccountKubeconfig, serviceAccountWithRole } from '../operator/bundle-rbac';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.join(ROOT, 'mcp', 'dist', 'cli.js');
const SESSION_LABEL = 'mcp.cdk8s-agent-sandbox.dev/session';
const PROGRAM = [
  'import time',
  'for i in range(4):',
  '    print(f"step {i}", flush=True)',
  '    time.sleep(0.2)',
  'print("sum", sum(range(10)))',
  '',
].join('\n');

let dp: DataPlane;
let router: OperatorProcess;
let routerUrl: string;
let kubeconfig: string;

beforeAll(async () => {
  // The server runs as built, as `npx agent-sandbox-mcp` would: the SDK's dist, then the server's.
  execFileSync('npx', ['tsc', '-p', 'sdk/tsconfig.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  execFileSync('npx', ['tsc', '-p', 'mcp/tsconfig.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  dp = await DataPlane.start('mcp', 2, { claims: 0, runtimeArgs: ['--grpc-port=9090'] });
  await dp.kube.applyServerSide(serviceAccountWithRole(dp.ns, 'mcp', MCP_RULES), 'mcp-test', dp.ns);
  kubeconfig = await serviceAccountKubeconfig(dp.kube, dp.api, dp.ns, 'mcp', `mcp-${dp.ns}`);
  router = await OperatorProcess.startRouter({ kubeconfig: dp.kube.kubeconfig, args: ['--auth=kubernetes', '--allowed-pod-cidrs=127.64.0.0/12'] });
  routerUrl = `http://127.0.0.1:${await router.port('proxy')}`;
}, 240_000);

afterAll(async () => {
  await router?.stop();
  await dp?.stop();
});

/** What the server's ServiceAccount may do: claims, their sandboxes through the router, and reading Sandboxes (get_sandbox_status). */
const MCP_RULES = [
  { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'] },
  { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims/connect'], verbs: ['create'] },
  { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get'] },
];

const serverArgs = (transport: 'stdio' | 'http', extra: string[] = []): string[] => [
  transport, '--pool', 'pool', '--namespace', dp.ns, '--kubeconfig', kubeconfig, '--router-url', routerUrl, '--ttl', '10m',
  ...(transport === 'stdio' ? ['--grpc-port', '9090'] : []), ...extra,
];
const text = (result: unknown): string => ((result as CallToolResult).content[0] as { text: string }).text;
const claimsOfServer = () => dp.ext.list('sandboxclaims', SESSION_LABEL);
const claimGone = (name: string) => waitFor(async () => (await dp.ext.get('sandboxclaims', name)) === undefined, 60_000, `claim ${name} to be deleted`);

/** Writes the program, runs it with progress, reads it back: what an agent does first. */
async function writeRunRead(client: Client): Promise<{ progress: Progress[]; result: string; readBack: string }> {
  expect(text(await client.callTool({ name: 'write_file', arguments: { path: 'job/steps.py', content: PROGRAM } }))).toBe(`wrote ${PROGRAM.length} bytes to job/steps.py`);
  const progress: Progress[] = [];
  const result = await client.callTool({ name: 'execute_command', arguments: { command: 'python3 steps.py', cwd: 'job', timeout_seconds: 60 } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  const readBack = text(await client.callTool({ name: 'read_file', arguments: { path: 'job/steps.py' } }));
  return { progress, result: text(result), readBack };
}

test('stdio: tools listed; a Python program written, run with its output as progress before the result, read back; the claim deleted when the client closes', async () => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...serverArgs('stdio')], stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const client = new Client({ name: 'integration', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining([
      'create_sandbox', 'execute_command', 'write_file', 'upload_file', 'read_file', 'download_file', 'list_files', 'file_exists', 'remove_file',
      'extend_ttl', 'get_sandbox_status', 'delete_sandbox',
    ]));
    // Listing claims nothing.
    expect(await claimsOfServer()).toEqual([]);

    const { progress, result, readBack } = await writeRunRead(client);
    expect(result).toBe('exit code: 0\nstdout:\nstep 0\nstep 1\nstep 2\nstep 3\nsum 45');
    // Notifications of a call are delivered before its result (the client drops any that come after).
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => p.message).join('')).toBe('step 0\nstep 1\nstep 2\nstep 3\nsum 45\n');
    expect(readBack).toBe(PROGRAM);

    // One claim, made by this session, with the server's ttl; the status read from the Sandbox.
    const claims = await claimsOfServer();
    expect(claims).toHaveLength(1);
    expect(claims[0].spec.warmPoolRef).toEqual({ name: 'pool' });
    expect(claims[0].spec.lifecycle).toMatchObject({ shutdownPolicy: 'Delete' });
    const status = text(await client.callTool({ name: 'get_sandbox_status', arguments: {} }));
    expect(status).toMatch(new RegExp(`^SandboxReady: sandbox \\S+ \\(claim ${claims[0].metadata.name}, namespace ${dp.ns}\\)`));
    // Negative control: a failing command is reported with its exit code.
    expect(text(await client.callTool({ name: 'execute_command', arguments: { command: 'python3 -c "raise SystemExit(4)"' } }))).toBe('exit code: 4\n(no output)');

    await client.close();
    await claimGone(claims[0].metadata.name);
    expect(stderr).toMatch(/stdin closed: releasing the sandbox and stopping/);
    expect(stderr).toMatch(new RegExp(`released sandbox \\S+ \\(claim ${claims[0].metadata.name} deleted\\): the MCP session ended`));
  } finally {
    await client.close();
  }
});

test('streamable HTTP: the same; two clients get two sandboxes; each session\'s DELETE deletes its claim; SIGTERM releases the rest', async () => {
  const server = startMcpHttpServer([CLI, ...serverArgs('http', ['--listen', '127.0.0.1:0'])]);
  try {
    const url = await server.url;
    const connect = async () => {
      const transport = new StreamableHTTPClientTransport(new URL(url));
      const client = new Client({ name: 'integration-http', version: '1.0.0' });
      await client.connect(transport);
      return { client, transport };
    };
    const a = await connect();
    const b = await connect();
    const { progress, result, readBack } = await writeRunRead(a.client);
    expect(result).toBe('exit code: 0\nstdout:\nstep 0\nstep 1\nstep 2\nstep 3\nsum 45');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(readBack).toBe(PROGRAM);
    // b has a sandbox of its own: a's file is not there.
    expect(text(await b.client.callTool({ name: 'file_exists', arguments: { path: 'job/steps.py' } }))).toBe('job/steps.py does not exist');
    const claims = await claimsOfServer();
    expect(claims).toHaveLength(2);
    const claimOf = (sessionId: string | undefined) => claims.find((c) => c.metadata.labels[SESSION_LABEL] === sessionId)!.metadata.name;
    const aClaim = claimOf(a.transport.sessionId);
    const bClaim = claimOf(b.transport.sessionId);

    // DELETE is answered once the sandbox is released.
    await a.transport.terminateSession();
    await a.client.close();
    const afterDelete = await dp.ext.get('sandboxclaims', aClaim);
    expect(afterDelete === undefined || afterDelete.metadata.deletionTimestamp !== undefined).toBe(true);
    await claimGone(aClaim);
    expect(await dp.ext.get('sandboxclaims', bClaim)).toBeDefined();

    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    await claimGone(bClaim);
    await b.client.close();
  } finally {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  }
});

test('idle: after --idle-timeout without a call the claim is deleted while the session stays; the next call claims a new sandbox', async () => {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, ...serverArgs('stdio', ['--idle-timeout', '2s'])], stderr: 'pipe' });
  const client = new Client({ name: 'integration-idle', version: '1.0.0' });
  await client.connect(transport);
  try {
    const created = text(await client.callTool({ name: 'create_sandbox', arguments: {} }));
    const first = /claim (\S+),/.exec(created)![1];
    expect(text(await client.callTool({ name: 'execute_command', arguments: { command: 'echo hi' } }))).toBe('exit code: 0\nstdout:\nhi');
    await claimGone(first);
    expect(text(await client.callTool({ name: 'get_sandbox_status', arguments: {} }))).toMatch(/^no sandbox yet/);
    expect(text(await client.callTool({ name: 'execute_command', arguments: { command: 'echo again' } }))).toBe('exit code: 0\nstdout:\nagain');
    const claims = await claimsOfServer();
    expect(claims.map((c) => c.metadata.name)).not.toContain(first);
    expect(claims).toHaveLength(1);
    await client.close();
    await claimGone(claims[0].metadata.name);
  } finally {
    await client.close();
  }
});

test('bad flags are refused before anything starts, naming the flag (exit code 2)', () => {
  const run = (args: string[]) => {
    try {
      execFileSync(process.execPath, [CLI, ...args], { stdio: 'pipe', timeout: 30_000 });
      return { code: 0, stderr: '' };
    } catch (err: any) {
      return { code: err.status, stderr: String(err.stderr) };
    }
  };
  expect(run(['http', '--pool', 'pool', '--listen', '0.0.0.0:8765'])).toEqual({ code: 2, stderr: expect.stringMatching(/^agent-sandbox-mcp: --listen: 0\.0\.0\.0 is not a loopback address/) });
  expect(run(['stdio', '--pool', 'pool', '--kubeconfig', '/nonexistent/kubeconfig'])).toEqual({ code: 2, stderr: expect.stringMatching(/^agent-sandbox-mcp: --kubeconfig: cannot load \/nonexistent\/kubeconfig/) });
});
