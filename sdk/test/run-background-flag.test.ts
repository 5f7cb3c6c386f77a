/**
 * `run(command, { background: flag })` with `flag: boolean`, known only at run time: it type-checks
 * (`tsc -p sdk/test`), its result is typed `RunResult | CommandHandle`, and it is what the flag says,
 * against the real runtime process on 127.0.0.1. The literal forms keep their narrow types.
 */
import { handleFor, runtimeFixture } from './handle';
import type { CommandHandle } from '../src/processes';
import type { RunOrBackgroundOptions, RunResult, SandboxHandle } from '../src/sandbox';

/** True when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
/** Fails to type-check unless its argument is `true`. */
function typeIs<T extends true>(): T | undefined {
  return undefined;
}

/** Type-level only (never called): what each form of `run` resolves with, and what the flag form refuses. */
export async function runTypes(sandbox: SandboxHandle, flag: boolean, options: RunOrBackgroundOptions): Promise<void> {
  const either = await sandbox.run('x', { background: flag });
  typeIs<Equal<typeof either, RunResult | CommandHandle>>();
  const fromOptions = await sandbox.run('x', options);
  typeIs<Equal<typeof fromOptions, RunResult | CommandHandle>>();
  // The class has the overload too.
  const fromClass = await handleFor('http://127.0.0.1:1').run('x', { background: flag });
  typeIs<Equal<typeof fromClass, RunResult | CommandHandle>>();
  // The options a run reads either way are there.
  await sandbox.run('x', { background: flag, shell: false, timeoutMs: 5, env: { A: 'b' }, cwd: 'd', stdin: 'in', onStdout: () => undefined, onStderr: () => undefined, signal: AbortSignal.timeout(1) });
  // Those only one of the two ways reads are refused, rather than ignored the other way.
  // @ts-expect-error retry: only a run to the end reads it
  await sandbox.run('x', { background: flag, retry: true });
  // @ts-expect-error tag: only the background reads it
  await sandbox.run('x', { background: flag, tag: 't' });
  // @ts-expect-error openStdin: only the background reads it
  await sandbox.run('x', { background: flag, openStdin: true });
  // The literal forms are as narrow as before.
  const background = await sandbox.run('x', { background: true, tag: 't', openStdin: true });
  typeIs<Equal<typeof background, CommandHandle>>();
  const toEnd = await sandbox.run('x', { timeoutMs: 5 });
  typeIs<Equal<typeof toEnd, RunResult>>();
  const explicitToEnd = await sandbox.run('x', { background: false, retry: true });
  typeIs<Equal<typeof explicitToEnd, RunResult>>();
  const noOptions = await sandbox.run('x');
  typeIs<Equal<typeof noOptions, RunResult>>();
  // `'wait' in` tells the two apart.
  if ('wait' in either) typeIs<Equal<typeof either, CommandHandle>>();
  else typeIs<Equal<typeof either, RunResult>>();
}

const fixture = runtimeFixture();

describe('run with background: flag', () => {
  test.each([true, false])('background: %s resolves with what the flag says', async (flag) => {
    const result = await fixture().sandbox.run('echo hi', { background: flag });
    typeIs<Equal<typeof result, RunResult | CommandHandle>>();
    if (flag) {
      expect('wait' in result).toBe(true);
      if (!('wait' in result)) return;
      expect(result.id).toMatch(/^p-/);
      expect(await result.wait()).toMatchObject({ stdout: 'hi\n', exitCode: 0, timedOut: false });
    } else {
      expect('wait' in result).toBe(false);
      expect(result).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0, timedOut: false });
    }
  });

  test('timeoutMs is the command\'s limit either way', async () => {
    for (const flag of [false, true]) {
      const result = await fixture().sandbox.run('sleep 30', { background: flag, timeoutMs: 300 });
      const ended = 'wait' in result ? await result.wait() : result;
      expect([flag, ended.timedOut, ended.exitCode]).toEqual([flag, true, 124]);
    }
  });
});
