/**
 * Real nodes for the local control plane: a kubelet (built from the same Kubernetes module as the
 * control plane) on containerd with runc and gVisor, pods on a Linux bridge with the reference CNI
 * plugins, kube-proxy for Services, and kube-router's NetworkPolicy controller enforcing policies.
 *
 * Everything stays on this machine: the pod network is 198.18.0.0/16 and Services 198.19.0.0/16
 * (RFC 2544's benchmarking range, never routed on the internet), the bridge's address 198.18.0.1
 * is the only address the API server and the kubelet listen on besides loopback, IP forwarding is
 * left off (bridged pod-to-pod traffic and pod-to-host traffic need none), a guard drops anything
 * from the bridge that would leave by another interface, pods get no DNS servers and containerd
 * pulls from nowhere (every registry resolves to a closed loopback port): images are built locally
 * (hack/build-images.sh) and imported.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { stringify as toYaml } from 'yaml';
import { ApiClient } from './api';
import { cacheRoot } from './binaries';
import { Log, freePort, sleep, Supervisor } from './processes';
import { DEFAULT_OPERATOR_IMAGE } from '../../src/install/operator-deployment';

export const BRIDGE = 'asb0';
export const BRIDGE_IP = '198.18.0.1';
/** Everything of the real-node cluster: the bridge, the pods, the Services. */
export const CLUSTER_CIDR = '198.18.0.0/15';
export const POD_CIDR = '198.18.0.0/16';
export const SERVICE_CIDR = '198.19.0.0/16';
/** The first address of SERVICE_CIDR: the `kubernetes` Service's ClusterIP (it is in the serving cert). */
export const KUBERNETES_SERVICE_IP = '198.19.0.1';
export const REAL_NODE_PREFIX = 'real-node-';
/** The label every real node carries, for nodeSelectors that must land on one. */
export const REAL_NODE_LABEL = 'agent-sandbox.local/real-node';
const GUARD_CHAIN = 'AGENT-SANDBOX-GUARD';
/** The kubelet's cgroupRoot: every Pod process of the real node is in a cgroup under it. */
const POD_CGROUP_ROOT = 'agent-sandbox-real-node';
const IN_POD_CGROUP = new RegExp(`^\\d+:[^:]*:/${POD_CGROUP_ROOT}(/|$)`, 'm');

export interface NodeImages {
  /** Name (`agent-sandbox-operator`, `python-sandbox`, `pause`, ...) → image reference. */
  readonly refs: Record<string, string>;
  /** Name → OCI archive to import. */
  readonly archives: Record<string, string>;
  /** Name → further references the image gets in containerd (e.g. the release's operator image). */
  readonly aliases: Record<string, string[]>;
}

/** Paths of what hack/build-real-node.sh and hack/build-images.sh produce. */
export interface NodeArtifacts {
  readonly k8sBinDir: string;
  readonly nodeBinDir: string;
  readonly images: NodeImages;
}

const HACK = path.resolve(__dirname, '..', '..', 'hack');

