/**
 * `timeout_seconds` holds against a descendant that left the command's process group (`setsid`):
 * the answer comes at the deadline, not when the descendant lets go of the output pipes, and the
 * descendant is killed whether it holds the pipes or not. Both ways of finding it are tested: a
 * cgroup per command (where this machine lets the runtime make one) and the /proc scan alone.
 */
import { constants, existsSync, openSync, readdirSync, readFileSync, watch } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { execute, processClient } from './process-client';
import { alive, exec, json, runtimeFixture } from './runtime-http';
import { CommandCgroups, ownCgroupDir } from '../../src/sandboxd/cgroup';
import { parseStat, selectDescendants } from '../../src/sandboxd/descendants';

/** Whether this machine lets the runtime make cgroups (as root with a writable cgroup2 mount, it does). */
const cgroupsHere = (await CommandCgroups.detect()) !== undefined;
const withCgroups = runtimeFixture('sandboxd-descendants-cg-', { grpcPort: 0 });
const procScanOnly = runtimeFixture('sandboxd-descendants-proc-', { grpcPort: 0, commandCgroups: false });

/** Whether `pid` runs in a cgroup of one command (`sandboxd-<id>`). */
function inCommandCgroup(pid: number): boolean {
  return /\/sandboxd-[0-9a-f]+$/m.test(readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
}

/** Live (not zombie) processes whose argv is exactly `argv`. */
function processesRunning(argv: readonly string[]): number[] {
  const wanted = `${argv.join('\0')}\0`;
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmdline === wanted && alive(Number(name))) found.push(Number(name));
  }
  return found;
}

/** Fields 5 and 6 of /proc/<pid>/stat: the process group and the session. */
function groupAndSession(pid: number): [number, number] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(fields[2]), Number(fields[3])];
}

/**
 * Resolves once `file` is there (the commands rename it into place whole). Event-driven: a watch on
 * its folder, started before the first look so a rename in between is not missed. The deadline only
 * closes the watch when the file never comes; the test's own timeout is the bound that matters.
 */
function appeared(file: string, deadlineMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(path.dirname(file), (_event, name) => {
      if (name === path.basename(file) && existsSync(file)) done();
    });
    const timer = setTimeout(() => done(new Error(`${file} did not appear within ${deadlineMs} ms`)), deadlineMs);
    function done(err?: Error): void {
      clearTimeout(timer);
      watcher.close();
      if (err) reject(err);
      else resolve();
    }
    watcher.on('error', done);
    if (existsSync(file)) done();
  });
}

/**
 * The script of a descendant that stays: a shell that makes a FIFO, holds it open for reading and
 * writing (fd 3), writes its pid to desc-<tag>.pid (renamed into place) and blocks reading the FIFO,
 * which nothing writes. It runs no child and execs nothing after announcing itself, so the pid in
 * the file is the process that stays, already running as it will (`sh -c <this script>`). An
 * `exec sleep` after the announcement raced: the test could look before the exec and find a shell.
 */
function holdingScript(tag: string): string {
  return `mkfifo hold-${tag} && exec 3<>hold-${tag} && echo $$ > desc-${tag}.pid.tmp && mv desc-${tag}.pid.tmp desc-${tag}.pid && read x <&3`;
}

/** A shell command that starts the holding descendant in a new session (`setsid`), then waits a minute. */
function escapingCommand(tag: string, redirect: string): string {
  return `setsid sh -c '${holdingScript(tag)}'${redirect} & echo "leader $$"; sleep 60`;
}

