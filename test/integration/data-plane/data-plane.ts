/**
 * The data plane of the integration tests, for real: the operator (as the install bundle's
 * ServiceAccount) turns a SandboxTemplate whose Pod opts in to the pod runner, a SandboxWarmPool and
 * SandboxClaims into Ready Sandboxes whose Pods run the operator's runtime (legacy API on 8888) and
 * the echo fixture (HTTP + WebSocket on 9000) as local processes on their own loopback pod address.
 * Plus the requests a client sends through a router.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { NameHash } from '../../../src/api/name-hash';
import { ApiClient, assertLoopback, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { podRunnerDir } from '../../../tools/control-plane/control-plane';
import { ENV, Kube, waitFor } from '../../../tools/control-plane/kube';
import { RUN_LABEL } from '../../../tools/control-plane/pod-runner';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';
import { BundleRbac } from '../operator/bundle-rbac';
import { ExtensionsApi, claimManifest, claimReady, poolManifest, templateManifest } from '../operator/extensions-api';
import { HASH_LABEL } from '../operator/sandbox-api';

export const RUNTIME_PORT = 8888;
export const ECHO_PORT = 9000;
/** Small, so the truncation test stays small too. */
export const MAX_OUTPUT_BYTES = 65_536;
const ECHO_SERVER = path.join(__dirname, 'fixtures', 'echo-server.cjs');

/** A template whose Pod the pod runner runs: the runtime (with `runtimeArgs` added to its flags) and the echo fixture. */
export function runtimeTemplate(name: string, runtimeArgs: readonly string[] = []): any {
  const tpl = templateManifest(name);
  tpl.spec.podTemplate = {
    metadata: { labels: { [RUN_LABEL]: 'true', app: 'agent' } },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'runtime',
          image: 'example.invalid/agent-sandbox-operator:0',
          command: ['agent-sandbox-operator', 'runtime', `--port=${RUNTIME_PORT}`, `--max-output-bytes=${MAX_OUTPUT_BYTES}`, ...runtimeArgs],
          ports: [{ containerPort: RUNTIME_PORT }],
        },
        {
          name: 'echo',
          image: 'example.invalid/echo:0',
          command: ['node', ECHO_SERVER],
          env: [{ name: 'PORT', value: String(ECHO_PORT) }],
          ports: [{ containerPort: ECHO_PORT }],
        },
      ],
    },
  };
  return tpl;
}

