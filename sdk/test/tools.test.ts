/**
 * The sandbox tools (sdk/src/tools) against the real runtime process on 127.0.0.1: each tool's
 * result text and data, progress as output arrives (streamed /execute and gRPC), output cut to maxOutputBytes with
 * a note, binary files as base64, and the negative controls: bad input refused naming the field
 * before anything is sent, a failing command reported with its exit code, a missing file as a
 * tool error.
 */
import { handleFor, runtimeFixture } from './handle';
import { freePort } from './runtime-process';
import { SandboxConfigError, SandboxSuspendedError } from '../src/errors';
import type { SandboxHandle } from '../src/sandbox';
import { callSandboxTool, parseDuration, SANDBOX_TOOL_NAMES, sandboxTools, SandboxToolError, type SandboxTool, type ToolProgress } from '../src/tools/index';
import { shareBudget, truncateMiddle } from '../src/tools/text';

const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
const tools = (options = {}): SandboxTool[] => sandboxTools(fixture().sandbox, options);
const find = (list: SandboxTool[], name: string): SandboxTool => list.find((t) => t.name === name)!;
const run = (name: string, input: unknown, options = {}) => find(tools(options), name).execute(input);

describe('the definitions', () => {
  test('every tool but extend_ttl by default, each with an object JSON Schema that names its required fields', () => {
    const list = tools();
    expect(list.map((t) => t.name)).toEqual(['execute_command', 'write_file', 'read_file', 'list_files', 'file_exists', 'remove_file']);
    for (const t of list) {
      expect(t.description.length).toBeGreaterThan(20);
      expect(t.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      for (const key of t.inputSchema.required) expect(t.inputSchema.properties[key]).toBeDefined();
    }
    expect(sandboxTools(fixture().sandbox, { tools: SANDBOX_TOOL_NAMES }).map((t) => t.name)).toContain('extend_ttl');
  });

  test('bad options are refused naming the option', () => {
    expect(() => tools({ maxOutputBytes: 10 })).toThrow(new SandboxConfigError('maxOutputBytes', 'must be a whole number of bytes, at least 256, got 10'));
    expect(() => tools({ tools: ['run_everything'] })).toThrow(/tools: unknown tool "run_everything"/);
    expect(() => tools({ defaultTimeoutSeconds: 900 })).toThrow(/defaultTimeoutSeconds: .*at most maxTimeoutSeconds \(600\)/);
  });

  test('the sandbox is only asked for when a valid call needs it (a lazy claim is not made for a bad input)', async () => {
    let asked = 0;
    const lazy = sandboxTools(async () => {
      asked++;
      return fixture().sandbox;
    });
    await expect(find(lazy, 'execute_command').execute({})).rejects.toThrow(SandboxConfigError);
    expect(asked).toBe(0);
    await find(lazy, 'file_exists').execute({ path: 'nothing-here' });
    expect(asked).toBe(1);
  });
});

describe('execute_command', () => {
  test('exit code, stdout and stderr as text; the same as data', async () => {
    const result = await run('execute_command', { command: 'echo hello; echo warn >&2' });
    expect(result.text).toBe('exit code: 0\nstdout:\nhello\nstderr:\nwarn');
    expect(result.data).toEqual({ exitCode: 0, timedOut: false, stdoutBytesOmitted: 0, stderrBytesOmitted: 0 });
  });

  test('negative control: a failing command is a result with its exit code, not an error', async () => {
    const result = await run('execute_command', { command: 'echo "No such thing" >&2; exit 3' });
    expect(result.text).toBe('exit code: 3\nstderr:\nNo such thing');
    expect(result.data.exitCode).toBe(3);
  });

  test('timeout_seconds kills the command and says so; cwd runs it in a subdirectory', async () => {
    const timedOut = await run('execute_command', { command: 'echo started; sleep 30', timeout_seconds: 1 });
    expect(timedOut.text).toMatch(/^timed out after 1 s and was killed \(exit code 124\)\nstdout:\nstarted\n/);
    expect(timedOut.data).toMatchObject({ exitCode: 124, timedOut: true });
    await fixture().sandbox.files.write('sub/marker', 'x');
    expect((await run('execute_command', { command: 'ls', cwd: 'sub' })).text).toBe('exit code: 0\nstdout:\nmarker');
    expect((await run('execute_command', { command: 'true' })).text).toBe('exit code: 0\n(no output)');
  });

  test('progress: output arrives through onProgress before the result (run over gRPC)', async () => {
    const streaming = handleFor(fixture().runtime.url, { grpcUrl: fixture().runtime.grpcUrl });
    const events: Array<ToolProgress | 'result'> = [];
    const tool = find(sandboxTools(streaming), 'execute_command');
    const pending = tool.execute(
      { command: 'for i in 1 2 3; do echo line$i; sleep 0.1; done; echo oops >&2' },
      { onProgress: (p) => events.push(p) },
    ).then((r) => {
      events.push('result');
      return r;
    });
    const result = await pending;
    expect(events).toEqual([
      { stream: 'stdout', text: 'line1\n' }, { stream: 'stdout', text: 'line2\n' }, { stream: 'stdout', text: 'line3\n' },
      { stream: 'stderr', text: 'oops\n' }, 'result',
    ]);
    expect(result.text).toBe('exit code: 0\nstdout:\nline1\nline2\nline3\nstderr:\noops');
  });

  test('progress over the runtime\'s streamed /execute (the default): each line before the result', async () => {
    const events: Array<ToolProgress | 'result'> = [];
    const result = await find(tools(), 'execute_command').execute(
      { command: 'for i in 1 2 3; do echo line$i; sleep 0.1; done' },
      { onProgress: (p) => events.push(p) },
    );
    events.push('result');
    expect(events).toEqual([{ stream: 'stdout', text: 'line1\n' }, { stream: 'stdout', text: 'line2\n' }, { stream: 'stdout', text: 'line3\n' }, 'result']);
    expect(result.text).toBe('exit code: 0\nstdout:\nline1\nline2\nline3');
  });

  test('the options\' onProgress serves when the call gives none', async () => {
    const seen: ToolProgress[] = [];
    await find(sandboxTools(fixture().sandbox, { onProgress: (p) => seen.push(p) }), 'execute_command').execute({ command: 'echo hi' });
    expect(seen).toEqual([{ stream: 'stdout', text: 'hi\n' }]);
  });

  test('output over maxOutputBytes is cut in the middle with a note; stdout and stderr share the budget', async () => {
    const result = await run('execute_command', { command: 'seq 1 5000; echo the-end; echo err >&2' }, { maxOutputBytes: 1000 });
    expect(Buffer.byteLength(result.text)).toBeLessThan(1200);
    expect(result.text).toMatch(/^exit code: 0\nstdout:\n1\n2\n3\n/);
    expect(result.text).toMatch(/\[\.\.\. \d+ of 23901 bytes left out \.\.\.\]/);
    expect(result.text).toMatch(/the-end\nstderr:\nerr$/);
    expect(result.data.stdoutBytesOmitted).toBeGreaterThan(22_000);
  });

  test('negative controls: bad input is refused naming the field, and nothing runs', async () => {
    const tool = find(tools(), 'execute_command');
    await expect(tool.execute({})).rejects.toThrow(new SandboxConfigError('command', 'is required'));
    await expect(tool.execute({ command: '' })).rejects.toThrow(new SandboxConfigError('command', 'must not be empty'));
    await expect(tool.execute({ command: 42 })).rejects.toThrow(new SandboxConfigError('command', 'must be a string, got number 42'));
    await expect(tool.execute({ command: 'touch ran', timeout_seconds: 0 })).rejects.toThrow(new SandboxConfigError('timeout_seconds', 'must be between 1 and 600, got 0'));
    await expect(tool.execute({ command: 'touch ran', timeout_seconds: '5' })).rejects.toThrow(/^timeout_seconds: must be a number/);
    await expect(tool.execute({ command: 'touch ran', shell: false })).rejects.toThrow(/^shell: is not a parameter of this tool \(its parameters: command, timeout_seconds, cwd\)/);
    await expect(tool.execute('touch ran')).rejects.toThrow(new SandboxConfigError('input', 'must be a JSON object, got the string "touch ran"'));
    expect(await fixture().sandbox.files.exists('ran')).toBe(false);
  });
});

describe('files', () => {
  test('write_file, read_file, list_files, file_exists, remove_file', async () => {
    expect((await run('write_file', { path: 'app/main.py', content: 'print("hi")\n' })).text).toBe('wrote 12 bytes to app/main.py');
    expect((await run('read_file', { path: 'app/main.py' })).text).toBe('print("hi")\n');
    await run('write_file', { path: 'app/data/x.txt', content: '' });
    const listed = await run('list_files', { path: 'app' });
    expect(listed.text).toBe('2 entries in app:\ndata/\nmain.py (12 bytes)');
    expect(listed.data.entries).toEqual([{ name: 'data', type: 'directory', size: expect.any(Number) }, { name: 'main.py', type: 'file', size: 12 }]);
    expect((await run('read_file', { path: 'app/data/x.txt' })).text).toBe('(the file is empty)');
    expect((await run('file_exists', { path: 'app/main.py' })).text).toBe('app/main.py exists');
    expect((await run('remove_file', { path: 'app/main.py' })).text).toBe('removed app/main.py');
    expect(await run('file_exists', { path: 'app/main.py' })).toEqual({ text: 'app/main.py does not exist', data: { path: 'app/main.py', exists: false } });
    await expect(run('remove_file', { path: 'app' })).rejects.toThrow('app is a directory that is not empty: pass recursive: true to remove it with its contents');
    expect((await run('remove_file', { path: 'app', recursive: true })).text).toBe('removed app');
    expect((await run('list_files', {})).text).not.toMatch(/\bapp\//);
  });

  test('binary content goes both ways as base64; as utf8 it is refused with what to do', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10]);
    expect((await run('write_file', { path: 'bin/blob', content: bytes.toString('base64'), encoding: 'base64' })).text).toBe('wrote 7 bytes to bin/blob');
    expect((await fixture().sandbox.files.read('bin/blob')).equals(bytes)).toBe(true);
    expect((await run('read_file', { path: 'bin/blob', encoding: 'base64' })).text).toBe(bytes.toString('base64'));
    await expect(run('read_file', { path: 'bin/blob' })).rejects.toThrow(new SandboxToolError('bin/blob is not UTF-8 text (a binary file?): read it with encoding "base64"'));
    await expect(run('write_file', { path: 'bin/x', content: 'not base64!', encoding: 'base64' })).rejects.toThrow(new SandboxConfigError('content', 'is not valid base64 (encoding is "base64")'));
    await expect(run('write_file', { path: 'bin/x', content: 'x', encoding: 'latin1' })).rejects.toThrow(new SandboxConfigError('encoding', 'must be one of "utf8", "base64", got "latin1"'));
  });

  test('read_file stops at max_bytes on a character boundary and says the file is longer', async () => {
    await fixture().sandbox.files.write('long.txt', 'é'.repeat(3000));
    const result = await run('read_file', { path: 'long.txt', max_bytes: 101 });
    expect(result.text).toBe(`${'é'.repeat(50)}\n[... read_file stopped after 100 bytes: the file is longer. Read less at a time with execute_command (e.g. "tail -c 4000 long.txt" or "sed -n 100,200p long.txt")]`);
    expect(result.data).toEqual({ path: 'long.txt', bytes: 100, truncated: true, encoding: 'utf8' });
    await expect(run('read_file', { path: 'long.txt', max_bytes: 1_000_000 })).rejects.toThrow(/^max_bytes: must be between 1 and 16384/);
  });

  test('negative controls: a missing file is a tool error saying so; a bad path is refused naming the field', async () => {
    await expect(run('read_file', { path: 'nope.txt' })).rejects.toThrow(expect.objectContaining({ name: 'SandboxToolError', message: 'nope.txt: no such file' }));
    await expect(run('list_files', { path: 'no-dir' })).rejects.toThrow(expect.objectContaining({ name: 'SandboxToolError', message: 'no-dir: no such directory' }));
    await expect(run('remove_file', { path: 'nope.txt' })).rejects.toThrow(expect.objectContaining({ name: 'SandboxToolError', message: 'nope.txt: no such file or directory' }));
    await expect(run('write_file', { path: 'x' })).rejects.toThrow(new SandboxConfigError('content', 'is required'));
    // The router's 409 for a suspended sandbox is not the runtime's "directory not empty".
    const asleep = {
      files: {
        remove: async () => {
          throw new SandboxSuspendedError(409, { detail: 'Sandbox default/sb-test is suspended.', reason: 'SandboxSuspended' }, 'DELETE', '/delete/app', 'sb-test');
        },
      },
    } as unknown as SandboxHandle;
    await expect(find(sandboxTools(asleep), 'remove_file').execute({ path: 'app' })).rejects.toThrow(SandboxSuspendedError);
    await expect(run('write_file', { path: '', content: 'x' })).rejects.toThrow(new SandboxConfigError('path', 'must not be empty'));
    await expect(run('write_file', { path: '../../etc/passwd', content: 'x' })).rejects.toThrow(SandboxConfigError);
  });
});