/** Runs a build script, forwarding its progress lines; resolves with its stdout. */
function runScript(script: string, args: string[], log: Log): string {
  const r = spawnSync('bash', [path.join(HACK, script), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  for (const line of (r.stderr ?? '').split('\n').filter((l) => l.startsWith('['))) log(line);
  if (r.status !== 0) throw new Error(`hack/${script} failed (exit ${r.status}):\n${(r.stderr ?? '').split('\n').slice(-30).join('\n')}`);
  return r.stdout;
}

/** Builds (or finds cached) the node binaries and images. */
export function buildNodeArtifacts(k8sBinDir: string, log: Log): NodeArtifacts {
  const nodeBinDir = runScript('build-real-node.sh', [], log).trim().split('\n').pop()!;
  const refs: Record<string, string> = {};
  const archives: Record<string, string> = {};
  for (const line of runScript('build-images.sh', [nodeBinDir], log).trim().split('\n')) {
    const [name, ref, archive] = line.split(' ');
    // The two base images only serve the operator image's build.
    if (name && ref && archive && !name.startsWith('node-')) {
      refs[name] = ref;
      archives[name] = archive;
    }
  }
  for (const need of ['agent-sandbox-operator', 'python-sandbox', 'pause']) {
    if (!refs[need]) throw new Error(`hack/build-images.sh did not report the ${need} image`);
  }
  // The operator image built from this checkout also answers to the reference the library renders by
  // default (AgentSandboxSystem.DEFAULT_IMAGE, a SandboxTemplate's `runtime: {}`), so synthesized
  // manifests apply unchanged and nothing is ever pulled.
  return { k8sBinDir, nodeBinDir, images: { refs, archives, aliases: { 'agent-sandbox-operator': [DEFAULT_OPERATOR_IMAGE] } } };
}

function run(cmd: string, args: string[], opts: { allowFail?: boolean } = {}): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (opts.allowFail) return '';
    const err = e as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.stderr?.trim() || err.message}`);
  }
}

/** Refuses to start where real nodes cannot run, naming what is missing. */
export function checkRealNodeRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new Error('real nodes need root (kubelet, containerd, bridges and iptables); run as root or without realNodes');
  }
}

/** After the build scripts ran (they install the packages): refuses to start where real nodes cannot run. */
export function checkRealNodeHost(): void {
  if (fs.existsSync(`/sys/class/net/${BRIDGE}`) && spawnSync('sh', ['-c', 'pgrep -x kubelet']).status === 0) {
    throw new Error(`a real-node cluster already runs on this machine (bridge ${BRIDGE} and a kubelet exist); stop it first (npm run cluster:down)`);
  }
  if (!fs.existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables')) spawnSync('modprobe', ['br_netfilter']);
  for (const [bin, pkg] of [['containerd', 'containerd'], ['runc', 'runc'], ['iptables', 'iptables'], ['ip6tables', 'iptables'], ['ipset', 'ipset'], ['ip', 'iproute2']]) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) {
      throw new Error(`real nodes need ${bin}: run hack/build-real-node.sh (it installs the Debian package ${pkg})`);
    }
  }
  if (!fs.existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables')) {
    throw new Error('real nodes need br_netfilter (NetworkPolicies and Services on bridged traffic): modprobe br_netfilter');
  }
}

/**
 * The pod bridge and the guard rules. The bridge carries BRIDGE_IP so that the API server can
 * listen there before any pod exists; the guard drops packets from the bridge that would be
 * forwarded elsewhere and packets for the test range that arrive from elsewhere.
 */
export function setUpNetwork(): void {
  if (!run('ip', ['-o', 'link', 'show', BRIDGE], { allowFail: true })) run('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  if (!run('ip', ['-o', '-4', 'addr', 'show', 'dev', BRIDGE]).includes(`${BRIDGE_IP}/16`)) {
    run('ip', ['addr', 'add', `${BRIDGE_IP}/16`, 'dev', BRIDGE]);
  }
  // No IPv6 on the bridge: it would pass pod to pod and pod to host beside every IPv4 rule.
  writeSysctl(`/proc/sys/net/ipv6/conf/${BRIDGE}/disable_ipv6`, '1');
  run('ip', ['link', 'set', BRIDGE, 'up']);
  // Service ClusterIPs are routed to the bridge too, so one no Service answers stays on it.
  run('ip', ['route', 'replace', SERVICE_CIDR, 'dev', BRIDGE]);
  // NetworkPolicy (kube-router) and Service DNAT (kube-proxy) see bridged traffic only with this.
  writeSysctl('/proc/sys/net/bridge/bridge-nf-call-iptables', '1');
  writeSysctl('/proc/sys/net/bridge/bridge-nf-call-ip6tables', '1');
  for (const [cmd, table] of GUARD_TABLES) {
    run(cmd, ['-t', table, '-N', GUARD_CHAIN], { allowFail: true });
    run(cmd, ['-t', table, '-F', GUARD_CHAIN]);
  }
  // raw PREROUTING sees every packet from a pod before any NAT, enforcer or ACCEPT rule: a pod may
  // send only to the cluster's range (pods, Services, the bridge's address), never to the host's
  // other addresses or anything beyond.
  run('iptables', ['-t', 'raw', '-A', GUARD_CHAIN, '-i', BRIDGE, '!', '-d', CLUSTER_CIDR, '-j', 'DROP']);
  // Anything for the cluster's range that arrives by another interface than the bridge or loopback
  // (the host's own traffic to 198.18.0.1 comes back by lo) is not ours.
  run('iptables', ['-t', 'raw', '-A', GUARD_CHAIN, '-i', 'lo', '-j', 'RETURN']);
  run('iptables', ['-t', 'raw', '-A', GUARD_CHAIN, '!', '-i', BRIDGE, '-d', CLUSTER_CIDR, '-j', 'DROP']);
  // Nothing forwarded between the bridge and another interface (IP forwarding is not switched on by
  // this mode; this holds if something else switches it on).
  run('iptables', ['-t', 'mangle', '-A', GUARD_CHAIN, '-i', BRIDGE, '!', '-o', BRIDGE, '-j', 'DROP']);
  run('iptables', ['-t', 'mangle', '-A', GUARD_CHAIN, '!', '-i', BRIDGE, '-o', BRIDGE, '-j', 'DROP']);
  // IPv6 frames crossing the bridge (link-local pod to pod) are dropped outright.
  run('ip6tables', ['-t', 'raw', '-A', GUARD_CHAIN, '-i', BRIDGE, '-j', 'DROP']);
  for (const [cmd, table, chain] of GUARD_JUMPS) {
    if (!hasRule(cmd, table, chain)) run(cmd, ['-t', table, '-I', chain, '1', '-j', GUARD_CHAIN]);
  }
}

const GUARD_TABLES = [['iptables', 'raw'], ['iptables', 'mangle'], ['ip6tables', 'raw']] as const;
const GUARD_JUMPS = [['iptables', 'raw', 'PREROUTING'], ['iptables', 'mangle', 'FORWARD'], ['ip6tables', 'raw', 'PREROUTING']] as const;

function writeSysctl(file: string, value: string): void {
  try {
    fs.writeFileSync(file, value);
  } catch (e) {
    throw new Error(`real nodes need ${file} = ${value}: ${(e as Error).message}`);
  }
}

function hasRule(cmd: string, table: string, chain: string): boolean {
  return spawnSync(cmd, ['-t', table, '-C', chain, '-j', GUARD_CHAIN]).status === 0;
}

/** Removes the bridge and the guard; kube-proxy's and kube-router's chains are left to their own cleanup. */
export function tearDownNetwork(): void {
  run('ip', ['route', 'del', SERVICE_CIDR, 'dev', BRIDGE], { allowFail: true });
  run('ip', ['link', 'del', BRIDGE], { allowFail: true });
  for (const [cmd, table, chain] of [...GUARD_JUMPS, ['iptables', 'filter', 'INPUT'] as const]) {
    for (let i = 0; i < 10 && hasRule(cmd, table, chain); i++) run(cmd, ['-t', table, '-D', chain, '-j', GUARD_CHAIN], { allowFail: true });
    run(cmd, ['-t', table, '-F', GUARD_CHAIN], { allowFail: true });
    run(cmd, ['-t', table, '-X', GUARD_CHAIN], { allowFail: true });
  }
}

/**
 * After the node's processes stopped: kills what is left of its Pods (cleanRoot), removes its state,
 * kube-proxy's and kube-router's rules (each with its own cleanup command), then the bridge and the
 * guard.
 */
export function stopNodeNetworking(k8sBinDir: string | undefined, nodeBinDir: string | undefined, log: Log): void {
  cleanRoot(realNodeRoot());
  if (k8sBinDir) spawnSync(path.join(k8sBinDir, 'kube-proxy'), ['--cleanup'], { stdio: 'ignore', timeout: 30_000 });
  if (nodeBinDir) spawnSync(path.join(nodeBinDir, 'kube-router'), ['--cleanup-config'], { stdio: 'ignore', timeout: 30_000 });
  tearDownNetwork();
  log('real node: pods, state, rules and bridge removed');
}

/** Where one real-node cluster keeps containerd's and the kubelet's state: on disk, not tmpfs. */
export function realNodeRoot(): string {
  return path.join(cacheRoot(), 'real-node');
}

export interface RealNodeStart {
  readonly sup: Supervisor;
  readonly artifacts: NodeArtifacts;
  readonly kubeconfig: string;
  readonly caCert: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly api: ApiClient;
  readonly log: Log;
}

export interface RealNodes {
  readonly nodeNames: string[];
  readonly containerdSocket: string;
  readonly root: string;
}

/** Starts containerd, the kubelet, kube-proxy and kube-router for one real node, and waits until it is Ready. */
export async function startRealNode(o: RealNodeStart): Promise<RealNodes> {
  const name = `${REAL_NODE_PREFIX}0`;
  const root = realNodeRoot();
  // A previous cluster's state (its pods, containers, mounts) is not ours to keep.
  cleanRoot(root);
  const dirs = {
    containerd: path.join(root, 'containerd'),
    kubelet: path.join(root, 'kubelet'),
    cni: path.join(root, 'cni'),
    bin: path.join(root, 'bin'),
    runsc: path.join(root, 'runsc'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  const socket = path.join(dirs.containerd, 'containerd.sock');
  writeContainerdConfig(dirs, o.artifacts);
  writeCniConfig(dirs.cni);
  writeRunscShimWrapper(dirs.bin, o.artifacts.nodeBinDir);

  const env = { ...process.env, PATH: `${dirs.bin}:${o.artifacts.nodeBinDir}:${process.env.PATH}` };
  const containerd = run('sh', ['-c', 'command -v containerd']).trim();
  o.sup.start('containerd', containerd, ['--config', path.join(dirs.containerd, 'config.toml')], env);
  await o.sup.waitReady('containerd', async () => fs.existsSync(socket)
    && spawnSync('ctr', ['--address', socket, 'version'], { timeout: 5_000 }).status === 0, 60_000);
  importImages(socket, o.artifacts.images, o.log);

  const [kubeletPort, kubeletHealthz, proxyHealthz, proxyMetrics, routerHealth] = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
  makePodCgroupRoot();
  const kubeletConfig = path.join(dirs.kubelet, 'config.yaml');
  fs.writeFileSync(kubeletConfig, toYaml(kubeletConfiguration(socket, kubeletPort, kubeletHealthz, o)));
  o.sup.start('kubelet', path.join(o.artifacts.k8sBinDir, 'kubelet'), [
    `--config=${kubeletConfig}`, `--kubeconfig=${o.kubeconfig}`, `--root-dir=${path.join(dirs.kubelet, 'root')}`,
    `--hostname-override=${name}`, `--node-ip=${BRIDGE_IP}`, `--node-labels=${REAL_NODE_LABEL}=true`, '--v=1',
  ], env);

  const proxyConfig = path.join(root, 'kube-proxy.yaml');
  fs.writeFileSync(proxyConfig, toYaml({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: o.kubeconfig },
    mode: 'iptables',
    clusterCIDR: POD_CIDR,
    hostnameOverride: name,
    bindAddress: BRIDGE_IP,
    healthzBindAddress: `127.0.0.1:${proxyHealthz}`,
    metricsBindAddress: `127.0.0.1:${proxyMetrics}`,
    // NodePorts only on the bridge's address, never on loopback or an outside interface.
    nodePortAddresses: [`${BRIDGE_IP}/32`],
    iptables: { localhostNodePorts: false },
    // 0: leave the kernel's conntrack table size alone (setting it needs CAP_SYS_RESOURCE-like rights).
    conntrack: { maxPerCore: 0, min: 0 },
  }));
  o.sup.start('kube-proxy', path.join(o.artifacts.k8sBinDir, 'kube-proxy'), [`--config=${proxyConfig}`, '--v=1'], env);

  await o.sup.waitReady('kubelet', async () => nodeReady(o.api, name), 180_000);
  // kube-router reads its Node object at start-up: only once the kubelet registered it. Its
  // NetworkPolicy controller only: no BGP routing, no service proxy (kube-proxy does that).
  o.sup.start('kube-router', path.join(o.artifacts.nodeBinDir, 'kube-router'), [
    `--kubeconfig=${o.kubeconfig}`, `--hostname-override=${name}`,
    '--run-firewall=true', '--run-router=false', '--run-service-proxy=false', '--run-loadbalancer=false',
    // Its health server would listen on every interface by default.
    '--health-addr=127.0.0.1', `--health-port=${routerHealth}`, '--metrics-port=0', '--enable-ipv6=false', '--enable-ipv4=true',
    '--iptables-sync-period=5m', '--v=1',
  ], env);

  await o.sup.waitReady('kube-proxy', async () => (await fetch(`http://127.0.0.1:${proxyHealthz}/healthz`).catch(() => undefined))?.ok === true, 60_000);
  await o.sup.waitReady('kube-router', async () => (await fetch(`http://127.0.0.1:${routerHealth}/healthz`).catch(() => undefined))?.ok === true, 60_000);
  await startLocalPathProvisioner(o, path.join(root, 'local-path'), env);
  o.log(`real node ${name} Ready (containerd ${socket})`);
  return { nodeNames: [name], containerdSocket: socket, root };
}