export class DataPlane {
  /**
   * A namespace with the operator running, a runtime template, a warm pool of `poolSize` and that
   * many claims (or `options.claims`), all Ready. `sandboxes` are the claimed Sandboxes' names, in
   * claim order.
   */
  public static async start(prefix: string, poolSize: number,
    options: { claims?: number; runtimeArgs?: readonly string[] } = {}): Promise<DataPlane> {
    await ensureOperatorBundle();
    const kube = Kube.fromEnv();
    const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
    const ns = await kube.createNamespace(prefix);
    const rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: true });
    const op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: ['--extensions=true'] });
    const dp = new DataPlane(kube, api, ns, rbac, op);
    const ext = dp.ext;
    try {
      await ext.create('sandboxtemplates', runtimeTemplate('runtime', options.runtimeArgs));
      await ext.create('sandboxwarmpools', poolManifest('pool', 'runtime', poolSize));
      await ext.waitPoolReady('pool', poolSize);
      for (let i = 0; i < (options.claims ?? poolSize); i++) {
        await ext.create('sandboxclaims', claimManifest(`claim-${i}`, 'pool'));
        const claim = await ext.waitClaim(`claim-${i}`, (c) => claimReady(c) && c.status?.sandbox?.name, 'Ready with a sandbox');
        dp.sandboxes.push(claim.status.sandbox.name);
      }
      return dp;
    } catch (e) {
      // The caller never gets `dp`, so its afterAll cannot stop it: an operator left running here
      // watches every namespace and would reconcile the next test files' objects.
      const report = await dp.diagnose();
      await dp.stop().catch(() => undefined);
      throw new Error(`${(e as Error).message}\n${report}`, { cause: e });
    }
  }

  public readonly ext: ExtensionsApi;
  public readonly sandboxes: string[] = [];

  private constructor(public readonly kube: Kube, public readonly api: ApiClient, public readonly ns: string,
    public readonly rbac: BundleRbac, public readonly op: OperatorProcess) {
    this.ext = new ExtensionsApi(api, ns);
  }

  public sandboxPath(name: string): string {
    return `${this.ext.sandboxesPath}/${name}`;
  }

  /** The Sandbox's live, Ready Pod (waits for one). */
  public pod(sandbox: string, timeoutMs = 60_000): Promise<any> {
    return waitFor(async () => {
      const pods = (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/pods?labelSelector=${HASH_LABEL}=${NameHash.of(sandbox)}`)).items;
      return pods.find((p: any) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    }, timeoutMs, `a Ready pod of sandbox ${sandbox}`);
  }

  /**
   * What a test needs to tell why the data plane did not come up: the pool's status, each
   * Sandbox's and Pod's conditions, the pod runner's lines about this namespace and the tails of
   * the Pods' container logs, and the operator's last lines.
   */
  public async diagnose(): Promise<string> {
    const out: string[] = [];
    // Each part on its own: one failed read does not lose the rest.
    const part = async (what: string, read: () => Promise<void> | void) => {
      try {
        await read();
      } catch (e) {
        out.push(`(${what}: ${(e as Error).message})`);
      }
    };
    const brief = (conds: any[] | undefined) => (conds ?? []).map((c: any) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ''}`).join(' ');
    await part('pool', async () => {
      out.push(`pool status: ${JSON.stringify((await this.ext.get('sandboxwarmpools', 'pool'))?.status)}`);
    });
    await part('sandboxes', async () => {
      for (const s of await this.ext.sandboxes()) {
        out.push(`sandbox ${s.metadata.name}: created ${s.metadata.creationTimestamp}, ${brief(s.status?.conditions)}`);
      }
    });
    await part('pods', async () => {
      for (const p of (await this.api.call('GET', `/api/v1/namespaces/${this.ns}/pods`)).items) {
        const containers = (p.status?.containerStatuses ?? []).map((c: any) => `${c.name} ready=${c.ready} restarts=${c.restartCount} ${JSON.stringify(c.state)}`);
        out.push(`pod ${p.metadata.name}: node ${p.spec.nodeName ?? '-'}, ip ${p.status?.podIP ?? '-'}, ${p.status?.phase}, ${brief(p.status?.conditions)}; ${containers.join('; ')}`);
      }
    });
    const workDir = process.env[ENV.workDir];
    if (workDir) {
      await part('pod runner log', () => {
        const runner = path.join(workDir, 'logs', 'pod-runner.log');
        if (!fs.existsSync(runner)) return;
        const lines = fs.readFileSync(runner, 'utf8').split('\n').filter((l) => l.includes(`${this.ns}/`));
        out.push(`pod runner about ${this.ns} (last 30 lines):`, ...lines.slice(-30));
      });
      await part('container logs', () => {
        const containerLogs = path.join(podRunnerDir(workDir), 'logs');
        for (const f of fs.existsSync(containerLogs) ? fs.readdirSync(containerLogs).filter((n) => n.startsWith(`${this.ns}_`)) : []) {
          out.push(`${f} (tail):`, ...fs.readFileSync(path.join(containerLogs, f), 'utf8').split('\n').slice(-20));
        }
      });
    }
    out.push('operator (last 20 lines):', this.op.tail(20));
    return out.join('\n');
  }

  public async stop(): Promise<void> {
    await this.op.stop();
    for (const plural of ['sandboxclaims', 'sandboxwarmpools'] as const) await this.api.call('DELETE', this.ext.path(plural));
    await this.api.call('DELETE', this.ext.sandboxesPath);
    await this.kube.deleteNamespace(this.ns);
    await this.rbac.remove();
    this.api.close();
  }
}

export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** One request to a loopback listener (the router), answered in full. */
export interface SendOptions {
  readonly method?: string;
  readonly headers?: http.OutgoingHttpHeaders;
  readonly body?: string | Buffer;
  /** @default 127.0.0.1 */
  readonly host?: string;
}

export function send(port: number, urlPath: string, opts: SendOptions = {}): Promise<Reply> {
  const host = opts.host ?? '127.0.0.1';
  assertLoopback(`http://${host}:${port}`);
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path: urlPath, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** A `multipart/form-data` body with one part named `file` whose filename is the destination path. */
export function multipartFile(filename: string, content: string): { body: Buffer; contentType: string } {
  const boundary = `----dataplane${Date.now().toString(16)}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n\r\n`),
    Buffer.from(content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
