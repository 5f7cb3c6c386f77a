/**
 * Locates the control-plane binaries built by hack/build-control-plane.sh. The script is
 * idempotent (a version-keyed cache hit takes seconds), so running it is the default; a
 * caller that already knows the directory passes it and skips the script entirely.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Log } from './processes';

export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl', 'kwok', 'kubelet', 'kube-proxy'] as const;
export type Binary = typeof BINARIES[number];

export interface Binaries {
  readonly binDir: string;
  /** kwok's module directory in GOMODCACHE; its kustomize/stage/ holds the stage YAMLs. */
  readonly kwokModuleDir: string;
  path(name: Binary): string;
}

/** `~/.cache/cdk8s-agent-sandbox` (honours AGENT_SANDBOX_CACHE and XDG_CACHE_HOME like the build script). */
export function cacheRoot(): string {
  return process.env.AGENT_SANDBOX_CACHE
    ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'cdk8s-agent-sandbox');
}

const BUILD_SCRIPT = path.resolve(__dirname, '..', '..', 'hack', 'build-control-plane.sh');

/** Uses `binDir` (or $CONTROL_PLANE_BIN_DIR) when given, otherwise runs the build script. */
export async function resolveBinaries(log: Log, binDir = process.env.CONTROL_PLANE_BIN_DIR): Promise<Binaries> {
  const dir = fs.realpathSync(binDir ?? await runBuildScript(log));
  const missing = BINARIES.filter((b) => !fs.existsSync(path.join(dir, b)));
  if (missing.length) {
    throw new Error(`${dir} lacks ${missing.join(', ')}; run ${BUILD_SCRIPT} to build the control plane`);
  }
  const marker = path.join(dir, 'kwok-module-dir');
  const kwokModuleDir = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : '';
  if (!kwokModuleDir || !fs.existsSync(path.join(kwokModuleDir, 'kustomize', 'stage'))) {
    throw new Error(`${marker} does not name kwok's module directory; re-run ${BUILD_SCRIPT}`);
  }
  return { binDir: dir, kwokModuleDir, path: (name) => path.join(dir, name) };
}

function runBuildScript(log: Log): Promise<string> {
  const t0 = Date.now();
  log(`running ${BUILD_SCRIPT} (seconds when cached; a cold build takes tens of minutes)`);
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderrTail: string[] = [];
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    // The script reports progress on stderr; forward whole lines, keep a tail for errors.
    let partial = '';
    child.stderr.on('data', (c: Buffer) => {
      const lines = (partial + c.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('[build-control-plane')) log(line);
        stderrTail = [...stderrTail, line].slice(-30);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const dir = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && dir) {
        log(`binaries ready in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${dir}`);
        resolve(dir);
      } else {
        reject(new Error(`${BUILD_SCRIPT} failed (exit ${code})\n${[...stderrTail, partial].join('\n')}`));
      }
    });
  });
}
