/**
 * `sandbox.pty` against the real runtime process (its gRPC ProcessService on --grpc-port, found
 * through its GET / unless the client's grpcPort is set): the command sees a terminal, a resize
 * changes what `stty size` says, what is written reaches the shell, kill ends it, an exit code
 * comes back; and through the real router (in this process). A runtime without gRPC is a
 * SandboxConfigError naming runtime.grpcPort. Controls: a plain `run` has no terminal; before a
 * kill the session is still running.
 */
import { handleFor, runtimeFixture } from './handle';
import { type Harness, putSandbox, routeTo, startLocalRouter } from './router-in-process';
import { freePort, startRuntime } from './runtime-process';
import { SandboxConfigError, SandboxGrpcError, SandboxPathError } from '../src/errors';
import type { PtyCreateOptions, PtyHandle } from '../src/pty';
import type { Sandbox } from '../src/sandbox';

const fixture = runtimeFixture(async () => ['--grpc-port', String(await freePort())]);
const runtimeUrl = () => fixture().runtime.url;

/** A session and what it printed so far; `until` waits for the output to match (the test's timeout bounds it). */
interface Session {
  readonly pty: PtyHandle;
  output(): string;
  until(pattern: RegExp): Promise<RegExpMatchArray>;
}

async function open(sandbox: Sandbox, options: Partial<PtyCreateOptions> = {}): Promise<Session> {
  let out = '';
  const waiting = new Set<() => void>();
  const pty = await sandbox.pty.create({
    cols: 80,
    rows: 24,
    // A fixed shell and prompt, whatever the machine's login shell is.
    command: ['/bin/sh', '-i'],
    env: { PS1: 'pty$ ' },
    ...options,
    onData: (data) => {
      out += data;
      for (const check of [...waiting]) check();
    },
  });
  return {
    pty,
    output: () => out,
    until: (pattern) => new Promise((resolve) => {
      const check = () => {
        const match = out.match(pattern);
        if (match) {
          waiting.delete(check);
          resolve(match);
        }
      };
      waiting.add(check);
      check();
    }),
  };
}

const sessions: PtyHandle[] = [];
afterEach(async () => {
  for (const pty of sessions.splice(0)) await pty.kill().catch(() => undefined);
});
async function tracked(session: Promise<Session>): Promise<Session> {
  const s = await session;
  sessions.push(s.pty);
  return s;
}

