/**
 * The whole system on this machine, for `npm run demo` and the `agent` benchmark: the local control
 * plane with the synthesized CRDs and the pod runner, the operator and the router (--auth=none) as
 * local processes, and a SandboxTemplate whose Pods the pod runner runs as local runtime processes,
 * with a warm pool of it. stop() ends everything it started, in reverse order.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';
import { writeCrds } from '../../bench/crds';
import { OperatorProcess } from '../../test/integration/operator/operator-process';
import { startControlPlane } from '../control-plane/control-plane';
import { Kube } from '../control-plane/kube';
import { RUN_LABEL } from '../control-plane/pod-runner';

const ROOT = path.resolve(__dirname, '..', '..');
export const NAMESPACE = 'default';

export interface LocalSystemOptions {
  readonly pool: string;
  readonly replicas: number;
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

    o.log(`creating SandboxTemplate "python" and SandboxWarmPool "${o.pool}" (${o.replicas} warm sandboxes)`);
    await kube.applyServerSide([template('python'), pool(o.pool, 'python', o.replicas)], 'local-system', NAMESPACE);
    await kube.wait([`sandboxwarmpool/${o.pool}`, `--for=jsonpath={.status.readyReplicas}=${o.replicas}`], NAMESPACE, 180_000);
    return { kubeconfig: cp.kubeconfig, kube, routerUrl, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function template(name: string): object {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name },
    spec: {
      podTemplate: {
        // The pod runner runs Pods with this label as local processes on their loopback pod IP.
        metadata: { labels: { [RUN_LABEL]: 'true', app: 'agent' } },
        spec: {
          containers: [{
            name: 'runtime',
            image: 'example.invalid/agent-sandbox-operator:local',
            command: ['agent-sandbox-operator', 'runtime', '--port=8888'],
            ports: [{ containerPort: 8888 }],
          }],
        },
      },
    },
  };
}

function pool(name: string, templateName: string, replicas: number): object {
  return { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', metadata: { name }, spec: { replicas, sandboxTemplateRef: { name: templateName } } };
}
