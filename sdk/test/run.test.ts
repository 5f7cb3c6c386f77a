/**
 * `sandbox.run` against the real runtime process on 127.0.0.1: shell and argv modes, exit codes,
 * the command time limit, env, cwd, stdin, the output callbacks, and bad input refused before any
 * request is sent.
 */
import { handleFor, runtimeFixture } from './handle';
import { SandboxApiError, SandboxConfigError, SandboxError, SandboxHttpError } from '../src/errors';

const fixture = runtimeFixture();

describe('run', () => {
  test('runs through a shell by default: pipes, && and variables work', async () => {
    const result = await fixture().sandbox.run('echo hello | tr a-z A-Z && echo "$((6 * 7))"');
    expect(result).toEqual({ stdout: 'HELLO\n42\n', stderr: '', exitCode: 0, timedOut: false });
  });

  test('argv mode passes shell syntax as plain arguments', async () => {
    const result = await fixture().sandbox.run('echo a | b', { shell: false });
    expect(result.stdout).toBe('a | b\n');
    expect(result.exitCode).toBe(0);
  });

  test('a non-zero exit and stderr come back as the result, not an error', async () => {
    const result = await fixture().sandbox.run('echo oops >&2; exit 3');
    expect(result).toMatchObject({ stdout: '', stderr: 'oops\n', exitCode: 3, timedOut: false });
  });

  test('timeoutMs kills the command and reports timedOut with exit code 124', async () => {
    const result = await fixture().sandbox.run('echo started; sleep 30', { timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(124);
    expect(result.stdout).toBe('started\n');
  });

  test('env and cwd', async () => {
    await fixture().sandbox.files.write('work/dir/marker', 'x');
    const result = await fixture().sandbox.run('echo "$GREETING"; ls', { env: { GREETING: 'hi there' }, cwd: 'work/dir' });
    expect(result.stdout).toBe('hi there\nmarker\n');
  });

  test('stdin is the command\'s standard input, also from a cwd, and leaves no file behind', async () => {
    const result = await fixture().sandbox.run('wc -l; cat >/dev/null', { stdin: 'one\ntwo\nthree\n', cwd: 'work/dir' });
    expect(result.stdout.trim()).toBe('3');
    expect(await fixture().sandbox.files.list('.agent-sandbox')).toEqual([]);
  });

  test('when the runtime refuses the command (a cwd outside the workspace), the stdin file is removed all the same', async () => {
    await expect(fixture().sandbox.run('cat', { stdin: 'secret\n', cwd: '../..' })).rejects.toThrow(SandboxHttpError);
    expect(await fixture().sandbox.files.list('.agent-sandbox')).toEqual([]);
  });

  test('onStdout and onStderr get the output', async () => {
    const out: string[] = [];
    const err: string[] = [];
    await fixture().sandbox.run('echo out; echo err >&2', { onStdout: (c) => out.push(c), onStderr: (c) => err.push(c) });
    expect(out.join('')).toBe('out\n');
    expect(err.join('')).toBe('err\n');
  });

  test('bad input is refused before sending, naming the field', async () => {
    await expect(fixture().sandbox.run('')).rejects.toThrow(SandboxConfigError);
    await expect(fixture().sandbox.run('true', { timeoutMs: 0 })).rejects.toThrow(/timeoutMs/);
    await expect(fixture().sandbox.run('true', { env: { 'A=B': 'x' } })).rejects.toThrow(/env\.A=B/);
    await expect(fixture().sandbox.run('cat', { shell: false, stdin: 'x' })).rejects.toThrow(/stdin: needs shell: true/);
  });

  test('an aborted signal stops the wait with its reason', async () => {
    const controller = new AbortController();
    const pending = fixture().sandbox.run('sleep 5', { signal: controller.signal, timeoutMs: 5000 });
    controller.abort(new Error('agent gave up'));
    await expect(pending).rejects.toThrow('agent gave up');
  });

  test('await using closes the handle: close() deletes the claim (here with no cluster, so it fails) and the handle refuses calls', async () => {
    const handle = handleFor(fixture().runtime.url);
    const leave = async () => {
      await using sandbox = handle;
      await sandbox.run('true');
    };
    await expect(leave()).rejects.toThrow(SandboxApiError);
    await expect(handle.run('true')).rejects.toThrow(/closed/);
  });

  test('a handle that was let go refuses calls', async () => {
    const other = handleFor(fixture().runtime.url);
    await other.disconnect();
    await expect(other.run('true')).rejects.toThrow(SandboxError);
    await expect(other.run('true')).rejects.toThrow(/disconnected/);
  });
});
