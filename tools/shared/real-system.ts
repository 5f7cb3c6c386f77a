/**
 * The whole system on a real node, installed the way a platform team installs it: the local control
 * plane with one real node (kubelet, containerd, runc, gVisor, kube-proxy, kube-router), then the
 * library's install bundle (`AgentSandboxSystem` with the router, and the gVisor RuntimeClass)
 * synthesized and applied with kubectl. The operator and the router run as Pods of the image built
 * from operator/Dockerfile, under the bundle's own RBAC, leader election on. Used by the real-node
 * suite (test/real-nodes) and `npm run demo -- --real-nodes`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Chart, Testing } from 'cdk8s';
import { stringify as toYaml } from 'yaml';
import { writeCrds } from './crds';
import { AgentSandboxSystem } from '../../src/install';
import { SandboxRuntimeClass } from '../../src/runtime-class';
import { ControlPlane, startControlPlane } from '../control-plane/control-plane';
import { Kube } from '../control-plane/kube';
import { CLUSTER_CIDR, POD_CIDR } from '../control-plane/real-node';

export const SYSTEM_NAMESPACE = 'agent-sandbox-system';
export const ROUTER_SERVICE = 'sandbox-router-svc';

export interface RealSystemOptions {
  readonly log: (message: string) => void;
  /** Gets the stop function at once, so a Ctrl-C during start-up stops what already runs. */
  readonly onStop?: (stop: () => Promise<void>) => void;
  /** Keep the processes running after this process exits (`cli up`-like). @default false */
  readonly detached?: boolean;
}

export interface RealSystem {
  readonly cp: ControlPlane;
  readonly kube: Kube;
  /** Image references by name: `agent-sandbox-operator`, `python-sandbox`, `pause`, ... */
  readonly images: Record<string, string>;
  /** The install bundle as applied (one YAML stream). */
  readonly bundleFile: string;
  stop(): Promise<void>;
}

/** The platform's objects: what a platform repository would commit for this cluster. */
export function platformObjects(): any[] {
  const chart: Chart = Testing.chart();
  new AgentSandboxSystem(chart, 'system', {
    // This cluster's Pods, Services and API server are in 198.18.0.0/15, outside the private ranges
    // that the router dials by default and that the default sandbox NetworkPolicy keeps sandboxes from.
    router: { replicas: 1, args: [`--allowed-pod-cidrs=${POD_CIDR}`] },
    controller: { clusterCidrs: [CLUSTER_CIDR] },
  });
  SandboxRuntimeClass.gvisor(chart, 'gvisor');
  return Testing.synth(chart);
}

/** Applies {@link platformObjects} with kubectl and waits for its Deployments; returns the file applied. */
export async function installPlatform(kube: Kube, dir: string, log: (m: string) => void): Promise<string> {
  const objects = platformObjects();
  const bundleFile = path.join(dir, 'platform.yaml');
  fs.writeFileSync(bundleFile, objects.map((x) => toYaml(x)).join('---\n'));
  log(`applying the install bundle (${objects.length} objects): kubectl apply --server-side -f ${bundleFile}`);
  await kube.kubectl(['apply', '--server-side', '--field-manager=platform', '-f', bundleFile]);
  for (const d of objects.filter((x) => x.kind === 'Deployment')) {
    await kube.kubectl(['rollout', 'status', `deployment/${d.metadata.name}`, '-n', d.metadata.namespace, '--timeout=240s'], { timeoutMs: 250_000 });
  }
  log('operator and router Deployments rolled out');
  return bundleFile;
}

export async function startRealSystem(o: RealSystemOptions): Promise<RealSystem> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const s of stops.splice(0)) await s().catch((err) => o.log(`stopping: ${(err as Error).message}`));
  };
  o.onStop?.(stop);
  try {
    o.log('starting the local control plane with a real node (a cold machine builds binaries and images first)');
    // The CRDs go in before kube-controller-manager starts, so owner-reference cascades work at once.
    const cp = await startControlPlane({ realNodes: 1, manifests: [writeCrds()], log: o.log, detached: o.detached });
    stops.unshift(() => cp.stop());
    const kube = new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir, cacheDir: path.join(cp.workDir, 'kubectl-cache') });
    const bundleFile = await installPlatform(kube, cp.workDir, o.log);
    return { cp, kube, images: cp.realNodes!.artifacts.images.refs, bundleFile, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
