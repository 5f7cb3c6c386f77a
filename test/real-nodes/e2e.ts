/**
 * Helpers of the real-node suite: templates made with the library's constructs (as a platform team
 * writes them), the router reached through a real `kubectl port-forward`, and commands run inside
 * a sandbox through the router.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Chart, Duration, Testing } from 'cdk8s';
import { SandboxRuntimeClass } from '../../src/runtime-class';
import { SandboxTemplate, SandboxTemplateProps } from '../../src/template';
import { SandboxWarmPool } from '../../src/warm-pool';
import { ENV, Kube } from '../../tools/control-plane/kube';
import { sleep } from '../../tools/control-plane/processes';
import { agentServiceAccount } from '../../tools/shared/real-pool';
import { ROUTER_SERVICE, SYSTEM_NAMESPACE } from '../../tools/shared/real-system';

export const IMAGES_ENV = 'REAL_NODE_IMAGES';

/** The images global setup imported (name → reference). */
export function images(): Record<string, string> {
  const raw = process.env[IMAGES_ENV];
  if (!raw) throw new Error(`${IMAGES_ENV} is not set: run this file with test/real-nodes/jest.config.js`);
  return JSON.parse(raw);
}

export function kube(): Kube {
  return Kube.fromEnv();
}

export function workDir(): string {
  return process.env[ENV.workDir]!;
}

export interface PoolOptions {
  readonly runtimeClass?: 'gvisor';
  readonly replicas?: number;
  /** Run as this user; undefined leaves the image's (root) user, which the hardening refuses. */
  readonly runAsUser?: number;
  readonly extra?: Partial<SandboxTemplateProps>;
}

/** A SandboxTemplate on the stock Python image with the runtime injected (`runtime: {}`), and a warm pool of it. */
export function pythonPool(namespace: string, name: string, o: PoolOptions = {}): any[] {
  const chart: Chart = Testing.chart();
  const template = new SandboxTemplate(chart, `${name}-template`, {
    metadata: { name, namespace },
    ...(o.runtimeClass ? { runtimeClass: SandboxRuntimeClass.fromName(o.runtimeClass) } : {}),
    containers: [{
      image: images()['python-sandbox'],
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
      ...(o.runAsUser !== undefined ? { security: { runAsUser: o.runAsUser, runAsGroup: o.runAsUser } } : {}),
    }],
    runtime: {},
    terminationGracePeriod: Duration.seconds(2),
    ...o.extra,
  });
  new SandboxWarmPool(chart, `${name}-pool`, { metadata: { name, namespace }, template, replicas: o.replicas ?? 1 });
  return Testing.synth(chart);
}

/** A port-forward to the router Service through the real kubelet, as upstream's SDKs open one. */
export class RouterForward {
  public static async open(k: Kube): Promise<RouterForward> {
    const child = spawn(path.join(process.env[ENV.binDir]!, 'kubectl'), [
      `--kubeconfig=${k.kubeconfig}`, 'port-forward', '-n', SYSTEM_NAMESPACE, `svc/${ROUTER_SERVICE}`, '--address=127.0.0.1', ':8080',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`port-forward did not start: ${out}`)), 30_000);
      const onData = (c: Buffer) => {
        out += c.toString();
        const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`port-forward exited (${code}): ${out}`));
      });
    });
    return new RouterForward(child, `http://127.0.0.1:${port}`);
  }

  private constructor(private readonly child: ChildProcess, public readonly url: string) {}

  public close(): void {
    this.child.kill('SIGTERM');
  }
}

/**
 * A ServiceAccount `agent` in `namespace` that may claim sandboxes and use them through the router
 * (the router's `--auth=kubernetes` reviews `get` on the Sandbox or its claim), and a token of it.
 */
export async function agentToken(k: Kube, namespace: string): Promise<string> {
  await k.applyServerSide(agentServiceAccount(namespace), 'real-nodes-test');
  return (await k.kubectl(['create', 'token', 'agent', '-n', namespace, '--duration=1h'])).trim();
}

/**
 * A namespace of the suite's own with `objects(ns)` applied, the router reached through a port-forward,
 * and an agent's token for it; close() undoes all of that.
 */
