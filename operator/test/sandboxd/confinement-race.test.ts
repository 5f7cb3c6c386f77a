/**
 * Confinement holds while a directory in the workspace is swapped with a symbolic link to a
 * directory outside it during the requests: no answer of any file endpoint (legacy API and
 * FilesystemService) carries anything from outside, and nothing outside is written or deleted.
 * A separate process does the swapping (rename(2) in a tight loop), so it races the runtime's
 * system calls, not its event loop.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Reply, json, request, runtimeFixture, upload } from './runtime-http';

const rt = runtimeFixture('sandboxd-race-', { filesPort: 0 });
const MARKER = `outside-${randomBytes(8).toString('hex')}`;
/** Names only the outside directory has: a listing that shows one has listed outside. */
const OUTSIDE_NAMES = /only-outside|victim-|tree-/;
const ROUNDS = 250;

/**
 * Exchanges `<dir>/a` and `<dir>/a.swap` (a directory and a link out) atomically with renameat2's
 * RENAME_EXCHANGE until `<dir>/stop` appears (60 s at most), so `a` is never missing (an upload
 * would create it anew); prints "ready", then the number of exchanges.
 */
const SWAPPER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
flips, deadline = 0, time.time() + 60
print('ready', flush=True)
while not os.path.exists('stop') and time.time() < deadline:
    for _ in range(200):
        if libc.renameat2(-100, b'a', -100, b'a.swap', 2) != 0:
            sys.exit('renameat2: errno %d' % ctypes.get_errno())
        flips += 1
print(flips, flush=True)
`;

function startSwapper(dir: string): { child: ChildProcess; ready: Promise<void>; flips: Promise<number> } {
  const child = spawn('python3', ['-c', SWAPPER, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    if (out.startsWith('ready\n')) markReady();
  });
  const flips = new Promise<number>((resolve) => child.on('close', () => resolve(Number(out.split('\n')[1]))));
  return { child, ready, flips };
}

test('a directory swapped with a link out of the workspace never leaks, writes or deletes outside', async () => {
  const { workspace, outside, port, server } = rt;
  const files = server.filesAddress!.port;
  // Inside: a/passwd. Outside: passwd with the marker, a file only it has, victims for the deletes.
  const inside = path.join(workspace, 'a');
  mkdirSync(inside);
  writeFileSync(path.join(inside, 'passwd'), 'inside content');
  writeFileSync(path.join(outside, 'passwd'), `${MARKER}\n`);
  writeFileSync(path.join(outside, 'only-outside'), MARKER);
  for (let i = 0; i < ROUNDS; i++) {
    writeFileSync(path.join(outside, `victim-${i}`), MARKER);
    writeFileSync(path.join(outside, `fvictim-${i}`), MARKER);
    mkdirSync(path.join(outside, `tree-${i}`));
    writeFileSync(path.join(outside, `tree-${i}`, 'leaf'), MARKER);
  }
  const outsideBefore = readdirSync(outside).sort();
  symlinkSync(outside, path.join(workspace, 'a.swap'));

  const swapper = startSwapper(workspace);
  await swapper.ready;
  const replies: Array<{ what: string; reply: Reply }> = [];
  const naive: string[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const t = { tolerant: true };
      const round = await Promise.all([
        ['download', request(port, 'GET', '/download/a/passwd', t)],
        ['list', request(port, 'GET', '/list/a', t)],
        ['exists', request(port, 'GET', '/exists/a/only-outside', t)],
        ['upload', upload(port, `a/up-${i}.txt`, Buffer.from('uploaded'), {}, true)],
        ['delete', request(port, 'DELETE', `/delete/a/victim-${i}`, t)],
        ['delete-tree', request(port, 'DELETE', `/delete/a/tree-${i}?recursive=true`, t)],
        ['files-get', request(files, 'GET', '/v1/files/a/passwd', t)],
        ['files-list', request(files, 'GET', '/v1/files/a', t)],
        ['files-put', request(files, 'PUT', `/v1/files/a/put-${i}.txt`, { body: 'put', ...t })],
        ['files-delete', request(files, 'DELETE', `/v1/files/a/fvictim-${i}`, t)],
      ].map(async ([what, pending]) => ({ what: what as string, reply: await (pending as Promise<Reply>) })));
      replies.push(...round);
      // What a path-based read sees meanwhile (a missing `a` between two renames is an error).
      try {
        naive.push(readFileSync(path.join(workspace, 'a', 'passwd'), 'utf8').trim());
      } catch (err) {
        naive.push((err as NodeJS.ErrnoException).code ?? 'error');
      }
    }
  } finally {
    writeFileSync(path.join(workspace, 'stop'), '');
  }
  const flips = await swapper.flips;

  // Negative controls: the swap really ran during the requests, a path-based read did see the
  // outside file, and the endpoints saw both states (so they were not refused throughout).
  expect(flips).toBeGreaterThan(ROUNDS * 4);
  expect(naive).toContain(MARKER);
  const downloads = replies.filter((r) => r.what === 'download').map((r) => r.reply);
  expect(downloads.some((r) => r.status === 200 && r.body.toString() === 'inside content')).toBe(true);
  expect(downloads.some((r) => r.status !== 200)).toBe(true);
  expect(replies.some((r) => r.what === 'upload' && r.reply.status === 200)).toBe(true);

  const leaks = ({ what, reply }: { what: string; reply: Reply }) => {
    const text = reply.body.toString('latin1');
    if (text.includes(MARKER)) return true;
    if (what === 'exists') return reply.status === 200 && json(reply).exists === true;
    return (what === 'list' || what === 'files-list') && OUTSIDE_NAMES.test(text);
  };
  const outsideAfter = readdirSync(outside).sort();
  expect({
    leaked: replies.filter(leaks).map((r) => `${r.what} ${r.reply.status} ${r.reply.body.toString().slice(0, 60)}`),
    writtenOutside: outsideAfter.filter((name) => !outsideBefore.includes(name)),
    deletedOutside: outsideBefore.filter((name) => !outsideAfter.includes(name)),
    emptiedOutside: outsideBefore.filter((name) => name.startsWith('tree-') && !existsSync(path.join(outside, name, 'leaf'))),
  }).toEqual({ leaked: [], writtenOutside: [], deletedOutside: [], emptiedOutside: [] });
}, 120_000);
