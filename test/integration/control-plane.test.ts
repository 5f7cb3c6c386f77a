/**
 * Proof that the local control plane is a real one: the scheduler binds pods, kwok makes
 * them Ready, kube-controller-manager garbage-collects dependents (also of CRD owners) and
 * provisions volumes. Latencies are logged for the record, never asserted.
 */
import * as fs from 'fs';
import * as net from 'net';
import { performance } from 'perf_hooks';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { DEFAULT_POD_CIDR, STORAGE_CLASS } from '../../tools/control-plane/control-plane';
import { Kube, waitFor } from '../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;

beforeAll(async () => {
  ns = await kube.createNamespace('cp-proof');
});

afterAll(async () => {
  if (ns) await kube.deleteNamespace(ns);
});

const isReady = (obj: any) => obj?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

function inSubnet(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const list = new net.BlockList();
  list.addSubnet(base, Number(bits), 'ipv4');
  return net.isIPv4(ip) && list.check(ip, 'ipv4');
}

function podObject(name: string, extra: Record<string, unknown> = {}): any {
  // The image is never pulled: kwok plays the kubelet.
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'main', image: 'example.invalid/sandbox:0' }], ...extra },
  };
}

/** Creates a pod once a watch on it is open and resolves with the pod as first seen Ready. */
async function createPodAndWaitReady(pod: any): Promise<{ pod: any; latencyMs: number }> {
  let t0 = 0;
  const ready = await api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=${pod.metadata.name}`,
    (ev) => (ev.type !== 'DELETED' && isReady(ev.object) ? ev.object : undefined),
    {
      timeoutMs: 60_000,
      onReady: () => {
        t0 = performance.now();
        return api.call('POST', `/api/v1/namespaces/${ns}/pods`, pod);
      },
    });
  return { pod: ready, latencyMs: performance.now() - t0 };
}

test('/version reports the pinned Kubernetes version', async () => {
  const server = await api.call('GET', '/version');
  expect(server.gitVersion).toBe('v1.36.3');
  const client = JSON.parse(await kube.kubectl(['version', '--client', '-o', 'json']));
  expect(client.clientVersion.gitVersion).toBe('v1.36.3');
});

test('kwok nodes are Ready and addressed on loopback', async () => {
  const nodes = (await kube.getJson(['nodes'])).items;
  expect(nodes.length).toBeGreaterThan(0);
  for (const node of nodes) {
    expect({ name: node.metadata.name, ready: isReady(node) }).toEqual({ name: node.metadata.name, ready: true });
    const internal = node.status.addresses.find((a: any) => a.type === 'InternalIP');
    expect(internal?.address).toBe('127.0.0.1');
  }
});

test('a plain Pod is bound by kube-scheduler and becomes Ready with a pod IP in 127.0.0.0/8', async () => {
  const created = podObject('plain');
  expect(created.spec.nodeName).toBeUndefined(); // the scheduler, not the test, picks the node
  const { pod, latencyMs } = await createPodAndWaitReady(created);
  console.log(`pod create -> Ready: ${latencyMs.toFixed(0)} ms`);

  expect(pod.spec.nodeName).toMatch(/^kwok-node-\d+$/);
  expect(pod.status.phase).toBe('Running');
  expect(inSubnet(pod.status.podIP, '127.0.0.0/8')).toBe(true);
  expect(inSubnet(pod.status.podIP, DEFAULT_POD_CIDR)).toBe(true);
  const scheduled = pod.status.conditions.find((c: any) => c.type === 'PodScheduled');
  expect(scheduled?.status).toBe('True');

  const events = await waitFor(async () => {
    const list = await kube.getJson(['events', '-n', ns, '--field-selector', 'involvedObject.name=plain,reason=Scheduled']);
    return list.items.length ? list.items : undefined;
  }, 30_000, 'the Scheduled event of pod plain');
  expect(events.map((e: any) => e.reportingComponent || e.source?.component)).toContain('default-scheduler');
});

test('a Deployment rolls out through the ReplicaSet controller', async () => {
  await kube.applyServerSide([{
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: podObject('x').spec },
    },
  }], 'cp-proof', ns);
  await kube.wait(['deployment/web', '--for=condition=Available'], ns, 90_000);
  const pods = (await kube.getJson(['pods', '-n', ns, '-l', 'app=web'])).items;
  expect(pods.filter(isReady)).toHaveLength(3);
  expect(pods.every((p: any) => p.metadata.ownerReferences?.[0]?.kind === 'ReplicaSet')).toBe(true);
});

test('deleting an owner ConfigMap garbage-collects its dependent', async () => {
  const owner = await kube.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner' } }, ns);
  await kube.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }] },
  }, ns);
  expect(await kube.tryGetJson(['configmap', 'dependent', '-n', ns])).toBeDefined();

  const lagMs = await deleteAndMeasureGc(`/api/v1/namespaces/${ns}/configmaps/owner`, 'dependent', 60_000);
  console.log(`GC lag (ConfigMap owner): ${lagMs.toFixed(0)} ms`);
  expect(await kube.tryGetJson(['configmap', 'dependent', '-n', ns])).toBeUndefined();
});

test('deleting a custom-resource owner garbage-collects its dependent (CRD installed before kcm start)', async () => {
  const crd = await kube.tryGetJson(['crd', 'gcprobes.test.cdk8s-agent-sandbox.dev']);
  if (!crd) {
    throw new Error('CRD gcprobes.test.cdk8s-agent-sandbox.dev missing: a reused cluster must be started with '
      + '"cli.ts up --manifest test/integration/setup/manifests/gc-probe-crd.yaml"');
  }
  const lagMs = await measureCustomOwnerGc('test.cdk8s-agent-sandbox.dev', 'gcprobes', 'GcProbe', 60_000);
  console.log(`GC lag (custom resource owner, CRD installed before kcm start): ${lagMs.toFixed(0)} ms`);
});

test('deleting a custom-resource owner garbage-collects its dependent (CRD created after kcm start)', async () => {
  const group = `gc${Math.random().toString(36).slice(2, 8)}.test.cdk8s-agent-sandbox.dev`;
  const crdName = `widgets.${group}`;
  await kube.create({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { 'type': 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  try {
    await kube.wait([`crd/${crdName}`, '--for=condition=Established'], undefined, 60_000);
    // The garbage collector discovers new resource types every 30 s, so allow well beyond that.
    const lagMs = await measureCustomOwnerGc(group, 'widgets', 'Widget', 150_000);
    console.log(`GC lag (custom resource owner, CRD created after kcm start): ${lagMs.toFixed(0)} ms`);
  } finally {
    await kube.kubectl(['delete', 'crd', crdName, '--wait=false', '--ignore-not-found']);
  }
});

test('a PVC binds through the default StorageClass, a pod using it runs, and deleting it reclaims the volume', async () => {
  const pvc = await kube.create({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  }, ns);
  expect(pvc.spec.storageClassName).toBe(STORAGE_CLASS); // set by DefaultStorageClass admission

  await kube.wait(['pvc/data', '--for=jsonpath={.status.phase}=Bound'], ns, 60_000);
  const bound = await kube.getJson(['pvc', 'data', '-n', ns]);
  expect(bound.status.phase).toBe('Bound');
  const pv = await kube.getJson(['pv', bound.spec.volumeName]);
  expect(pv.spec.claimRef.uid).toBe(bound.metadata.uid);
  expect(pv.spec.storageClassName).toBe(STORAGE_CLASS);

  const { pod } = await createPodAndWaitReady(podObject('uses-data', {
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
  }));
  expect(pod.spec.nodeName).toMatch(/^kwok-node-\d+$/);

  await kube.kubectl(['delete', 'pod', 'uses-data', '-n', ns, '--wait=true', '--timeout=60s']);
  await kube.kubectl(['delete', 'pvc', 'data', '-n', ns, '--wait=true', '--timeout=60s']);
  await kube.wait([`pv/${pv.metadata.name}`, '--for=delete'], undefined, 60_000);
  expect(await kube.tryGetJson(['pv', pv.metadata.name])).toBeUndefined();
  expect(fs.existsSync(pv.spec.hostPath.path)).toBe(false); // the provisioner's directory went too
});

/**
 * Deletes `ownerPath` once a watch on the dependent ConfigMap is open and resolves with the
 * time until the dependent's DELETED event.
 */
async function deleteAndMeasureGc(ownerPath: string, dependent: string, timeoutMs: number): Promise<number> {
  let t0 = 0;
  await api.watch(`/api/v1/namespaces/${ns}/configmaps?fieldSelector=metadata.name=${dependent}`,
    (ev) => (ev.type === 'DELETED' ? true : undefined),
    {
      timeoutMs,
      onReady: () => {
        t0 = performance.now();
        return api.call('DELETE', ownerPath);
      },
    });
  return performance.now() - t0;
}

/** Owner custom resource + dependent ConfigMap; deletes the owner and returns the GC lag. */
async function measureCustomOwnerGc(group: string, plural: string, kind: string, timeoutMs: number): Promise<number> {
  const collection = `/apis/${group}/v1/namespaces/${ns}/${plural}`;
  const name = `${plural}-owner`;
  // Established can precede the new handler being routable by a moment.
  const owner = await waitFor(() => api.call<{ metadata: { uid: string } }>('POST', collection, { apiVersion: `${group}/v1`, kind, metadata: { name } }),
    30_000, `creating the ${kind} owner`);
  const dependent = `${plural}-dependent`;
  await kube.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: dependent, ownerReferences: [{ apiVersion: `${group}/v1`, kind, name, uid: owner.metadata.uid }] },
  }, ns);
  expect(await kube.tryGetJson(['configmap', dependent, '-n', ns])).toBeDefined();
  const lagMs = await deleteAndMeasureGc(`${collection}/${name}`, dependent, timeoutMs);
  expect(await kube.tryGetJson(['configmap', dependent, '-n', ns])).toBeUndefined();
  return lagMs;
}