export const LOCAL_PATH_NAMESPACE = 'local-path-storage';
export const LOCAL_PATH_STORAGE_CLASS = 'local-path';

/**
 * Rancher's local-path-provisioner as a host process, with the objects its install manifest would
 * create (namespace, the helper Pods' ServiceAccount, the ConfigMap with the setup and teardown
 * scripts, the StorageClass, here the default one). Its helper Pod runs the stock Python image (it
 * has /bin/sh), makes each volume's directory under `dataDir` with mode 0777, and removes it on
 * delete: volumes a non-root sandbox can write, kept across suspend and resume.
 */
async function startLocalPathProvisioner(o: RealNodeStart, dataDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  fs.mkdirSync(dataDir, { recursive: true });
  const configDir = path.join(path.dirname(dataDir), 'local-path-config');
  fs.mkdirSync(configDir, { recursive: true });
  const config = { nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [dataDir] }] };
  const helperPod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'helper-pod' },
    spec: {
      tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      containers: [{ name: 'helper-pod', image: o.artifacts.images.refs['python-sandbox'], imagePullPolicy: 'Never' }],
    },
  };
  fs.writeFileSync(path.join(configDir, 'config.json'), JSON.stringify(config));
  fs.writeFileSync(path.join(configDir, 'helperPod.yaml'), toYaml(helperPod));
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: LOCAL_PATH_NAMESPACE } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'local-path-provisioner', namespace: LOCAL_PATH_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'local-path-config', namespace: LOCAL_PATH_NAMESPACE },
      data: {
        'config.json': JSON.stringify(config),
        'setup': '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        'teardown': '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        'helperPod.yaml': toYaml(helperPod),
      },
    },
    {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: LOCAL_PATH_STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: 'rancher.io/local-path',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    },
  ];
  for (const obj of objects) {
    const res = await o.api.request('POST', collectionPath(obj), obj);
    if (res.status >= 300 && res.status !== 409) throw new Error(`creating ${(obj as any).kind} for local-path-provisioner: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  }
  o.sup.start('local-path-provisioner', path.join(o.artifacts.nodeBinDir, 'local-path-provisioner'), [
    '--debug', 'start', `--kubeconfig=${o.kubeconfig}`, `--namespace=${LOCAL_PATH_NAMESPACE}`,
    `--helper-image=${o.artifacts.images.refs['python-sandbox']}`, '--service-account-name=local-path-provisioner',
    `--config=${path.join(configDir, 'config.json')}`, `--helper-pod-file=${path.join(configDir, 'helperPod.yaml')}`,
    '--provisioner-name=rancher.io/local-path',
  ], env);
}

function collectionPath(obj: any): string {
  const base = obj.apiVersion === 'v1' ? '/api/v1' : `/apis/${obj.apiVersion}`;
  const plural = { Namespace: 'namespaces', ServiceAccount: 'serviceaccounts', ConfigMap: 'configmaps', StorageClass: 'storageclasses' }[obj.kind as string];
  return obj.metadata.namespace ? `${base}/namespaces/${obj.metadata.namespace}/${plural}` : `${base}/${plural}`;
}

/**
 * Stops what the kubelet left running and removes the node's state. Pod processes (pause, the
 * containers, gVisor's sandbox and gofer) outlive the kubelet and containerd, and even their shims:
 * they are found by the kubelet's cgroup root and killed, then the shims, then the Pods'
 * network namespaces and the node's mounts go.
 */
export function cleanRoot(root: string): void {
  const socket = path.join(root, 'containerd', 'containerd.sock');
  for (let round = 0; round < 20; round++) {
    // Shims outlive containerd on purpose; ours are found by the socket they were started with.
    const victims = [...procs().filter(({ cmd }) => /containerd-shim/.test(cmd) && cmd.includes(socket)), ...podProcessesLeft()];
    if (victims.length === 0) break;
    for (const { pid } of victims) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch { /* gone */ }
    }
    spawnSync('sleep', ['0.1']);
  }
  // containerd's CRI pins each Pod's network namespace under /var/run/netns as cni-<uuid>.
  const netnsDir = '/var/run/netns';
  for (const ns of fs.existsSync(netnsDir) ? fs.readdirSync(netnsDir).filter((n) => n.startsWith('cni-')) : []) {
    spawnSync('umount', ['-l', path.join(netnsDir, ns)]);
    fs.rmSync(path.join(netnsDir, ns), { force: true });
  }
  const mounts = fs.readFileSync('/proc/self/mounts', 'utf8').split('\n')
    .map((l) => l.split(' ')[1] ?? '').map((m) => m.replace(/\\040/g, ' '))
    .filter((m) => m.startsWith(root + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) spawnSync('umount', ['-l', m]);
  fs.rmSync(root, { recursive: true, force: true });
  removePodCgroups();
}

/** Processes still in the kubelet's Pod cgroups (none after a clean stop). */
export function podProcessesLeft(): Array<{ pid: number; cmd: string }> {
  return procs().filter(({ pid }) => {
    try {
      return IN_POD_CGROUP.test(fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** The kubelet's cgroupRoot, in every cgroup v1 hierarchy (the kubelet wants it to exist). */
function podCgroupDirs(): string[] {
  const base = '/sys/fs/cgroup';
  if (!fs.existsSync(base)) return [];
  return fs.readdirSync(base).map((h) => path.join(base, h))
    .filter((h) => fs.existsSync(path.join(h, 'cgroup.procs')) || fs.existsSync(path.join(h, 'tasks')))
    .map((h) => path.join(h, POD_CGROUP_ROOT));
}

/** A Pod's memory on the real node, from its cgroup v1 memory.stat (the kubelet's cgroupfs layout). */
export interface PodMemory {
  /** Anonymous memory (heaps, stacks) of every process in the Pod: total_rss. */
  readonly rssBytes: number;
  /**
   * Shared memory charged to the Pod, part of its page cache: total_shmem. Under gVisor the
   * sandboxed processes' memory lives here (the Sentry's memory file), not in total_rss.
   */
  readonly shmemBytes: number;
  /** Page cache charged to the Pod (files it wrote or read, the emptyDir's included; shmem too): total_cache. */
  readonly cacheBytes: number;
  /** What the kubelet calls the working set: memory.usage_in_bytes less total_inactive_file. */
  readonly workingSetBytes: number;
}

/**
 * The memory of the Pod with UID `uid`: `memory.stat` of `<cgroupRoot>/kubepods[/<qos class>]/pod<uid>`
 * in the memory hierarchy; undefined when no such cgroup exists (not on this node, or gone).
 */
export function podMemory(uid: string): PodMemory | undefined {
  const kubepods = path.join('/sys/fs/cgroup/memory', POD_CGROUP_ROOT, 'kubepods');
  const dir = [path.join(kubepods, `pod${uid}`), ...['burstable', 'besteffort'].map((qos) => path.join(kubepods, qos, `pod${uid}`))]
    .find((d) => fs.existsSync(path.join(d, 'memory.stat')));
  if (!dir) return undefined;
  const stat = new Map(fs.readFileSync(path.join(dir, 'memory.stat'), 'utf8').trim().split('\n').map((line) => {
    const [key, value] = line.split(' ');
    return [key, Number(value)] as const;
  }));
  const usage = Number(fs.readFileSync(path.join(dir, 'memory.usage_in_bytes'), 'utf8'));
  return {
    rssBytes: stat.get('total_rss') ?? 0,
    shmemBytes: stat.get('total_shmem') ?? 0,
    cacheBytes: stat.get('total_cache') ?? 0,
    workingSetBytes: Math.max(0, usage - (stat.get('total_inactive_file') ?? 0)),
  };
}

function makePodCgroupRoot(): void {
  for (const dir of podCgroupDirs()) fs.mkdirSync(dir, { recursive: true });
}

/** Removes the (empty, once the Pods are gone) cgroups under the cgroupRoot, deepest first. */
function removePodCgroups(): void {
  for (const root of podCgroupDirs().filter((d) => fs.existsSync(d))) {
    const dirs: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
      dirs.push(d);
    };
    walk(root);
    for (const d of dirs) {
      try {
        fs.rmdirSync(d);
      } catch { /* still in use or gone: the next stop tries again */ }
    }
  }
}

function procs(): Array<{ pid: number; cmd: string }> {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid).flatMap((p) => {
    try {
      return [{ pid: Number(p), cmd: fs.readFileSync(`/proc/${p}/cmdline`, 'utf8') }];
    } catch {
      return [];
    }
  });
}

function writeContainerdConfig(dirs: Record<string, string>, a: NodeArtifacts): void {
  const certsDir = path.join(dirs.containerd, 'certs.d', '_default');
  fs.mkdirSync(certsDir, { recursive: true });
  // Every registry resolves to a closed loopback port: a missing image fails fast instead of
  // reaching out of the machine.
  fs.writeFileSync(path.join(certsDir, 'hosts.toml'), 'server = "http://127.0.0.1:9"\n\n[host."http://127.0.0.1:9"]\n  capabilities = ["pull", "resolve"]\n');
  const runscToml = path.join(dirs.containerd, 'runsc.toml');
  fs.writeFileSync(runscToml, [
    `binary_name = "${path.join(a.nodeBinDir, 'runsc')}"`,
    `root = "${dirs.runsc}"`,
    '[runsc_config]',
    // systrap: gVisor's default platform, needs no KVM.
    '  platform = "systrap"',
    '',
  ].join('\n'));
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  fs.writeFileSync(path.join(dirs.containerd, 'config.toml'), [
    'version = 2',
    `root = "${path.join(dirs.containerd, 'root')}"`,
    `state = "${path.join(dirs.containerd, 'state')}"`,
    'disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]',
    '[grpc]',
    `  address = "${path.join(dirs.containerd, 'containerd.sock')}"`,
    '[ttrpc]',
    `  address = "${path.join(dirs.containerd, 'containerd.sock.ttrpc')}"`,
    '[debug]',
    '  level = "info"',
    `[${cri}]`,
    `  sandbox_image = "${a.images.refs.pause}"`,
    // This sandbox lacks CAP_SYS_RESOURCE: without this every container fails on oom_score_adj.
    '  restrict_oom_score_adj = true',
    '  enable_selinux = false',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    '  SystemdCgroup = false',
    // The gvisor RuntimeClass's handler: gVisor's own shim, with runsc (see runsc.toml).
    `[${cri}.containerd.runtimes.runsc]`,
    '  runtime_type = "io.containerd.runsc.v1"',
    `[${cri}.containerd.runtimes.runsc.options]`,
    '  TypeUrl = "io.containerd.runsc.v1.options"',
    `  ConfigPath = "${runscToml}"`,
    `[${cri}.cni]`,
    '  bin_dir = "/usr/lib/cni"',
    `  conf_dir = "${path.join(dirs.cni, 'net.d')}"`,
    `[${cri}.registry]`,
    `  config_path = "${path.join(dirs.containerd, 'certs.d')}"`,
    '',
  ].join('\n'));
}

function writeCniConfig(dir: string): void {
  fs.mkdirSync(path.join(dir, 'net.d'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'net.d', '10-agent-sandbox.conflist'), JSON.stringify({
    cniVersion: '1.0.0',
    name: 'agent-sandbox',
    plugins: [
      {
        type: 'bridge',
        bridge: BRIDGE,
        // Not the gateway: the bridge plugin would switch on IP forwarding machine-wide. The bridge
        // already holds BRIDGE_IP; pods route through it by the IPAM route below.
        isGateway: false,
        ipMasq: false,
        // A pod reaching itself through its Service comes back over the same bridge port.
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR, rangeStart: '198.18.1.1', rangeEnd: '198.18.255.254', gateway: BRIDGE_IP }]],
          routes: [{ dst: '0.0.0.0/0', gw: BRIDGE_IP }],
          dataDir: path.join(dir, 'ipam'),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }, null, 2));
}

/**
 * gVisor's shim lowers its own oom_score_adj to -999 when it starts and fails if that is refused,
 * which it is in a sandbox without CAP_SYS_RESOURCE (like this one). It ignores the refusal only
 * when it believes it runs in a user namespace, which it learns from /proc/self/uid_map. This
 * wrapper shows the `start` step a one-line uid_map in a private mount namespace and leaves
 * everything else to the real shim, unchanged. On a node with CAP_SYS_RESOURCE it is not needed.
 */
function writeRunscShimWrapper(binDir: string, nodeBinDir: string): void {
  const real = path.join(nodeBinDir, 'containerd-shim-runsc-v1');
  const map = path.join(binDir, 'shim-uid-map');
  fs.writeFileSync(map, '0 0 1\n');
  fs.writeFileSync(path.join(binDir, 'containerd-shim-runsc-v1'), [
    '#!/bin/sh',
    '# Generated by tools/control-plane/real-node.ts: see writeRunscShimWrapper there.',
    'case " $* " in',
    `  *" start "*) exec unshare --mount --propagation slave sh -c 'mount --bind "$1" /proc/$$/uid_map && shift && exec "$@"' sh "${map}" "${real}" "$@" ;;`,
    'esac',
    `exec "${real}" "$@"`,
    '',
  ].join('\n'), { mode: 0o755 });
}

function kubeletConfiguration(socket: string, port: number, healthzPort: number, o: RealNodeStart): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine's kernel runs cgroup v1, which kubelet 1.35+ refuses unless told otherwise.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    // Pods under a cgroup of their own, so stopping the node finds exactly its processes.
    cgroupRoot: `/${POD_CGROUP_ROOT}`,
    containerRuntimeEndpoint: `unix://${socket}`,
    address: BRIDGE_IP,
    port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort,
    tlsCertFile: o.servingCert,
    tlsPrivateKeyFile: o.servingKey,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: o.caCert } },
    authorization: { mode: 'Webhook' },
    // No cluster DNS and no host resolver: nothing in a pod can look up, let alone reach, an outside name.
    clusterDomain: 'cluster.local',
    resolvConf: '',
    failSwapOn: false,
    serializeImagePulls: false,
    // Disposable test node on a shared disk: evict only when really short.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    protectKernelDefaults: false,
    maxPods: 110,
    syncFrequency: '10s',
    nodeStatusReportFrequency: '10s',
    shutdownGracePeriod: '0s',
  };
}

function importImages(socket: string, images: NodeImages, log: Log): void {
  const t0 = Date.now();
  for (const [name, archive] of Object.entries(images.archives)) {
    // --no-unpack would leave the CRI to unpack on first use; unpacking now keeps pod start honest.
    run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'import', '--no-unpack=false', '--base-name', images.refs[name].replace(/:[^:/]+$/, ''), archive]);
  }
  for (const [name, aliases] of Object.entries(images.aliases)) {
    for (const alias of aliases) run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'tag', '--force', images.refs[name], alias]);
  }
  const listed = run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'ls', '-q']).split('\n');
  const missing = [...Object.values(images.refs), ...Object.values(images.aliases).flat()].filter((r) => !listed.includes(r));
  if (missing.length) throw new Error(`containerd lacks ${missing.join(', ')} after import (has: ${listed.join(', ')})`);
  log(`imported ${Object.keys(images.archives).length} images into containerd in ${Date.now() - t0} ms`);
}

async function nodeReady(api: ApiClient, name: string): Promise<boolean> {
  const res = await api.request<{ status?: { conditions?: Array<{ type: string; status: string }> } }>('GET', `/api/v1/nodes/${name}`);
  if (res.status !== 200) return false;
  const node = res.body;
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export { sleep };