export interface TestNamespace {
  readonly k: Kube;
  readonly ns: string;
  readonly router: RouterForward;
  readonly token: string;
  close(): Promise<void>;
}

export async function openNamespace(prefix: string, objects: (ns: string) => any[]): Promise<TestNamespace> {
  const k = kube();
  const ns = await k.createNamespace(prefix);
  await k.applyServerSide(objects(ns), 'real-nodes-test');
  const router = await RouterForward.open(k);
  const token = await agentToken(k, ns);
  return {
    k,
    ns,
    router,
    token,
    close: async () => {
      router.close();
      await k.deleteNamespace(ns);
    },
  };
}

/** The name of a Ready Pod of warm pool `pool` (its members are named `<pool>-<suffix>`). */
/**
 * Claims a sandbox from `pool` (a SandboxClaim named `claim`, or `<pool>-claim`) and returns the name
 * of the Sandbox the claim holds once it is Ready: the router serves only claimed sandboxes (an
 * unclaimed pool member is refused), and the agent's grant is `connect` on its claims.
 */
export async function claimSandbox(k: Kube, ns: string, pool: string, claim = `${pool}-claim`, timeoutMs = 180_000): Promise<string> {
  await k.applyServerSide([{
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name: claim, namespace: ns }, spec: { warmPoolRef: { name: pool } },
  }], 'real-nodes-test');
  return eventually(`claim ${claim} Ready with a sandbox`, async () => {
    const got = await k.tryGetJson(['sandboxclaim', claim, '-n', ns]);
    const ready = got?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
    return ready ? (got.status?.sandbox?.name as string | undefined) : undefined;
  }, timeoutMs);
}

export interface ExecResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exit_code: number;
}

/** Runs a command in a sandbox through the router (`/execute` of the legacy runtime API). */
export async function execute(
  routerUrl: string, token: string, namespace: string, sandbox: string, command: string, timeoutMs = 60_000,
): Promise<ExecResult> {
  const res = await fetch(`${routerUrl}/execute`, {
    method: 'POST',
    headers: { 'authorization': `Bearer ${token}`, 'content-type': 'application/json', 'x-sandbox-id': sandbox, 'x-sandbox-namespace': namespace, 'x-sandbox-port': '8888' },
    body: JSON.stringify({ command, shell: true, timeout_seconds: Math.ceil(timeoutMs / 1000) }),
    signal: AbortSignal.timeout(timeoutMs + 5_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/execute in ${namespace}/${sandbox}: HTTP ${res.status}: ${text}`);
  return JSON.parse(text) as ExecResult;
}

/** Python that tries a TCP connection and prints `open` or the error's class. */
export function probeCommand(host: string, port: number, timeoutSeconds = 3): string {
  const py = [
    'import socket',
    'try:',
    `    socket.create_connection((${JSON.stringify(host)}, ${port}), ${timeoutSeconds}).close(); print('open')`,
    'except Exception as e:',
    '    print(type(e).__name__)',
  ].join('\n');
  return `python3 -c ${shellQuote(py)}`;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, '\'\\\'\'')}'`;
}

/** Waits until `check` returns a value (not undefined), polling. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 1_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/** Pods of a namespace as JSON. */
export async function pods(k: Kube, namespace: string, selector?: string): Promise<any[]> {
  return (await k.getJson<{ items: any[] }>(['pods', '-n', namespace, ...(selector ? ['-l', selector] : [])])).items;
}

/**
 * The host pid of the process of `pod`'s container `container` whose command line contains `match`,
 * found by the container ID in its cgroup (runc: the container's processes are the host's).
 */
export function containerProcess(pod: any, container: string, match: string): string | undefined {
  const status = (pod.status?.containerStatuses ?? []).find((c: any) => c.name === container);
  const id = String(status?.containerID ?? '').replace(/^containerd:\/\//, '');
  if (!id) return undefined;
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).find((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cgroup`, 'utf8').includes(id) && fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(match);
    } catch {
      return false;
    }
  });
}

export function writeArtifact(name: string, content: string): void {
  const dir = path.join(process.cwd(), 'test-results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, name), content);
}
