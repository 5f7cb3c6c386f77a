/**
 * The pod runner: a kubelet stand-in for the local cluster, so the data plane can run for real
 * without containers. It owns the Pods bound to a kwok node that carry the label
 * `control-plane.local/run: "<value>"` (the cluster's own runner takes "true"; kwok's stages leave
 * every Pod with that label alone): it gives each a unique address from its half of the pod CIDR,
 * runs its containers as local processes (see pod-command.ts and pod-process.ts), keeps the Pod's
 * status (phase, podIP, Ready/ContainersReady, containerStatuses) in step with them, and on
 * deletion stops them, removes the Pod's workspace and then removes the Pod object, as kwok's
 * pod-delete stage does. It also writes a kwok PortForward (kwok.x-k8s.io/v1alpha1) per Pod, owned
 * by the Pod, that maps each of the Pod's ports to the same port on the Pod's address: kwok's
 * kubelet-like server then serves the API server's pods/portforward for it (`kubectl port-forward`).
 *
 * Crash safety: every child's pid is kept in `<workDir>/pids` (reaped by `cli.ts down` and the next
 * start), children are process-group leaders stopped as a group, and Node.js children stop
 * themselves when the runner's end of their stdin closes. With --exit-with-stdin the runner in turn
 * stops everything when its owner (a test run) goes away.
 *
 * Run: node -r ts-node/register/transpile-only tools/control-plane/pod-runner.ts --kubeconfig=F --work-dir=D --cidr=C [--bundle=F] [--label-value=V] [--exit-with-stdin]
 */
import * as fs from 'fs';
import * as path from 'path';
import { assertLoopback } from './api';
import { AddressLeases, IpAllocator, isLoopbackCidr } from './pod-cidr';
import { launchFor, LaunchError, PodContext } from './pod-command';
import { ContainerProcess, RestartPolicy } from './pod-process';
import { Log } from './processes';
import { InformerFactory } from '../../operator/src/runtime/informer-factory';
import { HttpKubeClient } from '../../operator/src/runtime/kube-client';
import { fromKubeconfigFiles } from '../../operator/src/runtime/kubeconfig';
import { ApiError, KubeObject, ResourceType } from '../../operator/src/runtime/types';

/** The opt-in label; its value names the runner that owns the Pod. */
export const RUN_LABEL = 'control-plane.local/run';
export const DEFAULT_RUN_VALUE = 'true';
/** Longest a runner shutdown waits for one Pod's processes before SIGKILL. */
const SHUTDOWN_GRACE_MS = 10_000;
const PODS: ResourceType = { group: '', version: 'v1', resource: 'pods', namespaced: true };
const PVCS: ResourceType = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespaced: true };
const PVS: ResourceType = { group: '', version: 'v1', resource: 'persistentvolumes', namespaced: false };
/** How often a Pod whose claims are not bound yet is looked at again. */
const CLAIM_RETRY_MS = 500;
const PORT_FORWARDS: ResourceType = { group: 'kwok.x-k8s.io', version: 'v1alpha1', resource: 'portforwards', namespaced: true };
const FIELD_MANAGER = 'cdk8s-agent-sandbox-pod-runner';

export interface PodRunnerOptions {
  readonly kubeconfig: string;
  /** Holds `pids`, `ready`, the Pods' workspaces (`pods/`) and their containers' logs (`logs/`). */
  readonly workDir: string;
  /** The runner's half of the pod CIDR (see pod-cidr.ts). */
  readonly cidr: string;
  readonly bundle: string;
  /** @default "true" */
  readonly labelValue?: string;
  readonly log: Log;
}

interface Pod extends KubeObject {
  metadata: KubeObject['metadata'] & { deletionGracePeriodSeconds?: number };
  spec: {
    nodeName?: string;
    restartPolicy?: RestartPolicy;
    terminationGracePeriodSeconds?: number;
    containers: Array<import('./pod-command').ContainerSpec>;
    initContainers?: Array<{ name: string; image?: string }>;
    volumes?: Array<{ name: string; persistentVolumeClaim?: { claimName: string } }>;
  };
  status?: { podIP?: string; conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }> };
}

interface RunningPod {
  readonly pod: Pod;
  readonly ip: string;
  readonly workspace: string;
  readonly containers: ContainerProcess[];
  readonly startTime: string;
  readonly transitions: Map<string, { status: string; at: string }>;
  terminating?: Promise<void>;
  lastSent?: string;
  sending?: Promise<void>;
  dirty?: boolean;
}

