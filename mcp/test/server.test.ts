/**
 * A session's MCP server with the official MCP client over the SDK's in-memory transport, its tools
 * running against the real runtime process: the tool list, the lazy claim, a Python program written
 * and run with its output as progress notifications before the result (log messages without a
 * progress token, capped at maxOutputBytes), the file read back, upstream's names and parameters, the per-session limit, cancellation, the idle
 * release; and the negative controls (bad input named, a failing command's exit code).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, type CallToolResult, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { runtimeClaims, sessionServer, type Claims } from './fixture';
import type { SessionOptions } from '../src/session';

const newClaims = runtimeClaims();

async function connect(claims: Claims, options: Partial<SessionOptions> = {}) {
  const made = sessionServer(claims, options);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await made.server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  const logs: LoggingMessageNotification['params'][] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  await client.connect(clientSide);
  const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { ...made, client, call, logs };
}

const text = (result: CallToolResult): string => (result.content[0] as { text: string }).text;

let open: Array<{ client: Client }> = [];
afterEach(async () => {
  await Promise.all(open.map((o) => o.client.close()));
  open = [];
});
async function connected(claims: Claims, options: Partial<SessionOptions> = {}) {
  const c = await connect(claims, options);
  open.push(c);
  return c;
}

test('lists the SDK\'s tools and upstream\'s; claims nothing until a tool needs the sandbox', async () => {
  const claims = newClaims();
  const { client, call, server } = await connected(claims);
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toEqual([
    'create_sandbox', 'execute_command', 'write_file', 'upload_file', 'read_file', 'download_file', 'list_files', 'file_exists', 'remove_file', 'extend_ttl',
    'get_sandbox_status', 'delete_sandbox',
  ]);
  const exec = tools.find((t) => t.name === 'execute_command')!;
  expect(exec.inputSchema).toMatchObject({ type: 'object', required: ['command'], properties: { command: { type: 'string' }, timeout_seconds: { type: 'number' }, sandbox_claim_name: { type: 'string' } } });
  expect(client.getInstructions()).toMatch(/claimed from the warm pool "python-pool" when a tool first needs it/);
  expect(text(await call('get_sandbox_status'))).toMatch(/^no sandbox yet/);
  expect(claims.made).toEqual([]);
  expect(text(await call('file_exists', { path: 'x' }))).toBe('x does not exist');
  expect(claims.made).toEqual(['claim-1']);
  expect(text(await call('get_sandbox_status'))).toBe('SandboxReady: sandbox sb-test (claim claim-1, namespace default); expires at 2030-01-01T00:00:00.000Z');
  void server;
});

test('a Python program written and run: its output arrives as progress notifications (not also log messages) before the result; the file reads back', async () => {
  const claims = newClaims();
  const { client, call, logs } = await connected(claims);
  const program = 'import time\nfor i in range(3):\n    print(f"step {i}", flush=True)\n    time.sleep(0.2)\nprint("done")\n';
  expect(text(await call('write_file', { path: 'work/steps.py', content: program }))).toBe(`wrote ${Buffer.byteLength(program)} bytes to work/steps.py`);

  const progress: Progress[] = [];
  const result = await client.callTool({ name: 'execute_command', arguments: { command: 'python3 steps.py', cwd: 'work' } }, undefined, {
    onprogress: (p) => progress.push(p),
  }) as CallToolResult;
  expect(result.isError).toBeFalsy();
  expect(text(result)).toBe('exit code: 0\nstdout:\nstep 0\nstep 1\nstep 2\ndone');
  // Delivered before the response (the client stops listening for a call's progress when it ends).
  expect(progress.length).toBeGreaterThanOrEqual(1);
  expect(progress.map((p) => p.message).join('')).toBe('step 0\nstep 1\nstep 2\ndone\n');
  expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1));
  expect(logs.filter((l) => l.logger === 'execute_command/stdout')).toEqual([]);

  expect(text(await call('read_file', { path: 'work/steps.py' }))).toBe(program);
  expect(text(await call('download_file', { path: 'work/steps.py', binary: true }))).toBe(Buffer.from(program).toString('base64'));
  expect(text(await call('list_files', { path: 'work' }))).toBe(`1 entry in work:\nsteps.py (${Buffer.byteLength(program)} bytes)`);
  expect(claims.made).toHaveLength(1);
});

test('a call that claims the sandbox says so while it waits: a progress notification, or a log message without a progress token', async () => {
  const claims = newClaims();
  const { client, logs } = await connected(claims);
  const progress: Progress[] = [];
  const result = await client.callTool({ name: 'file_exists', arguments: { path: 'x' } }, undefined, { onprogress: (p) => progress.push(p) }) as CallToolResult;
  expect(text(result)).toBe('x does not exist');
  expect(progress).toEqual([{ progress: 1, message: 'claiming a sandbox from the warm pool "python-pool"\n' }]);
  expect(logs).toEqual([]);
  // The sandbox is claimed now: the next call says nothing of the kind.
  await client.callTool({ name: 'file_exists', arguments: { path: 'x' } }, undefined, { onprogress: (p) => progress.push(p) });
  expect(progress).toHaveLength(1);
});

test('without a progress token: the claim and the output as log messages, coalesced, capped at maxOutputBytes with a note of the rest', async () => {
  const { client, logs } = await connected(newClaims());
  const result = await client.callTool({ name: 'execute_command', arguments: { command: 'head -c 40000 /dev/zero | tr "\\0" x' } }) as CallToolResult;
  expect(result.isError).toBeFalsy();
  expect(logs[0]).toEqual({ level: 'info', logger: 'agent-sandbox-mcp', data: 'claiming a sandbox from the warm pool "python-pool"\n' });
  const output = logs.filter((l) => l.logger === 'execute_command/stdout').map((l) => String(l.data)).join('');
  expect(output).toBe('x'.repeat(16_384));
  expect(logs.length).toBeLessThan(20);
  expect(logs[logs.length - 1]).toEqual({ level: 'info', logger: 'agent-sandbox-mcp', data: `… ${40_000 - 16_384} bytes more not sent\n` });
});

test('logging/setLevel above info silences the log messages; progress still arrives', async () => {
  const { client, logs } = await connected(newClaims());
  await client.setLoggingLevel('warning');
  const progress: Progress[] = [];
  await client.callTool({ name: 'execute_command', arguments: { command: 'echo a; sleep 0.1; echo b' } }, undefined, { onprogress: (p) => progress.push(p) });
  expect(progress.length).toBeGreaterThanOrEqual(1);
  expect(logs).toEqual([]);
});

test('negative controls: bad input is an error result naming the field; a failing command is a result with its exit code; an unknown tool is a protocol error', async () => {
  const claims = newClaims();
  const { client, call } = await connected(claims);
  const missing = await call('execute_command', { timeout_seconds: 5 });
  expect(missing).toEqual({ content: [{ type: 'text', text: 'Invalid input: command: is required' }], isError: true });
  expect(text(await call('write_file', { path: 'a', content: 'x', encoding: 'utf16' }))).toBe('Invalid input: encoding: must be one of "utf8", "base64", got "utf16"');
  expect(claims.made).toEqual([]);
  const failed = await call('execute_command', { command: 'python3 -c "import sys; sys.exit(3)"' });
  expect(failed).toEqual({ content: [{ type: 'text', text: 'exit code: 3\n(no output)' }] });
  expect(text(await call('read_file', { path: 'no/such.txt' }))).toBe('Error: no/such.txt: no such file');
  await expect(client.callTool({ name: 'format_disk', arguments: {} })).rejects.toThrow(/unknown tool "format_disk"/);
});

test('upstream\'s names and parameters: create_sandbox returns the claim, later calls name it; upload_file binary; timeout', async () => {
  const claims = newClaims();
  const { call } = await connected(claims);
  const created = await call('create_sandbox', { warmpool: 'python-pool', namespace: 'default', shutdown_after_seconds: 300 });
  expect(text(created)).toBe('claimed sandbox sb-test: claim claim-1, namespace default, expires at 2030-01-01T00:00:00.000Z');
  expect(claims.ttls).toEqual(['300s']);
  expect(text(await call('create_sandbox', {}))).toMatch(/^this session already has sandbox sb-test: claim claim-1/);
  const target = { sandbox_claim_name: 'claim-1', namespace: 'default' };
  expect(text(await call('upload_file', { ...target, path: 'b.bin', content: Buffer.from([1, 2, 3]).toString('base64'), binary: true, timeout: 30 }))).toBe('wrote 3 bytes to b.bin');
  expect(text(await call('execute_command', { ...target, command: 'wc -c < b.bin', timeout: 10 }))).toBe('exit code: 0\nstdout:\n3');
  expect(text(await call('execute_command', { ...target, command: 'sleep 5', timeout: 1 }))).toMatch(/^timed out after 1 s/);
  // Negative controls: another claim, another namespace, another pool.
  expect(text(await call('file_exists', { path: 'b.bin', sandbox_claim_name: 'claim-9' }))).toBe('Invalid input: sandbox_claim_name: this session\'s sandbox is claim "claim-1", not "claim-9"');
  expect(text(await call('file_exists', { path: 'b.bin', namespace: 'other' }))).toBe('Invalid input: namespace: this server\'s sandboxes are in namespace "default", not "other"');
  expect(text(await call('create_sandbox', { warmpool: 'gpu-pool' }))).toBe('Invalid input: warmpool: this server claims from pool "python-pool" only');
  expect(text(await call('create_sandbox', { ttl: '48h' }))).toBe('Invalid input: ttl: must be at most 24h');
  expect(claims.made).toEqual(['claim-1']);
});

test('delete_sandbox releases the claim; the next tool claims a new sandbox', async () => {
  const claims = newClaims();
  const { call } = await connected(claims);
  await call('create_sandbox', { ttl: '5m' });
  expect(claims.ttls).toEqual(['5m']);
  expect(text(await call('delete_sandbox'))).toBe('released the sandbox: claim claim-1 deleted');
  expect(claims.released).toEqual(['claim-1']);
  expect(text(await call('delete_sandbox'))).toBe('this session has no sandbox to release');
  expect(text(await call('file_exists', { path: 'x', sandbox_claim_name: 'claim-1' }))).toMatch(/^Invalid input: sandbox_claim_name: this session has no sandbox now/);
  await call('file_exists', { path: 'x' });
  expect(claims.made).toEqual(['claim-1', 'claim-2']);
});

test('the session\'s limit on concurrent calls: one over it is refused; a cancelled call frees its place', async () => {
  const claims = newClaims();
  const { client, call, session } = await connected(claims, { maxConcurrentCalls: 1 });
  const controller = new AbortController();
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const long = client.callTool({ name: 'execute_command', arguments: { command: 'echo started; sleep 60' } }, undefined, {
    signal: controller.signal,
    onprogress: () => started(),
  });
  await running;
  const refused = await call('file_exists', { path: 'x' });
  expect(refused.isError).toBe(true);
  expect(text(refused)).toMatch(/^Error: this session already runs 1 tool calls, its limit \(--max-concurrent-calls\)/);
  controller.abort(new Error('the user stopped it'));
  await expect(long).rejects.toThrow('the user stopped it');
  // The server's handler ends when the abort reaches the command (killed over gRPC).
  await waitUntil(() => session.activeCalls === 0);
  expect(text(await call('file_exists', { path: 'x' }))).toBe('x does not exist');
});

test('idle: after --idle-timeout without a call the sandbox is released, and the next call claims another', async () => {
  const claims = newClaims();
  const { call, session } = await connected(claims, { idleTimeoutMs: 50 });
  const released = new Promise<{ claim: string; why: string }>((resolve) => session.onRelease((claim, why) => resolve({ claim, why })));
  await call('execute_command', { command: 'echo hi' });
  expect(await released).toEqual({ claim: 'claim-1', why: 'no tool call for 0.05 s' });
  expect(claims.released).toEqual(['claim-1']);
  await call('execute_command', { command: 'echo again' });
  expect(claims.made).toEqual(['claim-1', 'claim-2']);
});

test('a failed claim is reported and tried again on the next call', async () => {
  const claims = newClaims();
  let fail = true;
  const { call } = await connected({
    ...claims,
    claim: async (ttl, signal) => {
      if (fail) {
        fail = false;
        throw new Error('pool python-pool not found');
      }
      return claims.claim(ttl, signal);
    },
  });
  expect(await call('file_exists', { path: 'x' })).toEqual({ content: [{ type: 'text', text: 'Error: pool python-pool not found' }], isError: true });
  expect(text(await call('file_exists', { path: 'x' }))).toBe('x does not exist');
});

/** Resolves once `condition` holds, checking after each turn of the event loop. */
async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
