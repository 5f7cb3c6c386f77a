/** Loopback helpers shared by the runtime's HTTP tests: a server on 127.0.0.1:0 and a bare client. */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { SandboxdOptions, SandboxdServer } from '../../src/sandboxd/server';

export interface Reply { status: number; body: Buffer; headers: http.IncomingHttpHeaders }

/** A fresh temp dir (a real path) holding `ws` (the workspace) and `outside`, a sibling the runtime must never reach. */
export function tempWorkspace(prefix: string): { base: string; workspace: string; outside: string } {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  const workspace = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  return { base, workspace, outside };
}

/** A server on 127.0.0.1:0; tests run as root on CI, so allowRoot is explicit. */
export async function startRuntime(workspace: string, extra: Partial<SandboxdOptions> = {}): Promise<{ server: SandboxdServer; port: number }> {
  const server = new SandboxdServer({
    workspace,
    port: 0,
    listenAddress: '127.0.0.1',
    execTimeoutMs: 60_000,
    maxOutputBytes: 64 * 1024,
    allowRoot: true,
    ...extra,
  });
  const { port } = await server.start();
  return { server, port };
}

export interface RuntimeFixture {
  readonly base: string;
  readonly workspace: string;
  readonly outside: string;
  readonly server: SandboxdServer;
  readonly port: number;
}

/** Registers beforeAll/afterAll: a temp workspace and a runtime on it, drained and removed after the file's tests. */
export function runtimeFixture(prefix: string, extra: Partial<SandboxdOptions> = {}): RuntimeFixture {
  const fixture = {} as RuntimeFixture;
  beforeAll(async () => {
    Object.assign(fixture, tempWorkspace(prefix));
    Object.assign(fixture, await startRuntime(fixture.workspace, extra));
  });
  afterAll(async () => {
    await fixture.server?.drain(1000);
    rmSync(fixture.base, { recursive: true, force: true });
  });
  return fixture;
}

export interface RequestOptions {
  body?: Buffer | string | Buffer[];
  headers?: http.OutgoingHttpHeaders;
  /** Resolve on a connection error too: status -1, with whatever body had arrived. */
  tolerant?: boolean;
}

export function request(port: number, method: string, urlPath: string, options: RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const failed = (err: Error) => (options.tolerant ? resolve({ status: -1, body: Buffer.concat(chunks), headers: {} }) : reject(err));
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers: options.headers, agent: false }, (res) => {
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
      res.on('error', failed);
    });
    req.on('error', failed);
    const body = options.body;
    if (Array.isArray(body)) for (const part of body) req.write(part);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}

export const json = (reply: Reply): any => JSON.parse(reply.body.toString('utf8'));

export function exec(port: number, body: Record<string, unknown>, headers: http.OutgoingHttpHeaders = {}): Promise<Reply> {
  return request(port, 'POST', '/execute', { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', ...headers } });
}

export const BOUNDARY = 'b0undary0123456789abcdef';

/** A multipart body written in several chunks without Content-Length (chunked), as the SDK streams. */
export function upload(port: number, filename: string, content: Buffer, headers: http.OutgoingHttpHeaders = {}, tolerant = false): Promise<Reply> {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const pieces: Buffer[] = [head];
  for (let i = 0; i < content.length; i += 50_000) pieces.push(content.subarray(i, i + 50_000));
  pieces.push(tail);
  return request(port, 'POST', '/upload', { body: pieces, headers: { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`, ...headers }, tolerant });
}

/** Alive and not a zombie (an orphan's zombie may linger where PID 1 does not reap). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