export class PodRunner {
  private readonly client: HttpKubeClient;
  private readonly informers: InformerFactory;
  private readonly ips: IpAllocator;
  private readonly leases = new AddressLeases();
  private readonly pods = new Map<string, RunningPod>();
  /** Pods (by uid) waiting for their PersistentVolumeClaims to be bound before they run. */
  private readonly mounting = new Set<string>();
  private readonly labelValue: string;
  private stopped = false;

  public constructor(private readonly opts: PodRunnerOptions) {
    // Pods' processes bind these addresses and the runner probes them: they must never leave the machine.
    if (!isLoopbackCidr(opts.cidr)) throw new Error(`--cidr must be an IPv4 CIDR inside 127.0.0.0/8, such as 127.72.0.0/13; got "${opts.cidr}"`);
    const connection = fromKubeconfigFiles([opts.kubeconfig]);
    assertLoopback(connection.server);
    this.client = new HttpKubeClient({ connection, userAgent: 'cdk8s-agent-sandbox-pod-runner', qps: -1, maxInFlight: 0 });
    this.informers = new InformerFactory(this.client);
    // A random start and machine-wide leases keep the runners of parallel clusters on one host apart.
    this.ips = new IpAllocator(opts.cidr, { offset: Math.floor(Math.random() * 2 ** 24), claim: (ip) => this.leases.claim(ip) });
    this.labelValue = opts.labelValue ?? DEFAULT_RUN_VALUE;
    fs.mkdirSync(path.join(opts.workDir, 'pods'), { recursive: true });
  }

  /** Starts watching; resolves once the existing Pods have been seen. */
  public async start(): Promise<void> {
    const informer = this.informers.forResource<Pod>(PODS, { labelSelector: `${RUN_LABEL}=${this.labelValue}` });
    informer.addHandlers({
      onAdd: (pod) => this.sync(pod),
      onUpdate: (_, pod) => this.sync(pod),
      onDelete: (pod) => void this.terminate(pod, false),
    });
    this.informers.start();
    await informer.synced;
    fs.writeFileSync(path.join(this.opts.workDir, 'ready'), `${process.pid}\n`);
    this.opts.log(`watching pods labelled ${RUN_LABEL}=${this.labelValue}; addresses from ${this.opts.cidr}`);
  }

  /** Stops every Pod's processes (the Pods stay; the cluster is going away). */
  public async stop(): Promise<void> {
    this.stopped = true;
    this.informers.stop();
    await Promise.all([...this.pods.values()].map((rp) => Promise.all(rp.containers.map((c) => c.stop(SHUTDOWN_GRACE_MS)))));
    this.writePids();
    this.leases.releaseAll();
    this.client.close();
  }

  private sync(pod: Pod): void {
    if (this.stopped || !pod.spec.nodeName) return;
    if (pod.metadata.deletionTimestamp) {
      void this.terminate(pod, true);
      return;
    }
    const uid = pod.metadata.uid!;
    if (this.pods.has(uid) || this.mounting.has(uid)) return;
    if (!(pod.spec.volumes ?? []).some((v) => v.persistentVolumeClaim)) {
      this.run(pod, new Map());
      return;
    }
    this.mounting.add(uid);
    void this.mountClaims(pod).then((claims) => {
      if (claims && this.mounting.delete(uid) && !this.stopped) this.run(pod, claims);
    });
  }

  /**
   * The directories of the Pod's PersistentVolumeClaim volumes, as the kubelet waits for them before
   * starting containers: each claim bound to a hostPath or local PersistentVolume (what this
   * cluster's provisioner makes) maps to that directory, which outlives the Pod, so a new Pod of
   * the same claim sees the files. Undefined when the Pod went away meanwhile.
   */
  private async mountClaims(pod: Pod): Promise<Map<string, string | LaunchError> | undefined> {
    const { namespace, name, uid } = pod.metadata;
    const claims = new Map<string, string | LaunchError>();
    for (const v of pod.spec.volumes ?? []) {
      if (!v.persistentVolumeClaim) continue;
      const claimName = v.persistentVolumeClaim.claimName;
      for (let waited = false; ; waited = true) {
        if (!this.mounting.has(uid!) || this.stopped) return undefined;
        const dir = await this.claimDirectory(namespace!, claimName).catch((e: Error) => {
          this.opts.log(`${namespace}/${name}: reading PersistentVolumeClaim "${claimName}": ${e.message}`);
          return undefined;
        });
        if (dir !== undefined) {
          claims.set(v.name, dir);
          break;
        }
        if (!waited) this.opts.log(`${namespace}/${name}: waiting for PersistentVolumeClaim "${claimName}" to be bound`);
        await new Promise((resolve) => setTimeout(resolve, CLAIM_RETRY_MS));
      }
    }
    return claims;
  }

