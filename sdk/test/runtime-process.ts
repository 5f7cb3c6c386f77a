/**
 * The real runtime (`agent-sandbox-operator runtime` from operator/dist) as a child process on
 * 127.0.0.1 with a fresh workspace, for the SDK's tests of run and files. Build the bundle first
 * (`npx projen operator:build`).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';

const BUNDLE = path.resolve(process.cwd(), 'operator', 'dist', 'agent-sandbox-operator.mjs');

export interface RuntimeProcess {
  readonly url: string;
  /** sandboxd's gRPC ProcessService, when started with --grpc-port. */
  readonly grpcUrl?: string;
  readonly workspace: string;
  stop(): Promise<void>;
}

/** A port on 127.0.0.1 free a moment ago (the runtime reads --grpc-port 0 as "off"). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startRuntime(extraArgs: readonly string[] = []): Promise<RuntimeProcess> {
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npx projen operator:build" first`);
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-runtime-'));
  const args = [BUNDLE, 'runtime', '--listen-address', '127.0.0.1', '--port', '0', '--workspace', workspace, ...extraArgs];
  // The tests run as root on CI machines; the runtime refuses that unless told.
  if (process.getuid?.() === 0) args.push('--allow-root');
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const { port, grpcPort } = await new Promise<{ port: number; grpcPort?: number }>((resolve, reject) => {
    const lines: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (line) => {
      lines.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg === 'runtime listening') resolve({ port: entry.port, grpcPort: entry.grpcPort });
      } catch { /* not JSON */ }
    });
    child.once('exit', (code) => reject(new Error(`the runtime exited (${code}) before listening:\n${lines.join('\n')}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    grpcUrl: grpcPort === undefined ? undefined : `http://127.0.0.1:${grpcPort}`,
    workspace,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(workspace, { recursive: true, force: true });
    },
  };
}
