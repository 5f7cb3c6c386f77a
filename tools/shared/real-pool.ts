/**
 * The demo's warm pools, made with the library's constructs as a platform team writes them: a
 * SandboxTemplate "python" of the stock Python image with the runtime injected (`runtime: {...}`),
 * optionally with its workspace on a PersistentVolumeClaim per sandbox (a volume claim template of
 * the default StorageClass wired as `runtime.workspaceVolume`, so files there survive suspend and
 * resume), a warm pool of it; and the agent's ServiceAccount with the library's `SandboxAccess` grant
 * (claims, and `create` on `sandboxclaims/connect`, which the router checks). The real-node demo runs
 * the pool under gVisor; the local one labels its Pods for the local control plane's pod runner.
 */
import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
import { SandboxAccess } from '../../src/access';
import { ObjectRef } from '../../src/object-ref';
import { SandboxRuntimeClass } from '../../src/runtime-class';
import { SandboxTemplate } from '../../src/template';
import { SandboxWarmPool } from '../../src/warm-pool';

export interface PythonPoolOptions {
  /** The sandbox image: a Debian-based Python image (the runtime is injected into it). */
  readonly image: string;
  readonly replicas: number;
  /** A RuntimeClass by name, such as `gvisor`. @default - the node's default runtime */
  readonly runtimeClass?: string;
  /** Labels of the sandbox Pods. @default - none */
  readonly podLabels?: Record<string, string>;
  /** Size of each sandbox's workspace claim, such as `1Gi`. @default - an emptyDir workspace, lost on suspend */
  readonly workspaceStorage?: string;
}

/** The SandboxTemplate "python" and the SandboxWarmPool `pool` of it. */
export function pythonPoolObjects(namespace: string, pool: string, o: PythonPoolOptions): any[] {
  const chart: Chart = Testing.chart();
  const workspace = o.workspaceStorage !== undefined;
  const template = new SandboxTemplate(chart, 'template', {
    metadata: { name: 'python', namespace },
    ...(o.runtimeClass ? { runtimeClass: SandboxRuntimeClass.fromName(o.runtimeClass) } : {}),
    ...(o.podLabels ? { podLabels: o.podLabels } : {}),
    containers: [{
      image: o.image,
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '512Mi' } },
      // The stock image runs as root; the template's non-root default needs a user.
      security: { runAsUser: 1000, runAsGroup: 1000 },
    }],
    ...(workspace ? {
      volumeClaimTemplates: [{ name: 'workspace', storage: o.workspaceStorage! }],
      // The volume's files belong to group 1000 where the provisioner supports it, so user 1000 writes them.
      security: { fsGroup: 1000 },
    } : {}),
    runtime: workspace ? { workspaceVolume: 'workspace' } : {},
    terminationGracePeriod: Duration.seconds(2),
  });
  new SandboxWarmPool(chart, 'pool', { metadata: { name: pool, namespace }, template, replicas: o.replicas });
  return Testing.synth(chart);
}

/** The agent's ServiceAccount and the library's SandboxAccess grant: claims, connect to them, list/watch Sandboxes. */
export function agentServiceAccount(namespace: string): any[] {
  const chart: Chart = Testing.chart();
  const agent = new ApiObject(chart, 'agent', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'agent', namespace } });
  new SandboxAccess(chart, 'access', { metadata: { name: 'agent', namespace }, serviceAccounts: [ObjectRef.fromConstruct(agent)], lifecycle: true });
  return Testing.synth(chart);
}