  /** The directory of the volume `claim` is bound to; undefined while it is not bound. */
  private async claimDirectory(namespace: string, claim: string): Promise<string | LaunchError | undefined> {
    let pvc: KubeObject & { spec?: { volumeName?: string }; status?: { phase?: string } };
    try {
      pvc = await this.client.get(PVCS, namespace, claim);
    } catch (e) {
      if (e instanceof ApiError && e.statusCode === 404) return undefined;
      throw e;
    }
    if (pvc.status?.phase !== 'Bound' || !pvc.spec?.volumeName) return undefined;
    type Volume = KubeObject & { spec?: { hostPath?: { path?: string }; local?: { path?: string } } };
    const pv = await this.client.get<Volume>(PVS, undefined, pvc.spec.volumeName);
    const dir = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
    if (!dir) return new LaunchError(`PersistentVolume "${pv.metadata.name}" of claim "${claim}" is neither hostPath nor local; the pod runner mounts only directories of this machine`);
    if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return new LaunchError(`PersistentVolume "${pv.metadata.name}" of claim "${claim}" is directory ${dir}, which does not exist here`);
    return dir;
  }

  private run(pod: Pod, claimVolumes: ReadonlyMap<string, string | LaunchError>): void {
    const { namespace, name, uid } = pod.metadata as Required<Pick<KubeObject['metadata'], 'namespace' | 'name' | 'uid'>>;
    const known = pod.status?.podIP;
    // A Pod that already has an address (from a runner before this one) keeps it: podIP never changes.
    const ip = known && this.ips.reserve(known) && this.leases.claim(known) ? known : this.ips.allocate();
    const podDir = `${namespace}_${name}_${uid.slice(0, 8)}`;
    const workspace = path.join(this.opts.workDir, 'pods', podDir);
    fs.mkdirSync(workspace, { recursive: true });
    const ctx: PodContext = { namespace, name, ip, workspace, bundle: this.opts.bundle, allowRoot: process.getuid?.() === 0, claimVolumes };
    const rp: RunningPod = {
      pod, ip, workspace, containers: [], startTime: new Date().toISOString(), transitions: new Map(),
    };
    this.pods.set(uid, rp);
    const ports = new Set<number>();
    for (const [i, c] of pod.spec.containers.entries()) {
      for (const p of c.ports ?? []) ports.add(p.containerPort);
      let launch;
      try {
        launch = launchFor(c, i, ctx);
        if (launch.kind === 'runtime' && !fs.existsSync(this.opts.bundle)) {
          throw new LaunchError(`the operator bundle ${this.opts.bundle} does not exist: run "npx projen operator:build"`);
        }
      } catch (e) {
        launch = e as Error;
      }
      if (!(launch instanceof Error) && launch.readiness.kind === 'http') ports.add(launch.readiness.port);
      rp.containers.push(new ContainerProcess({
        name: c.name,
        image: c.image ?? '',
        ip,
        cwd: workspace,
        logFile: path.join(this.opts.workDir, 'logs', `${podDir}_${c.name}.log`),
        restartPolicy: pod.spec.restartPolicy ?? 'Always',
        launch,
        onChange: () => this.report(rp),
        log: (m) => this.opts.log(`${namespace}/${name} ${m}`),
      }));
    }
    const mounted = [...claimVolumes].filter((e): e is [string, string] => typeof e[1] === 'string').map(([v, dir]) => `, volume ${v} at ${dir}`).join('');
    this.opts.log(`${namespace}/${name}: running ${rp.containers.length} container(s) at ${ip}, workspace ${workspace}${mounted}`);
    rp.containers.forEach((c) => c.start());
    this.report(rp);
    void this.writePortForward(pod, ip, [...ports].sort((a, b) => a - b));
  }

