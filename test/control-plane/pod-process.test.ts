/**
 * A container's processes (tools/control-plane/pod-process): stopping one ends every member of its
 * process group, not only the command the runner started.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ContainerProcess } from '../../tools/control-plane/pod-process';
import { pidAlive } from '../../tools/control-plane/processes';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pod-process-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!ok()) throw new Error(`still waiting for ${what}`);
}

test('a background member of the group that ignores SIGTERM and outlives the command is killed by stop()', async () => {
  const pidFile = path.join(dir, 'srv.pid');
  // The command exits at once; its background "server" ignores SIGTERM and lives on in the group.
  const script = `(trap "" TERM; exec sleep 60) & echo $! > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}`;
  const container = new ContainerProcess({
    name: 'app',
    image: 'busybox',
    ip: '127.0.0.1',
    cwd: dir,
    logFile: path.join(dir, 'app.log'),
    restartPolicy: 'Never',
    launch: { kind: 'command', bin: '/bin/sh', args: ['-c', script], env: process.env, readiness: { kind: 'running' } },
    onChange: () => undefined,
    log: () => undefined,
  });
  container.start();
  await until('the background pid', () => fs.existsSync(pidFile));
  const srv = Number(fs.readFileSync(pidFile, 'utf8'));
  await until('the command to exit', () => container.terminated !== undefined);
  expect(pidAlive(srv)).toBe(true);
  try {
    await container.stop(300);
    await until(`pid ${srv} to be gone`, () => !pidAlive(srv));
  } finally {
    if (pidAlive(srv)) process.kill(srv, 'SIGKILL');
  }
});
