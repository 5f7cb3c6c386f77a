/**
 * The whole system on this machine, for `npm run demo` and the `agent` benchmark: the local control
 * plane with the synthesized CRDs and the pod runner, the operator and the router (--auth=none) as
 * local processes, and the demo's SandboxTemplate "python" (real-pool.ts: the stock Python image with
 * the runtime injected) labelled for the pod runner, which runs its Pods as local runtime processes
 * (the injected runtime's command mapped to this checkout's bundle, the host's python3), with a warm
 * pool of it. stop() ends everything it started, in reverse order.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { writeCrds } from './crds';
import { OperatorProcess } from './operator-process';
import { pythonPoolObjects } from './real-pool';
import { startControlPlane } from '../control-plane/control-plane';
import { Kube } from '../control-plane/kube';
import { RUN_LABEL } from '../control-plane/pod-runner';

const ROOT = path.resolve(__dirname, '..', '..');
export const NAMESPACE = 'default';

export interface LocalSystemOptions {
  readonly pool: string;
  readonly replicas: number;
  /**
   * Size of each sandbox's workspace claim (`runtime.workspaceVolume`): the cluster's hostPath
   * provisioner binds it to a directory and the pod runner runs the runtime there, so the
   * workspace survives suspend and resume. @default - the Pod's own workspace, removed with the Pod
   */
  readonly workspaceStorage?: string;
  readonly log: (message: string) => void;
  /** Extra controller flags (e.g. more workers for a benchmark). */
  readonly controllerArgs?: readonly string[];
  /** Gets the stop function at once, so a Ctrl-C during start-up stops what already runs. */
  readonly onStop?: (stop: () => Promise<void>) => void;
}

export interface LocalSystem {
  readonly kubeconfig: string;
  readonly kube: Kube;
  /** The router's address on 127.0.0.1. */
  readonly routerUrl: string;
  stop(): Promise<void>;
}

export async function startLocalSystem(o: LocalSystemOptions): Promise<LocalSystem> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const s of stops.splice(0)) await s().catch((err) => o.log(`stopping: ${(err as Error).message}`));
  };
  o.onStop?.(stop);
  try {
    o.log('building the operator bundle');
    execFileSync('npx', ['projen', 'operator:build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    o.log('starting the local control plane (the first run builds its binaries: about 15 minutes)');
    // The synthesized CRDs go in before the controllers start.
    const cp = await startControlPlane({ manifests: [writeCrds()], log: o.log });
    stops.unshift(() => cp.stop());
    const kube = new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir });

    o.log('starting the operator and the router');
    const operator = await OperatorProcess.start({ kubeconfig: cp.kubeconfig, args: ['--extensions=true', ...(o.controllerArgs ?? [])] });
    stops.unshift(() => operator.stop());
    const router = await OperatorProcess.startRouter({ kubeconfig: cp.kubeconfig, args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12'] });
    stops.unshift(() => router.stop());
    const routerUrl = `http://127.0.0.1:${await router.port('proxy')}`;

    const workspace = o.workspaceStorage ? `, each with a ${o.workspaceStorage} workspace claim` : '';
    o.log(`creating SandboxTemplate "python" and SandboxWarmPool "${o.pool}" (${o.replicas} warm sandboxes${workspace})`);
    const objects = pythonPoolObjects(NAMESPACE, o.pool, {
      image: 'python:3.12-slim',
      replicas: o.replicas,
      // The pod runner runs Pods with this label as local processes on their loopback pod IP.
      podLabels: { [RUN_LABEL]: 'true' },
      workspaceStorage: o.workspaceStorage,
    });
    await kube.applyServerSide(objects, 'local-system', NAMESPACE);
    await kube.wait([`sandboxwarmpool/${o.pool}`, `--for=jsonpath={.status.readyReplicas}=${o.replicas}`], NAMESPACE, 180_000);
    return { kubeconfig: cp.kubeconfig, kube, routerUrl, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