  /**
   * Tells kwok's server where `kubectl port-forward` to this Pod goes: each port to the same port on
   * the Pod's address (only these ports: kwok cannot forward a port it has no target for). Owned by
   * the Pod, so the garbage collector removes it with the Pod; a new Pod of the same name takes it over.
   */
  private async writePortForward(pod: Pod, ip: string, ports: number[]): Promise<void> {
    const { namespace, name, uid } = pod.metadata;
    if (!ports.length) return;
    const body = {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'PortForward',
      metadata: { name, namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid }] },
      spec: { forwards: ports.map((port) => ({ ports: [port], target: { port, address: ip } })) },
    };
    try {
      await this.client.patch(PORT_FORWARDS, namespace, name!, 'apply', body, { fieldManager: FIELD_MANAGER, force: true });
    } catch (e) {
      this.opts.log(`${namespace}/${name}: no port-forward (writing its kwok PortForward failed: ${(e as Error).message})`);
    }
  }

  /**
   * Stops a Pod's processes with its grace period, removes its workspace and, when `finish` is set
   * (the Pod is being deleted), removes the Pod object. Runs once per Pod.
   */
  private terminate(pod: Pod, finish: boolean): Promise<void> {
    const uid = pod.metadata.uid!;
    this.mounting.delete(uid);
    const rp = this.pods.get(uid);
    if (rp?.terminating) return rp.terminating;
    const graceSeconds = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
    const work = (async () => {
      if (rp) {
        await Promise.all(rp.containers.map((c) => c.stop(graceSeconds * 1000)));
        fs.rmSync(rp.workspace, { recursive: true, force: true });
        this.ips.release(rp.ip);
        this.leases.release(rp.ip);
      }
      if (finish) await this.finishDeletion(pod);
      this.pods.delete(uid);
      this.writePids();
    })().catch((e) => this.opts.log(`${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`));
    if (rp) rp.terminating = work;
    return work;
  }

  /** What kwok's pod-delete stage does: drop the finalizers, then delete with no further grace. */
  private async finishDeletion(pod: Pod): Promise<void> {
    const { namespace, name, uid } = pod.metadata;
    try {
      if (pod.metadata.finalizers?.length) await this.client.patch(PODS, namespace, name, 'merge', { metadata: { finalizers: null } });
    } catch (e) {
      if (!(e instanceof ApiError && e.statusCode === 404)) throw e;
    }
    const res = await this.client.rawRequest('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid } },
    });
    // 404: already gone; 409: the uid precondition failed, so the name now belongs to a new Pod.
    if (res.status >= 300 && res.status !== 404 && res.status !== 409) throw new Error(`DELETE pod: HTTP ${res.status}: ${res.text}`);
    this.opts.log(`${namespace}/${name}: deleted`);
  }

  /** Sends the Pod's status when it changed; one PATCH in flight per Pod, the newest state wins. */
  private report(rp: RunningPod): void {
    this.writePids();
    if (rp.terminating || this.stopped) return;
    if (rp.sending) {
      rp.dirty = true;
      return;
    }
    const status = this.statusOf(rp);
    const json = JSON.stringify(status);
    if (json === rp.lastSent) return;
    const { namespace, name } = rp.pod.metadata;
    rp.sending = this.client.patch(PODS, namespace, name, 'merge', { status }, { subresource: 'status' })
      .then(() => { rp.lastSent = json; })
      .catch((e) => this.opts.log(`${namespace}/${name}: status update failed: ${(e as Error).message}`))
      .finally(() => {
        rp.sending = undefined;
        if (rp.dirty) {
          rp.dirty = false;
          this.report(rp);
        }
      });
  }

  private statusOf(rp: RunningPod): object {
    const now = new Date().toISOString();
    const ready = rp.containers.every((c) => c.isReady);
    const ended = rp.containers.map((c) => c.terminated);
    const phase = ended.every((t) => t) ? (ended.every((t) => t!.exitCode === 0) ? 'Succeeded' : 'Failed') : 'Running';
    const condition = (type: string, ok: boolean) => {
      const status = ok ? 'True' : 'False';
      const prev = rp.transitions.get(type);
      if (prev?.status !== status) rp.transitions.set(type, { status, at: now });
      return { type, status, lastTransitionTime: rp.transitions.get(type)!.at };
    };
    return {
      phase,
      conditions: [
        condition('PodScheduled', true), condition('Initialized', true), condition('PodReadyToStartContainers', true),
        condition('ContainersReady', ready), condition('Ready', ready),
      ],
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      podIP: rp.ip,
      podIPs: [{ ip: rp.ip }],
      startTime: rp.startTime,
      containerStatuses: rp.containers.map((c) => c.status()),
      // Init containers are not run (the runner starts the runtime from this checkout, so there is
      // nothing to copy into place): they are reported as completed.
      initContainerStatuses: (rp.pod.spec.initContainers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        ready: true,
        restartCount: 0,
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: rp.startTime, finishedAt: rp.startTime } },
      })),
    };
  }

  /** Rewrites `<workDir>/pids` ("name pid exe" lines) with the children alive now. */
  private writePids(): void {
    const lines: string[] = [];
    for (const rp of this.pods.values()) {
      for (const c of rp.containers) {
        const pid = c.pid;
        if (pid === undefined) continue;
        let exe: string;
        try {
          exe = fs.readlinkSync(`/proc/${pid}/exe`);
        } catch {
          continue;
        }
        lines.push(`pod/${rp.pod.metadata.namespace}/${rp.pod.metadata.name}/${c.name} ${pid} ${exe}`);
      }
    }
    const file = path.join(this.opts.workDir, 'pids');
    fs.writeFileSync(`${file}.tmp`, lines.map((l) => `${l}\n`).join(''));
    fs.renameSync(`${file}.tmp`, file);
  }
}

