/**
 * The E2B-shaped facade (`@cdk8s-agent-sandbox/sdk/e2b`) against the real runtime process on
 * 127.0.0.1 (with its gRPC ProcessService, for `pty`). `Sandbox.create` and `connect` are given a
 * `client` whose claims are handles to that runtime, so everything from the facade to the HTTP
 * exchange is the SDK's real code; their Kubernetes side (claim, resume, ttl, delete) is in
 * test/integration/sdk/e2b.test.ts. The first test is a small program written for E2B, unchanged
 * but for the import (and the client in its options). Controls: a zero exit does not throw, a
 * kill of an ended command says false, unknown pids and missing files are NotFoundErrors.
 */
import { handleFor, runtimeFixture } from './handle';
import { freePort } from './runtime-process';
import type { ClaimOptions, ConnectOptions } from '../src/client';
import {
  CommandExitError, FileType, InvalidArgumentError, NotFoundError, NotSupportedError, Sandbox, Template, TimeoutError,
  type CommandHandle, type SandboxClientLike, type SandboxOpts,
} from '../src/e2b/index';
import { SandboxError } from '../src/errors';
import type { SandboxHandle } from '../src/sandbox';

/** Each test's limit: the runtime answers in milliseconds, but CI machines are shared. */
const LIMIT_MS = 30_000;

const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);