describe('extend_ttl', () => {
  const handle = (expiry: Date | undefined, calls: number[]): SandboxHandle => ({
    extendTtl: async (ttl: number) => {
      calls.push(ttl);
      return expiry;
    },
  } as unknown as SandboxHandle);

  test('passes the ttl in seconds and reports the new expiry; refuses a ttl over maxTtl', async () => {
    const calls: number[] = [];
    const tool = find(sandboxTools(handle(new Date('2030-01-01T00:30:00Z'), calls), { tools: ['extend_ttl'], maxTtl: '1h' }), 'extend_ttl');
    expect((await tool.execute({ ttl: '30m' })).text).toBe('the sandbox now expires at 2030-01-01T00:30:00.000Z');
    expect((await tool.execute({ ttl: '90' })).data).toEqual({ expiresAt: '2030-01-01T00:30:00.000Z' });
    expect(calls).toEqual([1800, 90]);
    await expect(tool.execute({ ttl: '2h' })).rejects.toThrow(new SandboxConfigError('ttl', 'must be at most 60 minutes, got "2h"'));
    await expect(tool.execute({ ttl: 'soon' })).rejects.toThrow(/^ttl: must be a number of seconds or a string like/);
    expect(calls).toHaveLength(2);
  });

  test('a claim without a ttl has no expiry to move', async () => {
    const tool = find(sandboxTools(handle(undefined, []), { tools: ['extend_ttl'] }), 'extend_ttl');
    expect((await tool.execute({ ttl: '10m' })).text).toBe('the sandbox has no expiry: it lives until it is released');
  });
});

