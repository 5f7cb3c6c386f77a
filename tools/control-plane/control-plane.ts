/**
 * A real, local Kubernetes control plane without Docker, wired by hand as kubeadm would (no kubelet):
 * etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake nodes whose
 * pods go Ready), each a plain process bound to 127.0.0.1 on a random free port.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ApiClient, connectionFromKubeconfig } from './api';
import { cacheRoot, resolveBinaries } from './binaries';
import { Kube, waitFor } from './kube';
import { composeStages } from './kwok-stages';
import { generatePki, kubeconfigYaml } from './pki';
import { isLoopbackCidr, splitPodCidr } from './pod-cidr';
import { podRunnerCommand } from './pod-runner';
import { freePort, Log, OWNER_FILE, ProcessRecord, readPidsFile, stopProcesses, Supervisor } from './processes';
import {
  BRIDGE_IP, NodeArtifacts, POD_CIDR, RealNodes, SERVICE_CIDR, buildNodeArtifacts, checkRealNodeHost, checkRealNodeRoot, cleanRoot,
  realNodeRoot, setUpNetwork, startRealNode, stopNodeNetworking,
} from './real-node';

export interface ControlPlaneOptions {
  /** Fake nodes to create. @default 3 */
  readonly nodes?: number;
  /** Fixed delay kwok waits before marking a scheduled pod Ready. @default 0 */
  readonly podReadyDelayMs?: number;
  /** Pod IP pool; inside loopback so a test can bind a "pod" address without leaving 127/8. @default 127.64.0.0/12 */
  readonly podCidr?: string;
  /** Lift client QPS limits and apiserver inflight limits for load tests. @default false */
  readonly benchmarkMode?: boolean;
  /**
   * API Priority and Fairness. Stays on by default because the library ships FlowSchemas
   * that must be accepted and enforced like on a real cluster. @default true
   */
  readonly priorityAndFairness?: boolean;
  /** Directory for PKI, data, logs; removed by stop(). @default a fresh temp dir, on /dev/shm when present */
  readonly workDir?: string;
  /** Directory with the binaries; skips hack/build-control-plane.sh. @default $CONTROL_PLANE_BIN_DIR or the build script's output */
  readonly binDir?: string;
  /**
   * Manifest files (YAML/JSON) applied before kube-controller-manager starts. Put CRDs here:
   * the garbage collector only learns about resource types at start-up and then every 30 s,
   * so owner references to a CRD created later are honoured only after that lag.
   */
  readonly manifests?: string[];
  /** Start processes in their own session so they outlive this process (cli up). @default false */
  readonly detached?: boolean;
  /**
   * Run the pod runner (pod-runner.ts): Pods labelled `control-plane.local/run: "true"` get their
   * containers run as local processes (the operator's runtime from operator/dist) on a loopback
   * pod address. kwok then allocates from the lower half of podCidr, the runner from the upper.
   * @default true
   */
  readonly podRunner?: boolean;
  /**
   * Real nodes (real-node.ts): a kubelet on containerd with runc and gVisor, a bridge pod network
   * on 198.18.0.0/16 with kube-proxy and kube-router's NetworkPolicy enforcement, images built
   * locally. Needs root. The API server then listens on the bridge's address 198.18.0.1 (never
   * on an outside interface), and `nodes` (kwok's fake nodes) must be 0. Only 0 or 1.
   * @default 0
   */
  readonly realNodes?: number;
  /** Progress messages. @default stderr */
  readonly log?: Log;
}

export interface StartupTimings {
  readonly binariesMs: number;
  readonly etcdMs: number;
  readonly apiserverMs: number;
  readonly controllersMs: number;
  /** From the first process start until every node is Ready. */
  readonly totalMs: number;
}

/** The components fault tests can kill and restart one at a time. */
export type RestartableComponent = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