/** Where `startControlPlane` finds the operator bundle runtimes are started from. */
export const DEFAULT_BUNDLE = path.resolve(__dirname, '..', '..', 'operator', 'dist', 'agent-sandbox-operator.mjs');

export interface PodRunnerCommandOptions {
  readonly kubeconfig: string;
  readonly workDir: string;
  readonly cidr: string;
  readonly labelValue?: string;
  /** Stop everything when stdin closes (the owner of a non-detached cluster died). */
  readonly exitWithStdin?: boolean;
}

/** The command line that starts a runner as its own process (this file under ts-node). */
export function podRunnerCommand(o: PodRunnerCommandOptions): { bin: string; args: string[] } {
  return {
    bin: process.execPath,
    args: [
      '--require', require.resolve('ts-node/register/transpile-only'), __filename,
      `--kubeconfig=${o.kubeconfig}`, `--work-dir=${o.workDir}`, `--cidr=${o.cidr}`,
      ...(o.labelValue ? [`--label-value=${o.labelValue}`] : []), ...(o.exitWithStdin ? ['--exit-with-stdin'] : []),
    ],
  };
}

function parseArgs(argv: string[]): PodRunnerOptions & { exitWithStdin: boolean } {
  const given = new Map<string, string>();
  for (const arg of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unexpected argument "${arg}"; flags are --name=value`);
    given.set(m[1], m[2] ?? 'true');
  }
  const known = ['kubeconfig', 'work-dir', 'cidr', 'bundle', 'label-value', 'exit-with-stdin'];
  for (const k of given.keys()) if (!known.includes(k)) throw new Error(`unknown flag --${k}; flags are ${known.map((f) => `--${f}`).join(', ')}`);
  const required = (k: string) => {
    const v = given.get(k);
    if (!v) throw new Error(`--${k} is required`);
    return v;
  };
  return {
    kubeconfig: required('kubeconfig'),
    workDir: required('work-dir'),
    cidr: required('cidr'),
    bundle: given.get('bundle') ?? DEFAULT_BUNDLE,
    labelValue: given.get('label-value'),
    exitWithStdin: given.get('exit-with-stdin') === 'true',
    log: (m) => process.stderr.write(`${new Date().toISOString()} ${m}\n`),
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const runner = new PodRunner(opts);
  let stopping: Promise<void> | undefined;
  const shutdown = (why: string) => {
    stopping ??= (async () => {
      opts.log(`${why}: stopping every pod's processes`);
      await runner.stop();
      process.exit(0);
    })();
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  if (opts.exitWithStdin) {
    process.stdin.on('data', () => undefined);
    process.stdin.once('end', () => shutdown('owner gone (stdin closed)'));
  }
  await runner.start();
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`pod-runner: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
