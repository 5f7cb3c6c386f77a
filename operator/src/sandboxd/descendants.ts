/**
 * Finding and killing everything a command started, including what left its process group.
 *
 * Killing a command's process group misses a descendant that called setsid() (`setsid sleep 30 &`):
 * it keeps running and, when it inherited the output pipes, keeps the answer open. So every command
 * runs with a variable of its own, `SANDBOXD_COMMAND_ID=<random>`, which its descendants inherit, and
 * a kill SIGKILLs, besides the group, every process found in /proc that carries that value in its
 * environment or descends (by parent pid) from the command or from such a process. Rounds repeat
 * until one finds nothing, so children forked during the kill are caught too.
 *
 * Limits: a descendant that clears its environment (`env -i`) and is re-parented away from the
 * command (its parent gone) is not found; nor is one the runtime's user may not inspect
 * (/proc/<pid>/environ of another user). A process run as the same user could always defeat this.
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';

/** The variable that names a command in its own and its descendants' environments. */
export const COMMAND_ID_VARIABLE = 'SANDBOXD_COMMAND_ID';

/** Kill rounds at most: each catches what the previous one's victims forked meanwhile. */
const MAX_ROUNDS = 8;

/** A fresh id for one command. */
export function newCommandId(): string {
  return randomBytes(12).toString('hex');
}

/** `env` with the command's id set (over any value a client sent). */
export function withCommandId(env: NodeJS.ProcessEnv, id: string): NodeJS.ProcessEnv {
  return { ...env, [COMMAND_ID_VARIABLE]: id };
}

interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly marked: boolean;
}

/** The parent pid of a /proc/<pid>/stat line, and whether the process is a zombie. */
export function parseStat(stat: string): { ppid: number; zombie: boolean } | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = stat.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  return Number.isInteger(ppid) ? { ppid, zombie: fields[0] === 'Z' } : undefined;
}

/** Every live process, with its parent and whether its environment carries `needle`. */
async function scan(needle: Buffer): Promise<ProcessEntry[]> {
  const names = await fsp.readdir('/proc').catch(() => [] as string[]);
  const entries = await Promise.all(names.filter((name) => /^\d+$/.test(name)).map(async (name): Promise<ProcessEntry | undefined> => {
    const stat = parseStat(await fsp.readFile(`/proc/${name}/stat`, 'utf8').catch(() => ''));
    if (!stat || stat.zombie) return undefined;
    const environ = await fsp.readFile(`/proc/${name}/environ`).catch(() => Buffer.alloc(0));
    // Each variable ends with NUL; the first one has none before it.
    const marked = environ.indexOf(needle) >= 0 || environ.subarray(0, needle.length - 1).equals(needle.subarray(1));
    return { pid: Number(name), ppid: stat.ppid, marked };
  }));
  return entries.filter((e): e is ProcessEntry => e !== undefined);
}

/**
 * The pids to kill: those carrying the id, `leader`, and everything below any of them. Never this
 * process or pid 1.
 */
export function selectDescendants(processes: readonly ProcessEntry[], leader: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of processes) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const chosen = new Set<number>();
  const queue = [leader, ...processes.filter((p) => p.marked).map((p) => p.pid)];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (chosen.has(pid)) continue;
    chosen.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  const live = new Set(processes.map((p) => p.pid));
  return [...chosen].filter((pid) => live.has(pid) && pid !== process.pid && pid > 1);
}

/**
 * SIGKILL to the process group of `leader` and to every process of the command `id` (see the
 * module comment); resolves once a round finds none left, or after the last round.
 */
export async function killCommand(leader: number, id: string): Promise<void> {
  killGroup(leader);
  const needle = Buffer.from(`\0${COMMAND_ID_VARIABLE}=${id}\0`);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const victims = selectDescendants(await scan(needle), leader);
    if (victims.length === 0) return;
    for (const pid of victims) {
      killGroup(pid);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}

/** SIGKILL to the process group `pid` leads, if it leads one. */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // not a group leader, or gone
  }
}
