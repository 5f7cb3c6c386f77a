/**
 * Whether a sandbox's runtime runs a process now, asked the way a client would: `GET /processes` on
 * the runtime's port (sandboxd's process API, docs/runtime-processes.md), through the router's
 * guarded dial. A background process (a server, a build) started earlier keeps a sandbox in use
 * though no connection is open; the idle clock must not run out under it.
 *
 * Anything but a clear answer counts as no process: upstream's runtime has no /processes (404), a
 * runtime with a bearer token of its own refuses the router (401), a runtime that does not answer
 * within the timeout. The idle policy then does what it would without the probe.
 */
import * as http from 'node:http';
import type { Dial } from './proxy';
import type { Resolved, Unresolved } from './resolve';
import type { Sandbox } from '../model';

/** The runtime's port (upstream's legacy API and sandboxd's process API). */
export const RUNTIME_PORT = 8888;
/** A list of processes is small (at most 64 finished ones are kept, plus the running): more is not a runtime's answer. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface ProcessProbeOptions {
  readonly dial: Dial;
  /** The address to reach the sandbox at now (the resolver's answer from the caches). */
  readonly resolve: (sandbox: Sandbox) => Resolved | Unresolved;
  readonly timeoutMs: number;
  readonly port?: number;
}

/** A probe: resolves true when the runtime lists a running process, false otherwise (never rejects). */
export function processProbe(opts: ProcessProbeOptions): (sandbox: Sandbox) => Promise<boolean> {
  return (sandbox) => {
    const resolved = opts.resolve(sandbox);
    if ('detail' in resolved) return Promise.resolve(false);
    return listsRunningProcess(opts.dial, resolved.ip, opts.port ?? RUNTIME_PORT, opts.timeoutMs);
  };
}

function listsRunningProcess(dial: Dial, ip: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request({
      host: ip, port, method: 'GET', path: '/processes', headers: { accept: 'application/json' }, createConnection: () => dial(ip, port),
    }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return finish(false);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) return finish(false);
        chunks.push(chunk);
      });
      res.on('end', () => finish(runningIn(Buffer.concat(chunks).toString('utf8'))));
      res.on('error', () => finish(false));
    });
    const timer = setTimeout(() => finish(false), timeoutMs);
    let finished = false;
    function finish(running: boolean): void {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      req.destroy();
      resolve(running);
    }
    req.on('error', () => finish(false));
    req.end();
  });
}

/** Whether sandboxd's `{"processes": [...]}` lists one with status running. */
export function runningIn(body: string): boolean {
  try {
    const processes = (JSON.parse(body) as { processes?: unknown }).processes;
    return Array.isArray(processes) && processes.some((p) => (p as { status?: unknown } | null)?.status === 'running');
  } catch {
    return false;
  }
}