export interface ControlPlane {
  /** Path of the kubeconfig (in workDir; a copy is written to ~/.cache/cdk8s-agent-sandbox/kubeconfig). */
  readonly kubeconfig: string;
  readonly server: string;
  /** etcd's client URL (plain HTTP on loopback; its v3 JSON gateway answers under /v3/). */
  readonly etcdUrl: string;
  readonly binDir: string;
  readonly workDir: string;
  readonly processes: ProcessRecord[];
  readonly nodeNames: string[];
  /** The pod runner's half of the pod CIDR; undefined when it does not run. */
  readonly podRunnerCidr?: string;
  /** Real nodes' names, images and containerd socket; undefined without real nodes. */
  readonly realNodes?: RealNodes & { readonly artifacts: NodeArtifacts };
  readonly timings: StartupTimings;
  /**
   * Fault injection: sends `signal` (default SIGKILL) to one component and waits until it has
   * exited (SIGSTOP and SIGCONT return at once). The rest of the control plane keeps running.
   */
  kill(component: RestartableComponent, signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts a component that was killed again, on the same ports and data, and resolves once it is
   * ready, with how long that took in milliseconds. `args` replace the first start's flags of the
   * same name (`--flag=value`) or are added, for this start only.
   */
  restart(component: RestartableComponent, options?: { readonly args?: readonly string[] }): Promise<number>;
  /** Stops every process this control plane started (by pid) and removes workDir. Idempotent. */
  stop(): Promise<void>;
}

/** Components stop front to back: clients of the apiserver first, etcd last. */
export const STOP_ORDER = [
  ['pod-runner', 'kwok', 'local-path-provisioner', 'kube-router', 'kube-proxy', 'kubelet', 'kube-scheduler', 'kube-controller-manager'],
  ['containerd'], ['kube-apiserver'], ['etcd'],
];
export const DEFAULT_POD_CIDR = '127.64.0.0/12';
export const STORAGE_CLASS = 'standard';
/** Where kube-controller-manager's in-tree hostPath provisioner creates volume directories (fixed upstream). */
const HOSTPATH_PV_ROOT = '/tmp/hostpath_pv/';
const WORKDIR_PREFIX = 'cdk8s-agent-sandbox-cp-';

export function knownKubeconfigPath(): string {
  return path.join(cacheRoot(), 'kubeconfig');
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? ((m: string) => process.stderr.write(`[control-plane] ${m}\n`));
  const realNodeCount = options.realNodes ?? 0;
  if (realNodeCount !== 0 && realNodeCount !== 1) throw new Error(`realNodes must be 0 or 1 (one kubelet per machine), got ${realNodeCount}`);
  const real = realNodeCount === 1;
  if (real) checkRealNodeRoot();
  const nodes = options.nodes ?? (real ? 0 : 3);
  // One pod CIDR for the real node (kube-router reads it from the Node): no room for kwok nodes too.
  if (real && nodes > 0) throw new Error(`nodes (kwok's fake nodes) must be 0 with realNodes, got ${nodes}: run KWOK clusters separately`);
  const podCidr = options.podCidr ?? DEFAULT_POD_CIDR;
  // kwok silently falls back to the node IP on a bad CIDR, and pod IPs must never leave loopback.
  if (!isLoopbackCidr(podCidr)) throw new Error(`podCidr must be an IPv4 CIDR inside 127.0.0.0/8, got "${podCidr}"`);
  const tBins = Date.now();
  const bins = await resolveBinaries(log, options.binDir);
  const artifacts = real ? buildNodeArtifacts(bins.binDir, log) : undefined;
  if (real) checkRealNodeHost();
  const binariesMs = Date.now() - tBins;

  await reapOrphans(log);
  const workDir = options.workDir ?? fs.mkdtempSync(path.join(tmpRoot(), WORKDIR_PREFIX));
  fs.mkdirSync(workDir, { recursive: true });
  const sup = new Supervisor(workDir, log, options.detached ?? false);
  const t0 = Date.now();
  try {
    const pki = generatePki(path.join(workDir, 'pki'));
    const [etcdPort, etcdPeerPort, apiPort, kcmPort, schedPort, kubeletPort] = await Promise.all([1, 2, 3, 4, 5, 6].map(() => freePort()));
    if (real) setUpNetwork();
    const apiHost = real ? BRIDGE_IP : '127.0.0.1';
    const server = `https://${apiHost}:${apiPort}`;
    const kubeconfig = path.join(workDir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, kubeconfigYaml(pki, server), { mode: 0o600 });
    const api = new ApiClient(connectionFromKubeconfig(kubeconfig));
    const bench = options.benchmarkMode ?? false;
    const apf = options.priorityAndFairness ?? true;

    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    sup.start('etcd', bins.path('etcd'), [
      '--name=default', `--data-dir=${path.join(workDir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`, `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      // Test data is disposable: skipping fsync is what envtest and the kwok presubmits do.
      '--unsafe-no-fsync=true', '--quota-backend-bytes=8589934592', '--log-level=warn',
    ]);
    await sup.waitReady('etcd', async () => (await fetch(`${etcdUrl}/health`)).ok, 30_000);
    const etcdMs = Date.now() - t0;
    log(`etcd ready after ${etcdMs} ms`);

    sup.start('kube-apiserver', bins.path('kube-apiserver'), [
      `--etcd-servers=${etcdUrl}`, `--bind-address=${apiHost}`, `--advertise-address=${apiHost}`,
      `--secure-port=${apiPort}`, `--cert-dir=${path.join(workDir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.adminCert}`, `--tls-private-key-file=${pki.adminKey}`, `--client-ca-file=${pki.caCert}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.saPub}`, `--service-account-signing-key-file=${pki.saKey}`,
      // Without real nodes only allocated, never dialled: nothing routes traffic to a ClusterIP.
      // With them kube-proxy does, inside the test range like the pods.
      `--service-cluster-ip-range=${real ? SERVICE_CIDR : '10.96.0.0/16'}`,
      '--authorization-mode=Node,RBAC', '--allow-privileged=true',
      // Publishing a request-header CA spares kcm/scheduler a stream of "missing content for CA
      // bundle" errors from their delegated authentication; no front proxy is actually used.
      `--requestheader-client-ca-file=${pki.caCert}`, '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      // "none": the default reconciler would write 127.0.0.1 into the kubernetes Endpoints, which
      // validation rejects. Real nodes' pods reach the API server through that Service, at 198.18.0.1.
      `--endpoint-reconciler-type=${real ? 'lease' : 'none'}`,
      // The "kubelet" of every node is kwok's server (see kwokServerArgs): pods/portforward (and
      // exec/log) are proxied to the node's InternalIP 127.0.0.1 on its kubeletEndpoint port,
      // verified against the cluster CA, with the admin cert as the client certificate.
      `--kubelet-client-certificate=${pki.adminCert}`, `--kubelet-client-key=${pki.adminKey}`,
      `--kubelet-certificate-authority=${pki.caCert}`, '--kubelet-preferred-address-types=InternalIP',
      ...apiserverLimitFlags(bench, apf),
    ]);
    await sup.waitReady('kube-apiserver', async () => (await api.request('GET', '/readyz')).status === 200, 90_000);
    const apiserverMs = Date.now() - t0;
    log(`kube-apiserver ready at ${server} after ${apiserverMs} ms`);

    const kube = new Kube({ kubeconfig, binDir: bins.binDir, cacheDir: path.join(workDir, 'kubectl-cache') });
    // kwok's fake nodes and a real node do not share a cluster (startControlPlane refuses both).
    const kwokRuns = !real;
    // kwok watches PortForward objects from its start: the CRD must be there first.
    await applyBeforeControllers(kube, [...options.manifests ?? [], ...kwokRuns ? [kwokCrdFile(bins.kwokModuleDir, 'portforwards')] : []], log);

    const componentArgs = (port: number) => [
      `--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`,
      '--leader-elect=false', '--bind-address=127.0.0.1', `--secure-port=${port}`,
      `--tls-cert-file=${pki.adminCert}`, `--tls-private-key-file=${pki.adminKey}`,
      '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics',
      ...(bench ? ['--kube-api-qps=5000', '--kube-api-burst=10000'] : []),
    ];
    sup.start('kube-controller-manager', bins.path('kube-controller-manager'), [
      ...componentArgs(kcmPort), '--controllers=*',
      `--service-account-private-key-file=${pki.saKey}`, `--root-ca-file=${pki.caCert}`,
      `--cluster-signing-cert-file=${pki.caCert}`, `--cluster-signing-key-file=${pki.caKey}`,
      // The PV controller's in-tree hostPath provisioner gives the default StorageClass a real,
      // event-driven provisioner (empty directories under /tmp/hostpath_pv, removed on PVC delete).
      '--enable-hostpath-provisioner=true',
      // kube-router reads a node's pod CIDR from its spec.
      ...(real ? ['--allocate-node-cidrs=true', `--cluster-cidr=${POD_CIDR}`, '--node-cidr-mask-size=16'] : []),
    ]);
    sup.start('kube-scheduler', bins.path('kube-scheduler'), componentArgs(schedPort));
    const [kwokCidr, podRunnerCidr] = options.podRunner ?? !real ? splitPodCidr(podCidr) : [podCidr, undefined];
    const stagesFile = path.join(workDir, 'kwok-stages.yaml');
    fs.writeFileSync(stagesFile, composeStages(bins.kwokModuleDir, options.podReadyDelayMs ?? 0));
    if (kwokRuns) {
      sup.start('kwok', bins.path('kwok'), [
        `--kubeconfig=${kubeconfig}`, `--config=${stagesFile}`, '--manage-all-nodes=true',
        `--cidr=${kwokCidr}`, '--node-ip=127.0.0.1', '--node-lease-duration-seconds=40',
        ...kwokServerArgs(kubeletPort, pki.adminCert, pki.adminKey),
      ]);
    }
    const componentHealth = (port: number) => {
      const c = new ApiClient({ ...connectionFromKubeconfig(kubeconfig), server: `https://127.0.0.1:${port}` });
      return async () => (await c.request('GET', '/healthz')).status === 200;
    };
    await Promise.all([
      sup.waitReady('kube-controller-manager', componentHealth(kcmPort), 60_000),
      sup.waitReady('kube-scheduler', componentHealth(schedPort), 60_000),
    ]);
    const controllersMs = Date.now() - t0;
    log(`kube-controller-manager and kube-scheduler healthy after ${controllersMs} ms`);

    const nodeNames = Array.from({ length: nodes }, (_, i) => `kwok-node-${i}`);
    // A real node brings its own default StorageClass (local-path, see real-node.ts).
    const harnessObjects = [...nodeNames.map(nodeObject), ...real ? [] : [defaultStorageClass()]];
    if (harnessObjects.length > 0) await kube.applyServerSide(harnessObjects, 'cdk8s-agent-sandbox-harness');
    // Nodes turning Ready prove kwok's controller works; /healthz its kubelet-like server.
    const kwokServerHealthy = componentHealth(kubeletPort);
    if (kwokRuns) await sup.waitReady('kwok', async () => await allNodesReady(api, nodeNames) && kwokServerHealthy(), 60_000);
    const realNodes = artifacts ? {
      ...await startRealNode({ sup, artifacts, kubeconfig, caCert: pki.caCert, servingCert: pki.adminCert, servingKey: pki.adminKey, api, log }),
      artifacts,
    } : undefined;
    if (podRunnerCidr) {
      const dir = podRunnerDir(workDir);
      const runner = podRunnerCommand({ kubeconfig, workDir: dir, cidr: podRunnerCidr, exitWithStdin: !options.detached });
      // A detached runner must outlive this process; an owned one stops when its stdin closes.
      sup.start('pod-runner', runner.bin, runner.args, process.env, options.detached ? 'ignore' : 'pipe');
      await sup.waitReady('pod-runner', async () => fs.existsSync(path.join(dir, 'ready')), 60_000);
    }
    const totalMs = Date.now() - t0;
    const readiness: Record<RestartableComponent, { probe: () => Promise<boolean>; timeoutMs: number }> = {
      'etcd': { probe: async () => (await fetch(`${etcdUrl}/health`)).ok, timeoutMs: 30_000 },
      'kube-apiserver': { probe: async () => (await api.request('GET', '/readyz')).status === 200, timeoutMs: 90_000 },
      'kube-controller-manager': { probe: componentHealth(kcmPort), timeoutMs: 60_000 },
      'kube-scheduler': { probe: componentHealth(schedPort), timeoutMs: 60_000 },
    };

    fs.mkdirSync(cacheRoot(), { recursive: true });
    fs.copyFileSync(kubeconfig, knownKubeconfigPath());
    fs.chmodSync(knownKubeconfigPath(), 0o600);
    log(`control plane up in ${(totalMs / 1000).toFixed(1)} s (${nodes + realNodeCount} nodes Ready); kubeconfig ${kubeconfig} (copy: ${knownKubeconfigPath()})`);

    let stopping: Promise<void> | undefined;
    return {
      kubeconfig,
      server,
      etcdUrl,
      binDir: bins.binDir,
      workDir,
      nodeNames: [...nodeNames, ...realNodes?.nodeNames ?? []],
      podRunnerCidr,
      realNodes,
      get processes() {
        return sup.records;
      },
      timings: { binariesMs, etcdMs, apiserverMs, controllersMs, totalMs },
      kill: (component, signal = 'SIGKILL') => {
        if (stopping) throw new Error('the control plane is stopping');
        if (!(component in readiness)) throw new Error(`${component} cannot be killed and restarted`);
        return sup.signal(component, signal);
      },
      restart: async (component, opts = {}) => {
        if (stopping) throw new Error('the control plane is stopping');
        const ready = readiness[component];
        if (!ready) throw new Error(`${component} cannot be killed and restarted`);
        const started = Date.now();
        sup.restart(component, opts.args);
        await sup.waitReady(component, ready.probe, ready.timeoutMs);
        log(`${component} restarted and ready after ${Date.now() - started} ms`);
        return Date.now() - started;
      },
      stop: () => stopping ??= (async () => {
        const volumeDirs = await hostPathVolumeDirs(kubeconfig);
        // A real node's Pods (the operator's among them) outlive containerd in their shims: they go
        // before the API server, which would otherwise wait out their watches.
        await sup.stopAll(STOP_ORDER, undefined, (i) => {
          if (!real || !STOP_ORDER[i].includes('containerd')) return;
          try {
            cleanRoot(realNodeRoot());
          } catch (e) {
            log(`stopping the real node's Pods: ${(e as Error).message}`);
          }
        });
        await stopPodProcesses(workDir, log);
        if (real) stopNodeNetworking(bins.binDir, artifacts?.nodeBinDir, log);
        removeLeftovers(workDir, kubeconfig, volumeDirs);
        log('control plane stopped');
      })(),
    };
  } catch (e) {
    // Leave nothing running; the error already carries the failing component's log tail.
    await sup.stopAll(STOP_ORDER, 5_000).catch(() => undefined);
    if (real) stopNodeNetworking(bins.binDir, artifacts?.nodeBinDir, log);
    const kept = path.join(cacheRoot(), 'last-failed-logs');
    fs.rmSync(kept, { recursive: true, force: true });
    fs.mkdirSync(cacheRoot(), { recursive: true });
    fs.cpSync(path.join(workDir, 'logs'), kept, { recursive: true });
    fs.rmSync(workDir, { recursive: true, force: true });
    throw new Error(`control plane failed to start: ${(e as Error).message}\n(all logs kept in ${kept})`);
  }
}

/**
 * Stops a control plane started by another process (`cli down`) from its recorded pids and
 * removes its files. Safe to call when some or all processes are already gone.
 */
export async function stopRecorded(
  state: { workDir: string; kubeconfig: string; processes: ProcessRecord[]; binDir?: string; nodeBinDir?: string },
  log: Log,
): Promise<void> {
  const volumeDirs = await hostPathVolumeDirs(state.kubeconfig);
  const groups = [
    state.processes.filter((p) => !STOP_ORDER.flat().includes(p.name)),
    ...STOP_ORDER.map((names) => state.processes.filter((p) => names.includes(p.name))),
  ];
  await stopProcesses(groups, log);
  await stopPodProcesses(state.workDir, log);
  if (state.processes.some((p) => p.name === 'kubelet')) {
    // A reaped cluster's state is only its pids file: the recorded binaries tell where they live.
    const dirOf = (name: string) => {
      const bin = state.processes.find((p) => p.name === name)?.bin;
      return bin ? path.dirname(bin) : undefined;
    };
    stopNodeNetworking(state.binDir ?? dirOf('kube-proxy'), state.nodeBinDir ?? dirOf('kube-router'), log);
  }
  removeLeftovers(state.workDir, state.kubeconfig, volumeDirs);
}

/** Where the pod runner keeps its pids, workspaces and container logs. */
export function podRunnerDir(workDir: string): string {
  return path.join(workDir, 'pod-runner');
}

/**
 * Stops what the pod runner recorded as still running. The runner stops its Pods' processes itself
 * on SIGTERM, and they stop themselves when it dies; this is the last net for a runner that was
 * SIGKILLed while one of its children ignored the closed pipe.
 */
async function stopPodProcesses(workDir: string, log: Log): Promise<void> {
  const file = path.join(podRunnerDir(workDir), 'pids');
  if (fs.existsSync(file)) await stopProcesses([readPidsFile(file)], log);
}

/**
 * Stops control planes whose owning process died without calling stop() (e.g. a jest run that
 * was SIGKILLed), found by their default work directories. Detached clusters (cli up) have no
 * owner file and are left to `cli down`.
 */
async function reapOrphans(log: Log): Promise<void> {
  const root = tmpRoot();
  for (const entry of fs.readdirSync(root).filter((e) => e.startsWith(WORKDIR_PREFIX))) {
    const dir = path.join(root, entry);
    let owner: number;
    try {
      owner = Number(fs.readFileSync(path.join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue;
    }
    if (fs.existsSync(`/proc/${owner}`)) continue;
    log(`reaping control plane ${dir} left behind by dead process ${owner}`);
    const processes = fs.existsSync(path.join(dir, 'pids')) ? readPidsFile(path.join(dir, 'pids')) : [];
    await stopRecorded({ workDir: dir, kubeconfig: path.join(dir, 'kubeconfig'), processes }, log);
  }
}

/**
 * kwok's kubelet-like server, on loopback: the node-initialize stage publishes its port as every
 * node's `status.daemonEndpoints.kubeletEndpoint.Port`, so kube-apiserver sends pods/portforward
 * there. kwok forwards a Pod's port as the PortForward object named like the Pod says (the pod
 * runner writes one per Pod: its ports to the Pod's own address); other Pods have none, and a
 * port-forward to them fails with "no forward found". Its serving cert is the admin cert (IP SAN
 * 127.0.0.1, signed by the cluster CA, which kube-apiserver checks).
 */
function kwokServerArgs(port: number, cert: string, key: string): string[] {
  return [
    `--node-port=${port}`, `--server-address=127.0.0.1:${port}`, // --node-port alone would bind 0.0.0.0
    `--tls-cert-file=${cert}`, `--tls-private-key-file=${key}`,
    '--enable-crds=PortForward',
  ];
}

/** One of kwok's CRDs (`kwok.x-k8s.io_<plural>.yaml`) from its module directory. */
function kwokCrdFile(kwokModuleDir: string, plural: string): string {
  const file = path.join(kwokModuleDir, 'kustomize', 'crd', 'bases', `kwok.x-k8s.io_${plural}.yaml`);
  if (!fs.existsSync(file)) throw new Error(`kwok CRD file missing: ${file}`);
  return file;
}

function apiserverLimitFlags(bench: boolean, apf: boolean): string[] {
  if (!apf) {
    return ['--enable-priority-and-fairness=false', ...(bench ? ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0'] : [])];
  }
  // With APF on, the two inflight flags become APF's total concurrency and must add up to
  // something positive (apiserver rejects 0/0), so "off" means "far above what 2 cores can use".
  return bench ? ['--max-requests-inflight=4000', '--max-mutating-requests-inflight=2000'] : [];
}

async function applyBeforeControllers(kube: Kube, files: string[], log: Log): Promise<void> {
  if (!files.length) return;
  await kube.kubectl(['apply', '--server-side', '--field-manager=cdk8s-agent-sandbox-harness', ...files.flatMap((f) => ['-f', f])]);
  // Not `kubectl wait --all`: it errors on a CRD whose status the apiserver has not written yet.
  const established = (crd: any) => crd.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True');
  await waitFor(async () => (await kube.getJson<{ items: any[] }>(['customresourcedefinitions'])).items.every(established),
    60_000, 'every CRD to be Established');
  log(`applied ${files.length} manifest file(s) before starting the controllers`);
}

function nodeObject(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'type': 'kwok' },
      annotations: { 'kwok.x-k8s.io/node': 'fake' },
    },
  };
}

function defaultStorageClass(): object {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'kubernetes.io/host-path',
    reclaimPolicy: 'Delete',
    // Immediate: no kubelet ever reports topology, so WaitForFirstConsumer would never bind.
    volumeBindingMode: 'Immediate',
  };
}

async function allNodesReady(api: ApiClient, names: string[]): Promise<boolean> {
  const list = await api.call<{ items: any[] }>('GET', '/api/v1/nodes');
  const ready = new Set(list.items
    .filter((n) => n.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'))
    .map((n) => n.metadata.name));
  return names.every((n) => ready.has(n));
}

/** Volume directories the hostPath provisioner made for PVs that still exist (best effort). */
async function hostPathVolumeDirs(kubeconfig: string): Promise<string[]> {
  try {
    const api = new ApiClient(connectionFromKubeconfig(kubeconfig));
    const pvs = await api.call<{ items: any[] }>('GET', '/api/v1/persistentvolumes');
    return pvs.items.map((pv) => String(pv.spec?.hostPath?.path ?? ''))
      .filter((p) => p.startsWith(HOSTPATH_PV_ROOT) && !p.includes('..'));
  } catch {
    return []; // apiserver already gone: nothing we can attribute to this cluster
  }
}

function removeLeftovers(workDir: string, kubeconfig: string, volumeDirs: string[]): void {
  for (const dir of volumeDirs) fs.rmSync(dir, { recursive: true, force: true });
  const known = knownKubeconfigPath();
  try {
    // Only remove the well-known copy if it still points at this cluster.
    if (fs.readFileSync(known, 'utf8') === fs.readFileSync(kubeconfig, 'utf8')) fs.rmSync(known);
  } catch { /* one of them is already gone */ }
  fs.rmSync(workDir, { recursive: true, force: true });
}

function tmpRoot(): string {
  try {
    fs.accessSync('/dev/shm', fs.constants.W_OK);
    return '/dev/shm';
  } catch {
    return os.tmpdir();
  }
}