test('callSandboxTool: failures and unknown tools become error text for the model', async () => {
  const list = tools();
  expect(await callSandboxTool(list, 'file_exists', { path: 'x' })).toEqual({ text: 'x does not exist', isError: false, data: { path: 'x', exists: false } });
  expect(await callSandboxTool(list, 'read_file', { path: 'missing' })).toEqual({ text: 'Error: missing: no such file', isError: true });
  expect(await callSandboxTool(list, 'read_file', {})).toEqual({ text: 'Invalid input: path: is required', isError: true });
  expect((await callSandboxTool(list, 'rm_rf', {})).text).toBe('Error: there is no tool "rm_rf"; the tools are execute_command, write_file, read_file, list_files, file_exists, remove_file');
});

test('text helpers: cuts on UTF-8 boundaries, budgets shared', () => {
  const cut = truncateMiddle('€'.repeat(1000), 100);
  expect(cut.text).not.toContain('\uFFFD');
  expect(cut.omittedBytes).toBeGreaterThan(2800);
  expect(shareBudget(10, 20, 100)).toEqual([10, 20]);
  expect(shareBudget(10, 500, 100)).toEqual([10, 90]);
  expect(shareBudget(500, 500, 100)).toEqual([50, 50]);
  expect(parseDuration('90', 'ttl')).toBe(90_000);
  expect(parseDuration('1h30m', 'ttl')).toBe(5_400_000);
});