describe('a PTY session on the real runtime (port from its GET /)', () => {
  const sandbox = () => handleFor(runtimeUrl());

  test('the command sees a terminal; a plain run does not', async () => {
    const s = await tracked(open(sandbox()));
    expect(s.pty.pid).toBeGreaterThan(0);
    await s.pty.write('tty; [ -t 0 ] && echo "is a""tty"\r');
    await s.until(/is atty/);
    expect(s.output()).toMatch(/\/dev\/pts\/\d+/);
    // The control: without a PTY, the same command has no terminal.
    const plain = await sandbox().run('tty; [ -t 0 ] && echo "is a""tty" || echo "not a""tty"');
    expect(plain.stdout).toMatch(/not atty/);
  });

  test('the size it was created with, then resize: stty size follows', async () => {
    const s = await tracked(open(sandbox(), { cols: 91, rows: 33 }));
    await s.pty.write('stty size\r');
    await s.until(/33 91\r\n/);
    await s.pty.resize(120, 40);
    await s.pty.write('stty size\r');
    await s.until(/40 120\r\n/);
  });

  test('what is written reaches the shell: it runs it, with the session\'s env and cwd', async () => {
    const s = await tracked(open(sandbox(), { env: { PS1: 'pty$ ', GREETING: 'hello-pty' }, cwd: '.' }));
    // The echoed input shows "$((6*7))"; only the shell's answer shows 42.
    await s.pty.write('echo "answer=$((6*7)) $GREETING"; pwd\r');
    await s.until(/answer=42 hello-pty/);
    await s.until(/sdk-runtime-[^\r\n]*\r?\n/);
  });

  test('kill ends the session (exit -1); until then it was running', async () => {
    const s = await tracked(open(sandbox()));
    let ended = false;
    const waited = s.pty.wait().then((r) => {
      ended = true;
      return r;
    });
    // The terminal echoes the input (typed ahead of the prompt): only the shell's answer has "alive" whole.
    await s.pty.write('echo "ali""ve"\r');
    await s.until(/alive/);
    expect(ended).toBe(false);
    await s.pty.kill();
    expect(await waited).toEqual({ exitCode: -1 });
    // Killing an ended session is a no-op.
    await s.pty.kill();
  });

  test('close cancels the session: wait() rejects, no more onData, and sandboxd ends the command', async () => {
    const marker = `pty-pid-${process.pid}-${Date.now()}`;
    const s = await tracked(open(sandbox(), { command: ['/bin/sh', '-c', `echo $$ > ${marker}; echo rea""dy; exec sleep 1000`] }));
    await s.until(/ready/);
    const pid = (await sandbox().run(`cat ${marker}`)).stdout.trim();
    // Control: the command runs until close.
    expect((await sandbox().run(`kill -0 ${pid} && echo alive`)).stdout).toBe('alive\n');
    const seen = s.output();
    s.pty.close();
    await expect(s.pty.wait()).rejects.toThrow();
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) {
      gone = (await sandbox().run(`kill -0 ${pid} 2>/dev/null || echo gone`)).stdout === 'gone\n';
      if (!gone) await new Promise((r) => setTimeout(r, 50));
    }
    expect(gone).toBe(true);
    expect(s.output()).toBe(seen);
    s.pty.close(); // a second close is a no-op
  });

  test('the default command is an interactive shell; its exit code comes back', async () => {
    const s = await tracked(open(sandbox(), { command: undefined }));
    await s.pty.write('exit 3\r');
    expect(await s.pty.wait()).toEqual({ exitCode: 3 });
  });

  test('a command line runs with /bin/sh -c on the terminal', async () => {
    const s = await tracked(open(sandbox(), { command: 'stty size; exit 5' }));
    expect(await s.pty.wait()).toEqual({ exitCode: 5 });
    expect(s.output()).toMatch(/24 80\r\n/);
  });

  test('bad arguments are SandboxConfigErrors naming the field; a cwd outside is refused by the runtime', async () => {
    await expect(sandbox().pty.create({ cols: 0, rows: 24, onData: () => undefined })).rejects.toMatchObject({ field: 'cols' });
    await expect(sandbox().pty.create({ cols: 80, rows: 24.5, onData: () => undefined })).rejects.toThrow(SandboxConfigError);
    await expect(sandbox().pty.create({ cols: 80, rows: 24 } as PtyCreateOptions)).rejects.toMatchObject({ field: 'onData' });
    await expect(sandbox().pty.create({ cols: 80, rows: 24, command: [], onData: () => undefined })).rejects.toMatchObject({ field: 'command' });
    const err = await sandbox().pty.create({ cols: 80, rows: 24, cwd: '../..', onData: () => undefined }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxGrpcError);
    expect(err).not.toBeInstanceOf(SandboxPathError);
    expect(err).toMatchObject({ code: 7, details: expect.stringMatching(/^config\.cwd: /) });
  });

  test('the client\'s grpcPort, when set, is used as it is', async () => {
    const grpcPort = Number(new URL(fixture().runtime.grpcUrl!).port);
    const s = await tracked(open(handleFor(runtimeUrl(), { grpcPort }), { command: 'echo via-option' }));
    expect(await s.pty.wait()).toEqual({ exitCode: 0 });
    expect(s.output()).toMatch(/via-option/);
    // A wrong one is said to be wrong, with the fix.
    const wrong = await freePort();
    const err = await handleFor(runtimeUrl(), { grpcPort: wrong }).pty.create({ cols: 80, rows: 24, onData: () => undefined })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 14, details: expect.stringMatching(new RegExp(`^no gRPC at the sandbox's port ${wrong}: connection refused .*Fix: the client's grpcPort must be`)) });
  });
});

test('a runtime without gRPC: a SandboxConfigError naming runtime.grpcPort', async () => {
  const plain = await startRuntime();
  try {
    const err = await handleFor(plain.url).pty.create({ cols: 80, rows: 24, onData: () => undefined }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxConfigError);
    expect(err).toMatchObject({ field: 'runtime.grpcPort' });
    expect((err as Error).message).toMatch(/^runtime\.grpcPort: sandbox sb-test's runtime serves no gRPC ProcessService .*set runtime\.grpcPort in the SandboxTemplate/);
  } finally {
    await plain.stop();
  }
});

describe('through the router', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startLocalRouter();
    putSandbox(h, 'sb');
  });
  afterAll(async () => h.close());

  test('GET / is asked through the router, the session goes to the discovered port through it too', async () => {
    const sandbox = handleFor(`http://127.0.0.1:${h.port}`, { viaRouter: true, headers: routeTo('sb', new URL(runtimeUrl()).port) });
    const s = await tracked(open(sandbox));
    await s.pty.resize(100, 30);
    await s.pty.write('stty size; tty\r');
    await s.until(/30 100\r\n/);
    await s.until(/\/dev\/pts\/\d+/);
    await s.pty.kill();
    expect(await s.pty.wait()).toEqual({ exitCode: -1 });
  });
});