/** Holding descendants found running; each is SIGKILLed after its test if still alive (it would block forever). */
const holding: number[] = [];
afterEach(() => {
  for (const pid of holding.splice(0)) {
    if (!alive(pid)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
});

interface Escaped {
  readonly pid: number;
  /** Resolves when the descendant has ended: the FIFO it alone holds open for writing reads end-of-file. */
  readonly ended: Promise<void>;
}

/**
 * The holding descendant of `tag` in `workspace`, once it has announced itself: running, in a
 * process group and session of its own, with its command line exactly the holding script's.
 */
async function escaped(workspace: string, tag: string): Promise<Escaped> {
  await appeared(path.join(workspace, `desc-${tag}.pid`));
  const pid = Number(readFileSync(path.join(workspace, `desc-${tag}.pid`), 'utf8').trim());
  holding.push(pid);
  expect(alive(pid)).toBe(true);
  expect(groupAndSession(pid)).toEqual([pid, pid]);
  expect(processesRunning(['sh', '-c', holdingScript(tag)])).toEqual([pid]);
  // Opened while the descendant holds the write side, so end-of-file means it is gone (non-blocking:
  // the open neither waits for a writer nor ties up a thread).
  // eslint-disable-next-line no-bitwise -- open(2)'s flags are a bit set
  const fd = openSync(path.join(workspace, `hold-${tag}`), constants.O_RDONLY | constants.O_NONBLOCK);
  const fifo = new net.Socket({ fd, readable: true, writable: false });
  const ended = new Promise<void>((resolve) => fifo.on('close', () => resolve()));
  fifo.resume();
  return { pid, ended };
}

describe.each([
  ['a cgroup per command where one can be made', withCgroups, '1'],
  ['the /proc scan alone', procScanOnly, '2'],
])('found by %s:', (_how, rt, mode) => {
  test('the runtime uses cgroups exactly when asked and possible', () => {
    expect(rt.server.commandCgroups).toBe(rt === withCgroups && cgroupsHere);
  });

  describe.each([
    ['its output inherited', '', '1'],
    ['its output redirected to /dev/null', ' >/dev/null 2>&1', '2'],
  ])('a `setsid sh -c` descendant that stays, with %s', (_label, redirect, variant) => {
    test('the 1 s timeout answers with timed_out, and the descendant is killed', async () => {
      const tag = `${mode}${variant}1`;
      const started = Date.now();
      const pending = exec(rt.port, { command: escapingCommand(tag, redirect), shell: true, timeout_seconds: 1 });

      // Negative control: the descendant really runs, outside the command's process group and session.
      const { pid: descendant } = await escaped(rt.workspace, tag);
      // And it runs in a cgroup of its own exactly when the runtime uses them.
      expect(inCommandCgroup(descendant)).toBe(rt.server.commandCgroups);

      const reply = await pending;
      // A generous guard, not a timing goal: the failure mode is waiting for the descendant (forever, or the command's 60 s).
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(reply.status).toBe(200);
      const body = json(reply);
      expect(body).toMatchObject({ exit_code: 124, timed_out: true });
      expect(body.stderr).toMatch(/timed out after 1 seconds/);
      const leader = Number(/leader (\d+)/.exec(body.stdout)?.[1]);
      expect(leader).toBeGreaterThan(1);
      expect(leader).not.toBe(descendant);
      expect(alive(descendant)).toBe(false);
      expect(processesRunning(['sh', '-c', holdingScript(tag)])).toEqual([]);
    }, 25_000);
  });

  test('a gRPC Execute past its deadline kills the descendant that left the group as well', async () => {
    const tag = `${mode}33`;
    const client = processClient(`127.0.0.1:${rt.server.grpcAddress!.port}`);
    try {
      const pending = execute(client, { config: { command: ['/bin/sh', '-c', escapingCommand(tag, '')], envVars: {} } }, { deadlineMs: 1000 });
      const descendant = await escaped(rt.workspace, tag);
      await expect(pending).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
      // The call ends at its deadline; the kill follows the cancellation, so wait for the end (bounded by the test's timeout).
      await descendant.ended;
      expect(processesRunning(['sh', '-c', holdingScript(tag)])).toEqual([]);
    } finally {
      client.close();
    }
  }, 25_000);
});

/** A command whose `sleep <seconds>` clears its environment and is re-parented away (its parent exits): its pid in desc-<seconds>.pid. */
function vanishingCommand(seconds: string): string {
  const file = `desc-${seconds}.pid`;
  return `setsid env -i /bin/sh -c 'sleep ${seconds} & echo $! > ${file}.tmp && mv ${file}.tmp ${file}' ; sleep 60`;
}

test('the machine lets the runtime make cgroups (the cgroup tests below need it: root and a writable cgroup2 mount, as CI has)', () => {
  expect(cgroupsHere).toBe(true);
});

test('a descendant with a cleared environment and a new parent is killed by its cgroup', async () => {
  const seconds = '30.0444';
  const pending = exec(withCgroups.port, { command: vanishingCommand(seconds), shell: true, timeout_seconds: 1 });
  await appeared(path.join(withCgroups.workspace, `desc-${seconds}.pid`));
  const descendant = Number(readFileSync(path.join(withCgroups.workspace, `desc-${seconds}.pid`), 'utf8'));
  expect(alive(descendant)).toBe(true);
  expect(readFileSync(`/proc/${descendant}/environ`, 'utf8')).not.toContain('SANDBOXD_COMMAND_ID');
  expect(inCommandCgroup(descendant)).toBe(true);
  expect(json(await pending)).toMatchObject({ timed_out: true, exit_code: 124 });
  expect(alive(descendant)).toBe(false);
}, 25_000);

test('negative control: the /proc scan alone cannot find that descendant (the limit ./descendants documents)', async () => {
  const seconds = '30.0555';
  const pending = exec(procScanOnly.port, { command: vanishingCommand(seconds), shell: true, timeout_seconds: 1 });
  await appeared(path.join(procScanOnly.workspace, `desc-${seconds}.pid`));
  const descendant = Number(readFileSync(path.join(procScanOnly.workspace, `desc-${seconds}.pid`), 'utf8'));
  try {
    expect(json(await pending)).toMatchObject({ timed_out: true, exit_code: 124 });
    expect(alive(descendant)).toBe(true);
  } finally {
    process.kill(descendant, 'SIGKILL');
  }
}, 25_000);

test('a spawn that throws (arguments Node refuses) leaves no cgroup behind, and the runtime back where it was', async () => {
  const cgroups = await CommandCgroups.detect();
  expect(cgroups).toBeDefined();
  if (!cgroups) return;
  const before = readFileSync('/proc/self/cgroup', 'utf8');
  const dir = ownCgroupDir(before, readFileSync('/proc/self/mountinfo', 'utf8'));
  const made = () => readdirSync(dir!).filter((n) => n.startsWith('sandboxd-leak'));
  expect(() => cgroups.spawnIn('leak0', () => {
    // Inside the new cgroup now (the negative control that one was made).
    expect(made()).toEqual(['sandboxd-leak0']);
    throw new TypeError('The argument \'args\' must be a string without null bytes');
  })).toThrow(/null bytes/);
  await new Promise((r) => setTimeout(r, 50));
  expect(made()).toEqual([]);
  expect(readFileSync('/proc/self/cgroup', 'utf8')).toBe(before);
});

test('ownCgroupDir: the cgroup2 mount and this process\'s path in it', () => {
  const mountinfo = [
    '24 1 0:22 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');
  expect(ownCgroupDir('4:memory:/x\n0::/pod/ctr\n', mountinfo)).toBe('/sys/fs/cgroup/unified/pod/ctr');
  // A namespaced mount whose root is the container's own cgroup.
  expect(ownCgroupDir('0::/pod/ctr\n', '30 1 0:26 /pod /sys/fs/cgroup rw - cgroup2 cgroup2 rw')).toBe('/sys/fs/cgroup/ctr');
  expect(ownCgroupDir('4:memory:/x\n', mountinfo)).toBeUndefined();
  expect(ownCgroupDir('0::/\n', '24 1 0:22 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory')).toBeUndefined();
});

describe('selectDescendants', () => {
  const p = (pid: number, ppid: number, marked = false) => ({ pid, ppid, marked });

  test('the leader, what carries the id, and everything below either; nothing else', () => {
    const table = [
      p(1, 0), p(50, 1), p(100, 50), p(101, 100), p(102, 101), p(200, 1, true), p(201, 200), p(300, 1), p(301, 300), p(process.pid, 1, true),
    ];
    expect(selectDescendants(table, 100).sort((a, b) => a - b)).toEqual([100, 101, 102, 200, 201]);
    // Negative control: without the mark the re-parented process (ppid 1) is out of reach.
    expect(selectDescendants(table.map((e) => ({ ...e, marked: false })), 100).sort((a, b) => a - b)).toEqual([100, 101, 102]);
  });

  test('parseStat reads the parent pid past a command name with spaces and parentheses', () => {
    expect(parseStat('42 (a) b (c)) S 7 42 42 0 -1')).toEqual({ ppid: 7, zombie: false });
    expect(parseStat('43 (sleep) Z 1 43 43 0 -1')).toEqual({ ppid: 1, zombie: true });
    expect(parseStat('garbage')).toBeUndefined();
  });
});
