/**
 * Minimal test helper around the locally built `kubectl`. The official
 * @kubernetes/client-node is ESM-only and cannot be loaded by the CommonJS jest setup, and
 * kubectl gives us server-side apply, waits and JSON output for free.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { parse as parseYaml } from 'yaml';
import { assertLoopback } from './api';
import { sleep } from './processes';

export interface KubeOptions {
  readonly kubeconfig: string;
  /** Directory holding the `kubectl` binary. */
  readonly binDir: string;
  /** kubectl's discovery cache; defaults to a directory next to the kubeconfig, not ~/.kube. */
  readonly cacheDir?: string;
}

export interface KubectlOptions {
  readonly input?: string;
  readonly timeoutMs?: number;
}

/** Environment variables the integration global setup exports for test files. */
export const ENV = {
  kubeconfig: 'CONTROL_PLANE_KUBECONFIG',
  binDir: 'CONTROL_PLANE_BIN_DIR',
  workDir: 'CONTROL_PLANE_WORKDIR',
} as const;

export class KubectlError extends Error {
  public constructor(public readonly args: string[], public readonly stderr: string, public readonly code: number | string | null) {
    super(`kubectl ${args.join(' ')} failed (exit ${code}): ${stderr.trim()}`);
  }

  /** True when the server answered NotFound (kubectl prints `Error from server (NotFound)`). */
  public get notFound(): boolean {
    return /\(NotFound\)/.test(this.stderr);
  }
}

export class Kube {
  /** A client for the cluster the integration global setup started. */
  public static fromEnv(): Kube {
    const kubeconfig = process.env[ENV.kubeconfig];
    const binDir = process.env[ENV.binDir];
    if (!kubeconfig || !binDir) {
      throw new Error(`${ENV.kubeconfig} and ${ENV.binDir} are not set: run integration tests with test/integration/jest.config.js`);
    }
    const workDir = process.env[ENV.workDir];
    return new Kube({ kubeconfig, binDir, cacheDir: workDir ? path.join(workDir, 'kubectl-cache') : undefined });
  }

  private readonly bin: string;
  private readonly baseArgs: string[];

  public constructor(private readonly opts: KubeOptions) {
    const server = parseYaml(fs.readFileSync(opts.kubeconfig, 'utf8'))?.clusters?.[0]?.cluster?.server;
    assertLoopback(String(server));
    this.bin = path.join(opts.binDir, 'kubectl');
    const cacheDir = opts.cacheDir ?? path.join(path.dirname(opts.kubeconfig), '.kubectl-cache');
    this.baseArgs = [`--kubeconfig=${opts.kubeconfig}`, `--cache-dir=${cacheDir}`];
  }

  public get kubeconfig(): string {
    return this.opts.kubeconfig;
  }

  /** Runs kubectl and resolves with stdout; rejects with a KubectlError carrying stderr. */
  public kubectl(args: string[], opts: KubectlOptions = {}): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(this.bin, [...this.baseArgs, ...args], {
        maxBuffer: 256 * 1024 * 1024,
        timeout: opts.timeoutMs ?? 120_000,
      }, (err, stdout, stderr) => {
        if (err) reject(new KubectlError(args, stderr || err.message, (err as any).code ?? err.signal ?? null));
        else resolve(stdout);
      });
      child.stdin?.end(opts.input ?? '');
    });
  }

  /** `kubectl get ... -o json`, parsed. */
  public async getJson<T = any>(args: string[]): Promise<T> {
    return JSON.parse(await this.kubectl(['get', ...args, '-o', 'json']));
  }

  /** Like getJson, but resolves undefined when the object does not exist. */
  public async tryGetJson<T = any>(args: string[]): Promise<T | undefined> {
    try {
      return await this.getJson<T>(args);
    } catch (e) {
      if (e instanceof KubectlError && e.notFound) return undefined;
      throw e;
    }
  }

  /** Server-side apply of plain objects (as one List) under `fieldManager`; returns the applied objects. */
  public async applyServerSide(objects: object[], fieldManager: string, namespace?: string): Promise<any[]> {
    const list = { apiVersion: 'v1', kind: 'List', items: objects };
    const args = ['apply', '--server-side', `--field-manager=${fieldManager}`, '--force-conflicts', '-o', 'json', '-f', '-'];
    if (namespace) args.push('-n', namespace);
    const out = JSON.parse(await this.kubectl(args, { input: JSON.stringify(list) }));
    return out.kind === 'List' ? out.items : [out];
  }

  /** Creates (not applies) one object; fails if it already exists. */
  public async create<T = any>(object: object, namespace?: string): Promise<T> {
    const args = ['create', '-o', 'json', '-f', '-'];
    if (namespace) args.push('-n', namespace);
    return JSON.parse(await this.kubectl(args, { input: JSON.stringify(object) }));
  }

  /** `kubectl wait` (watch-based), e.g. wait(['pod/x', '--for=condition=Ready'], 'ns'). */
  public async wait(args: string[], namespace?: string, timeoutMs = 60_000): Promise<void> {
    const nsArgs = namespace ? ['-n', namespace] : [];
    await this.kubectl(['wait', ...args, ...nsArgs, `--timeout=${Math.ceil(timeoutMs / 1000)}s`], { timeoutMs: timeoutMs + 10_000 });
  }

  /**
   * Creates a namespace `<prefix>-<random>` and waits until kube-controller-manager has given
   * it a `default` ServiceAccount (ServiceAccount admission rejects pods until then).
   */
  public async createNamespace(prefix: string): Promise<string> {
    const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
    await this.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'cdk8s-agent-sandbox/test': prefix } } });
    await waitFor(() => this.tryGetJson(['serviceaccount', 'default', '-n', name]), 30_000, `ServiceAccount default in ${name}`);
    return name;
  }

  /** Deletes a namespace without waiting for finalization (the cluster is torn down anyway). */
  public async deleteNamespace(name: string): Promise<void> {
    await this.kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found']);
  }
}

/**
 * Waits until `predicate` returns a value other than undefined/false/null and returns it.
 * Re-evaluates with a short capped backoff (25 ms → 500 ms); errors thrown by the predicate
 * count as "not yet" and the last one is reported on timeout.
 */
type Maybe<T> = T | undefined | null | false;

export async function waitFor<T>(predicate: () => Promise<Maybe<T>> | Maybe<T>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let delay = 25;
  let last = '';
  for (;;) {
    try {
      const v = await predicate();
      if (v !== undefined && v !== null && v !== false) return v;
      last = '';
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ''}`);
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(delay * 2, 500);
  }
}
