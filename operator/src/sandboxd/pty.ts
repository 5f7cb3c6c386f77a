/**
 * Pseudo-terminals without a native addon. Node cannot open a PTY itself, so a process that asks
 * for one runs under util-linux `script`, which opens the PTY, starts the command as the leader of
 * a new session on it, copies our stdin pipe to the PTY and the PTY's output to our stdout pipe:
 * the command sees a real terminal (isatty, line discipline, echo, ^C), and everything it prints
 * arrives on one stream, as with upstream sandboxd's PTY.
 *
 * Sizes: the initial size is set with `stty` inside the PTY before the command is exec'd; a later
 * resize runs `stty -F <the command's tty>`, which makes the kernel send SIGWINCH to it. The
 * command's pid (for signals and its tty) is found as the child of `script` in /proc. Limits:
 * needs `script` and `stty` in the image and Linux /proc; a signal death is reported by `script`
 * as exit 128+n, which the caller maps back to -1 only for signals it sent.
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';

/** Quotes a word for POSIX sh. */
export function shQuote(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

/**
 * The argv that runs `command` on a new PTY of `cols` x `rows` (when both are > 0). `script` runs
 * its -c text with $SHELL, so SHELL is set to /bin/sh for it and restored for the command.
 */
export function ptyArgv(command: readonly string[], cols: number, rows: number, shell: string | undefined):
{ file: string; args: string[]; shellEnv: string } {
  const size = cols > 0 && rows > 0 ? `stty cols ${cols} rows ${rows} 2>/dev/null; ` : '';
  const restore = shell === undefined ? 'unset SHELL; exec' : `SHELL=${shQuote(shell)} exec`;
  return { file: 'script', args: ['--quiet', '--return', '--command', `${size}${restore} ${command.map(shQuote).join(' ')}`, '/dev/null'], shellEnv: '/bin/sh' };
}

/** The pid of `script`'s child (the command, once exec'd), if it has one yet. */
export async function ptyChildPid(scriptPid: number): Promise<number | undefined> {
  const children = await fsp.readFile(`/proc/${scriptPid}/task/${scriptPid}/children`, 'utf8').catch(() => '');
  const first = Number(children.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 0 ? first : undefined;
}

/** Sets the window size of the terminal `pid` has on stdin. */
export async function resizePty(pid: number, cols: number, rows: number): Promise<void> {
  const tty = await fsp.readlink(`/proc/${pid}/fd/0`);
  if (!tty.startsWith('/dev/pts/')) throw new Error(`process ${pid} has no terminal on stdin (${tty})`);
  await new Promise<void>((resolve, reject) => {
    execFile('stty', ['-F', tty, 'cols', String(cols), 'rows', String(rows)], (err) => (err ? reject(err) : resolve()));
  });
}
