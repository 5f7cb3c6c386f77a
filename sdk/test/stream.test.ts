/**
 * `run` over sandboxd's gRPC ProcessService (the runtime's --grpc-port) against the real runtime
 * process on 127.0.0.1: output in order as it is written, stdin, env and cwd, exit codes, the time
 * limit, aborting, and a gRPC error as a typed error.
 */
import { handleFor, runtimeFixture } from './handle';
import { freePort } from './runtime-process';
import { SandboxConfigError, SandboxGrpcError } from '../src/errors';

const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
const streaming = () => handleFor(fixture().runtime.url, { grpcUrl: fixture().runtime.grpcUrl });

describe('run over gRPC', () => {
  test('stdout and stderr chunks arrive in the order the command wrote them', async () => {
    const events: string[] = [];
    const result = await streaming().run('for i in 1 2 3; do echo out$i; sleep 0.1; echo err$i >&2; sleep 0.1; done', {
      onStdout: (c) => events.push(`out:${c}`),
      onStderr: (c) => events.push(`err:${c}`),
    });
    expect(events).toEqual(['out:out1\n', 'err:err1\n', 'out:out2\n', 'err:err2\n', 'out:out3\n', 'err:err3\n']);
    expect(result).toEqual({ stdout: 'out1\nout2\nout3\n', stderr: 'err1\nerr2\nerr3\n', exitCode: 0, timedOut: false });
  });

  test('output arrives before the command ends: an abort from onStdout stops a command that would run for a minute', async () => {
    const controller = new AbortController();
    const pending = streaming().run('echo ready; sleep 60', {
      timeoutMs: 120_000,
      signal: controller.signal,
      onStdout: (c) => {
        if (c.includes('ready')) controller.abort(new Error('seen ready'));
      },
    });
    await expect(pending).rejects.toThrow('seen ready');
  });

  test('stdin, env, cwd and the exit code', async () => {
    await fixture().sandbox.files.write('sub/dir/x', 'x');
    const result = await streaming().run('cat; echo "$NAME"; ls; exit 5', { stdin: 'from stdin\n', env: { NAME: 'Ada' }, cwd: 'sub/dir' });
    expect(result).toEqual({ stdout: 'from stdin\nAda\nx\n', stderr: '', exitCode: 5, timedOut: false });
  });

  test('the time limit kills the command: timedOut, exit code 124, the output so far kept', async () => {
    const result = await streaming().run('echo started; sleep 60', { timeoutMs: 500 });
    expect(result).toEqual({ stdout: 'started\n', stderr: '', exitCode: 124, timedOut: true });
  });

  test('a cwd outside the workspace is the runtime\'s gRPC status, typed', async () => {
    const err = await streaming().run('true', { cwd: '../..' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect((err as SandboxGrpcError).code).toBe(7);
  });

  test('argv mode is refused with a clear error', async () => {
    await expect(streaming().run('echo a', { shell: false })).rejects.toThrow(SandboxConfigError);
  });
});