/** A client whose claims are handles to the test's runtime; close() lets go instead of deleting a claim. */
function localClient() {
  const claims: ClaimOptions[] = [];
  const connects: ConnectOptions[] = [];
  const closedClaims: string[] = [];
  let clientCloses = 0;
  const handle = (): SandboxHandle => {
    const real = handleFor(fixture().runtime.url);
    return new Proxy(real, {
      get(target, prop) {
        if (prop === 'close') {
          return async () => {
            closedClaims.push(target.claim);
            await target.disconnect();
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  const client: SandboxClientLike = {
    claim: async (options) => {
      claims.push(options);
      return handle();
    },
    connect: async (options) => {
      connects.push(options);
      return handle();
    },
    deleteClaim: async () => true,
    close: async () => {
      clientCloses++;
    },
  };
  return { client, claims, connects, closedClaims, clientCloses: () => clientCloses };
}

/** Resolves once `text` has come in the output that `sink` collects. */
function outputOf() {
  let text = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  return {
    onData: (data: string) => {
      text += data;
      for (const w of waiters.filter((x) => x.pattern.test(text))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    text: () => text,
    until: (pattern: RegExp) => new Promise<void>((resolve) => (pattern.test(text) ? resolve() : waiters.push({ pattern, resolve }))),
  };
}

/**
 * A program as one writes it for E2B's JS SDK (`import { Sandbox } from 'e2b'`): create, write a
 * file, run it with streamed output, a background command killed, list the files, kill. Only the
 * import differs, and `connection` is where E2B code passes its apiKey.
 */
async function e2bProgram(connection: SandboxOpts) {
  const sandbox = await Sandbox.create('python-pool', { timeoutMs: 120_000, envs: { GREETING: 'hello' }, ...connection });
  await sandbox.files.write('/home/user/greet.sh', 'echo "$GREETING from $(basename "$PWD")"; echo done >&2\n');
  const streamed: string[] = [];
  const result = await sandbox.commands.run('sh greet.sh', { onStdout: (data) => { streamed.push(data); } });

  const ticks = outputOf();
  const server = await sandbox.commands.run('while true; do echo tick; sleep 0.05; done', { background: true, timeoutMs: 0, onStdout: ticks.onData });
  await ticks.until(/tick\ntick\n/);
  const running = (await sandbox.commands.list()).map((p) => p.pid);
  const killed = await server.kill();
  const killedAgain = await server.kill();
  const exit = await server.wait().catch((err: unknown) => err);

  const files = await sandbox.files.list('/home/user');
  const id = sandbox.sandboxId;
  await sandbox.kill();
  const after = await sandbox.isRunning();
  return { id, result, streamed, serverPid: server.pid, running, killed, killedAgain, exit, ticks: server.stdout, files, after };
}

test('an E2B program runs unchanged but for the import: create, files.write, commands.run with onStdout, background + kill, files.list, kill', async () => {
  const local = localClient();
  const out = await e2bProgram({ client: local.client });

  expect(local.claims).toEqual([{ pool: 'python-pool', ttl: 120 }]);
  expect(out.id).toBe('claim-test');
  // Commands run in the workspace, which /home/user names; the sandbox's envs reach them.
  const workspaceName = fixture().runtime.workspace.split('/').pop();
  expect(out.result).toEqual({ exitCode: 0, stdout: `hello from ${workspaceName}\n`, stderr: 'done\n' });
  expect(out.streamed.join('')).toBe(out.result.stdout);
  expect(out.running).toContain(out.serverPid);
  expect(out.killed).toBe(true);
  // Killed means ended: at once, a second kill finds nothing to kill.
  expect(out.killedAgain).toBe(false);
  // As in E2B, waiting for a killed command throws a CommandExitError.
  expect(out.exit).toBeInstanceOf(CommandExitError);
  expect(out.exit).toMatchObject({ exitCode: -9, error: 'signal: SIGKILL' });
  expect(out.ticks).toMatch(/^(tick\n)+$/);
  expect(out.files).toEqual([{ name: 'greet.sh', type: FileType.FILE, path: '/home/user/greet.sh', size: expect.any(Number), modifiedTime: expect.any(Date) }]);
  expect(out.files[0].type).toBe('file');
  // kill() deleted the claim; the client was the caller's (given in the options), so it stays open.
  expect(local.closedClaims).toEqual(['claim-test']);
  expect(local.clientCloses()).toBe(0);
  expect(out.after).toBe(false);
}, LIMIT_MS);

describe('on a sandbox', () => {
  let sandbox: Sandbox;
  let local: ReturnType<typeof localClient>;

  beforeEach(async () => {
    local = localClient();
    sandbox = await Sandbox.create({ client: local.client });
  });

  afterEach(async () => {
    await sandbox.kill();
  });

  test('create(opts) claims from the pool "base" with E2B\'s 5 minutes; isRunning is true while it is', async () => {
    expect(local.claims).toEqual([{ pool: 'base', ttl: 300 }]);
    expect(await sandbox.isRunning()).toBe(true);
  }, LIMIT_MS);

  test('a non-zero exit throws a CommandExitError with the exit code and the output; a zero exit does not', async () => {
    const failed = await sandbox.commands.run('echo out; echo err >&2; exit 3').catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect(failed).toBeInstanceOf(SandboxError);
    expect(failed).toMatchObject({ exitCode: 3, error: 'exit status 3', stdout: 'out\n', stderr: 'err\n', message: 'exit status 3' });
    // The control.
    expect(await sandbox.commands.run('echo fine')).toEqual({ exitCode: 0, stdout: 'fine\n', stderr: '' });
    // A background command's wait() throws the same way.
    const handle = await sandbox.commands.run('exit 5', { background: true });
    await expect(handle.wait()).rejects.toMatchObject({ name: 'CommandExitError', exitCode: 5 });
    expect(handle.exitCode).toBe(5);
  }, LIMIT_MS);

  test('timeoutMs: a command that runs out is killed and a TimeoutError thrown with its output so far; 0 means no limit', async () => {
    const err = await sandbox.commands.run('echo started; sleep 20', { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).result).toMatchObject({ exitCode: 124, stdout: 'started\n' });
    expect(await sandbox.commands.run('sleep 0.2; echo late', { timeoutMs: 0 })).toEqual({ exitCode: 0, stdout: 'late\n', stderr: '' });
  }, LIMIT_MS);

  test('cwd and envs: an absolute cwd under /home/user, a relative one, and a command\'s envs over the sandbox\'s', async () => {
    await sandbox.files.makeDir('/home/user/sub/dir');
    expect((await sandbox.commands.run('basename "$PWD"', { cwd: '/home/user/sub/dir' })).stdout).toBe('dir\n');
    expect((await sandbox.commands.run('basename "$PWD"', { cwd: 'sub' })).stdout).toBe('sub\n');
    expect((await sandbox.commands.run('echo "$A"', { envs: { A: 'mine' } })).stdout).toBe('mine\n');
  }, LIMIT_MS);

  test('stdin: true keeps stdin open for the handle\'s sendStdin and for commands.sendStdin/closeStdin by pid', async () => {
    const cat = await sandbox.commands.run('cat', { background: true, stdin: true });
    await cat.sendStdin('one\n');
    await sandbox.commands.sendStdin(cat.pid, 'two\n');
    await sandbox.commands.closeStdin(cat.pid);
    expect(await cat.wait()).toEqual({ exitCode: 0, stdout: 'one\ntwo\n', stderr: '' });
  }, LIMIT_MS);

  test('commands.connect(pid) from another Sandbox object follows the command (its output so far first); kill(pid) by pid; unknown pids', async () => {
    const ticks = outputOf();
    const mine = await sandbox.commands.run('echo first; while true; do sleep 0.05; done', { background: true, timeoutMs: 0, onStdout: ticks.onData });
    await ticks.until(/first/);
    const other = await Sandbox.connect(sandbox.sandboxId, { client: local.client });
    try {
      expect(local.connects).toEqual([{ claim: 'claim-test', resume: true }]);
      const seen = outputOf();
      const theirs = await other.commands.connect(mine.pid, { onStdout: seen.onData });
      await seen.until(/first/);
      expect(await other.commands.kill(mine.pid)).toBe(true);
      await expect(theirs.wait()).rejects.toBeInstanceOf(CommandExitError);
      await expect(mine.wait()).rejects.toMatchObject({ exitCode: -9 });
      // The controls: it has ended, and pids nobody has.
      expect(await other.commands.kill(mine.pid)).toBe(false);
      expect(await mine.kill()).toBe(false);
      expect(await other.commands.kill(999_999)).toBe(false);
      await expect(other.commands.connect(999_999)).rejects.toBeInstanceOf(NotFoundError);
      await expect(other.commands.sendStdin(999_999, 'x')).rejects.toBeInstanceOf(NotFoundError);
    } finally {
      await other.disconnect();
    }
  }, LIMIT_MS);

  test('files: write (string, ArrayBuffer, Uint8Array, entries), read in each format, list with depth, exists, getInfo, rename, remove', async () => {
    // Under a directory of its own: the workspace is the file's, shared by its tests.
    expect(await sandbox.files.write('/home/user/ft/a.txt', 'text')).toEqual({ name: 'a.txt', type: 'file', path: '/home/user/ft/a.txt' });
    await sandbox.files.write('ft/b.bin', new Uint8Array([0, 1, 255]).buffer);
    const written = await sandbox.files.write([{ path: 'ft/dir/c.txt', data: new TextEncoder().encode('c') }, { path: '/home/user/ft/dir/d.txt', data: new Blob(['d']) }]);
    expect(written.map((w) => w.path)).toEqual(['/home/user/ft/dir/c.txt', '/home/user/ft/dir/d.txt']);
    // A web ReadableStream is streamed.
    await sandbox.files.write('ft/e.txt', new Blob(['streamed']).stream());
    expect(await sandbox.files.read('ft/e.txt')).toBe('streamed');
    await sandbox.files.remove('ft/e.txt');

    expect(await sandbox.files.read('ft/a.txt')).toBe('text');
    expect(Array.from(await sandbox.files.read('/home/user/ft/b.bin', { format: 'bytes' }))).toEqual([0, 1, 255]);
    expect(await (await sandbox.files.read('ft/dir/c.txt', { format: 'blob' })).text()).toBe('c');
    const chunks: Uint8Array[] = [];
    for await (const chunk of (await sandbox.files.read('ft/dir/d.txt', { format: 'stream' })) as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString()).toBe('d');

    const top = await sandbox.files.list('/home/user/ft');
    expect(top.map((e) => [e.name, e.type, e.path]).sort()).toEqual([
      ['a.txt', 'file', '/home/user/ft/a.txt'], ['b.bin', 'file', '/home/user/ft/b.bin'], ['dir', 'dir', '/home/user/ft/dir'],
    ]);
    expect((await sandbox.files.list('ft', { depth: 2 })).map((e) => e.path).sort()).toEqual([
      '/home/user/ft/a.txt', '/home/user/ft/b.bin', '/home/user/ft/dir', '/home/user/ft/dir/c.txt', '/home/user/ft/dir/d.txt',
    ]);
    expect(await sandbox.files.exists('/home/user/ft/dir/c.txt')).toBe(true);
    expect(await sandbox.files.exists('ft/dir/none.txt')).toBe(false);
    expect(await sandbox.files.getInfo('ft/dir/c.txt')).toMatchObject({ name: 'c.txt', type: 'file', path: '/home/user/ft/dir/c.txt', size: 1 });

    expect(await sandbox.files.makeDir('/home/user/ft/made/deep')).toBe(true);
    expect(await sandbox.files.makeDir('ft/made/deep')).toBe(false);
    expect(await sandbox.files.getInfo('ft/made/deep')).toMatchObject({ type: 'dir' });
    expect(await sandbox.files.rename('ft/a.txt', 'ft/made/a2.txt')).toMatchObject({ name: 'a2.txt', path: '/home/user/ft/made/a2.txt' });
    expect(await sandbox.files.exists('ft/a.txt')).toBe(false);

    await sandbox.files.remove('/home/user/ft/dir');
    expect(await sandbox.files.exists('ft/dir')).toBe(false);
    // Removing what is not there is no error (E2B's remove removes all there is).
    await sandbox.files.remove('ft/dir');
    await expect(sandbox.files.read('ft/dir/c.txt')).rejects.toBeInstanceOf(NotFoundError);
    await expect(sandbox.files.getInfo('ft/no/such')).rejects.toBeInstanceOf(NotFoundError);
  }, LIMIT_MS);

  test('paths outside the workspace are refused, saying where the workspace is and how to set it', async () => {
    await expect(sandbox.files.write('/tmp/x', 'x')).rejects.toThrow(/"\/tmp\/x" is outside the sandbox's workspace \(\/home\/user\).*workspacePath/);
    await expect(sandbox.files.read('/tmp/x')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(sandbox.files.read('../x')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(sandbox.commands.run('pwd', { cwd: '/etc' })).rejects.toBeInstanceOf(InvalidArgumentError);
  }, LIMIT_MS);

  test('pty: create gives the terminal\'s output as bytes; sendInput, resize, kill by pid; a killed session\'s wait throws', async () => {
    const seen = outputOf();
    const decoder = new TextDecoder();
    const terminal: CommandHandle = await sandbox.pty.create({ cols: 80, rows: 24, envs: { PS1: 'pty$ ' }, timeoutMs: 0, onData: (data) => seen.onData(decoder.decode(data)) });
    await sandbox.pty.resize(terminal.pid, { cols: 100, rows: 30 });
    await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('stty size; echo "a""b"\r'));
    await seen.until(/30 100\r\n/);
    await seen.until(/ab\r\n/);
    expect(await sandbox.pty.kill(terminal.pid)).toBe(true);
    await expect(terminal.wait()).rejects.toMatchObject({ name: 'CommandExitError', exitCode: -1, error: 'signal: killed' });
    expect(await sandbox.pty.kill(terminal.pid)).toBe(false);
    await expect(sandbox.pty.sendInput(terminal.pid, new Uint8Array([10]))).rejects.toBeInstanceOf(NotFoundError);
  }, LIMIT_MS);

  test('what cannot be mapped throws a NotSupportedError naming the method and what to use instead', async () => {
    expect(() => sandbox.getHost(3000)).toThrow(NotSupportedError);
    expect(() => sandbox.getHost(3000)).toThrow(/getHost\(3000\) is not supported .*X-Sandbox-ID: sb-test.*X-Sandbox-Port: 3000/);
    await expect(sandbox.uploadUrl('/home/user/x')).rejects.toThrow(/uploadUrl .*files\.write/);
    await expect(sandbox.getInfo()).rejects.toThrow(/Sandbox\.getInfo .*kubectl get sandboxclaim/);
    await expect(Sandbox.list()).rejects.toThrow(/Sandbox\.list .*kubectl get sandboxclaims/);
    await expect(sandbox.files.watchDir('/home/user', () => undefined)).rejects.toThrow(/files\.watchDir .*poll files\.list/);
    expect(() => Template()).toThrow(/Template is not supported .*SandboxWarmPool/);
    await expect(Template.build()).rejects.toBeInstanceOf(NotSupportedError);
    await expect(sandbox.commands.run('id', { user: 'root' })).rejects.toThrow(/commands\.run with user "root" is not supported/);
    await expect(sandbox.files.read('x', { user: 'root' })).rejects.toBeInstanceOf(NotSupportedError);
    // Options with no counterpart are refused before any claim is made.
    const claimsBefore = local.claims.length;
    await expect(Sandbox.create('base', { client: local.client, allowInternetAccess: false })).rejects.toThrow(/allowInternetAccess: false is not supported .*NetworkPolicy/);
    await expect(Sandbox.create({ client: local.client, autoPause: true })).rejects.toBeInstanceOf(NotSupportedError);
    expect(local.claims.length).toBe(claimsBefore);
    // Ignored E2B options are no error.
    const withKey = await Sandbox.create({ client: local.client, apiKey: 'e2b_unused', domain: 'e2b.app' });
    await withKey.kill();
  }, LIMIT_MS);

  test('the SDK\'s errors come as E2B\'s classes, with the original as cause', async () => {
    const err = await sandbox.commands.run('true', { envs: { 'A=B': 'x' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).cause).toMatchObject({ name: 'SandboxConfigError', field: 'env.A=B' });
    await expect(sandbox.commands.run('true', { timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
  }, LIMIT_MS);
});
