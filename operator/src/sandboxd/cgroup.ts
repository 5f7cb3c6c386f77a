/**
 * A cgroup (v2) per command, where the runtime may make one: a command and everything it starts
 * stay in it whatever they do to their sessions, process groups or environments, and writing
 * `cgroup.kill` ends them all at once. Not a wall against the command itself: it runs as the
 * runtime's user, and where the cgroup tree is writable to the runtime it is writable to the command
 * too, which can move itself into another cgroup (then only ./descendants' scan can find it). The runtime's own cgroup is found from /proc/self/cgroup and
 * the cgroup2 mount in /proc/self/mountinfo, and used when a child cgroup with `cgroup.kill`
 * (Linux 5.14+) can be made in it and the runtime can move itself in and out. Elsewhere (a
 * read-only /sys/fs/cgroup, as in most Pods) this is off and ./descendants alone finds what to
 * kill; it runs alongside in any case.
 *
 * A child must be born in its cgroup: moved there after spawn() it may already have forked (a
 * shell's `setsid cmd &` does at once). Node has no clone3(CLONE_INTO_CGROUP), so the runtime moves
 * itself into the command's cgroup for the synchronous spawn() call and straight back; nothing else
 * runs meanwhile, and a cgroup the runtime is found in is never killed.
 */
import { mkdirSync, promises as fsp, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** How long a kill waits for the cgroup to empty, polling `cgroup.events`. */
const EMPTY_WAIT_MS = 2_000;

/** The cgroup2 directory of this process, from /proc/self/cgroup and /proc/self/mountinfo text. */
export function ownCgroupDir(procCgroup: string, mountinfo: string): string | undefined {
  const own = /^0::(\/.*)$/m.exec(procCgroup)?.[1];
  if (own === undefined) return undefined;
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!after?.startsWith('cgroup2 ')) continue;
    const [, , , root, mountPoint] = before.split(' ');
    const relative = path.posix.relative(root, own);
    if (relative.startsWith('..')) continue;
    return path.posix.join(mountPoint.replace(/\\040/g, ' '), relative);
  }
  return undefined;
}

/** The cgroups of running commands, made under the runtime's own cgroup. */
export class CommandCgroups {
  /** Per-command cgroups when this process may make them, else undefined. */
  public static async detect(): Promise<CommandCgroups | undefined> {
    const [procCgroup, mountinfo] = await Promise.all([
      fsp.readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
      fsp.readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    ]);
    const parent = ownCgroupDir(procCgroup, mountinfo);
    if (parent === undefined) return undefined;
    const cgroups = new CommandCgroups(parent);
    // The whole sequence once: make a cgroup with cgroup.kill, move this process in and back, remove it.
    const probe = cgroups.make(`probe-${process.pid}`);
    if (!probe) return undefined;
    const killable = await fsp.access(path.join(probe.dir, 'cgroup.kill')).then(() => true, () => false);
    const moved = cgroups.moveSelf(probe.dir) && cgroups.moveSelf(parent);
    await probe.remove();
    return killable && moved ? cgroups : undefined;
  }

  /** Cgroups whose command ended while something it started still ran in them: removed once empty. */
  private readonly lingering = new Set<string>();

  private constructor(private readonly parent: string) {}

  /**
   * Runs `start` (which spawns the command's process, synchronously) with this process in the
   * command's own new cgroup, so the child starts there. When no cgroup could be made or entered
   * the child starts where the runtime is.
   */
  public spawnIn<T>(id: string, start: () => T): { child: T; cgroup?: CommandCgroup } {
    this.sweep();
    const cgroup = this.make(id);
    if (!cgroup) return { child: start() };
    if (!this.moveSelf(cgroup.dir)) {
      void cgroup.remove();
      return { child: start() };
    }
    let child: T;
    try {
      child = start();
    } catch (err) {
      // Nothing was started (spawn refused its arguments): the new cgroup would be left empty forever.
      this.moveSelf(this.parent);
      void cgroup.remove();
      throw err;
    }
    this.moveSelf(this.parent);
    return { child, cgroup };
  }

  /** A new, empty cgroup `sandboxd-<name>`, or undefined when it cannot be made. */
  private make(name: string): CommandCgroup | undefined {
    const dir = path.join(this.parent, `sandboxd-${name}`);
    try {
      mkdirSync(dir);
    } catch {
      return undefined;
    }
    return new CommandCgroup(dir, this.lingering);
  }

  /** Moves this process (every thread) into `dir`; false when it could not. */
  private moveSelf(dir: string): boolean {
    try {
      writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the lingering cgroups that have emptied. */
  private sweep(): void {
    for (const dir of this.lingering) {
      try {
        rmdirSync(dir);
        this.lingering.delete(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.lingering.delete(dir);
      }
    }
  }
}

/** One command's cgroup. */
export class CommandCgroup {
  public constructor(public readonly dir: string, private readonly lingering: Set<string>) {}

  /** SIGKILL to every process in the cgroup; resolves once it is empty (or after a bounded wait). */
  public async kill(): Promise<void> {
    // Never while the runtime is in it (a move back that failed): that would kill the runtime.
    const members = await fsp.readFile(path.join(this.dir, 'cgroup.procs'), 'utf8').catch(() => '');
    if (members.split('\n').includes(String(process.pid))) return;
    await fsp.writeFile(path.join(this.dir, 'cgroup.kill'), '1').catch(() => undefined);
    const deadline = Date.now() + EMPTY_WAIT_MS;
    while (Date.now() < deadline && (await this.populated())) await new Promise((r) => setTimeout(r, 10));
  }

  /** Removes the cgroup, or leaves it to be removed once what still runs in it has ended. */
  public async remove(): Promise<void> {
    await fsp.rmdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.lingering.add(this.dir);
    });
  }

  private async populated(): Promise<boolean> {
    const events = await fsp.readFile(path.join(this.dir, 'cgroup.events'), 'utf8').catch(() => 'populated 0');
    return /^populated 1$/m.test(events);
  }
}
