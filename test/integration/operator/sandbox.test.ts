/**
 * The Sandbox controller, black-box: the real operator bundle against the real local control
 * plane (KWOK turns scheduled Pods Ready with a pod IP in 127.64.0.0/12, which nothing here ever
 * dials). Each test creates Sandboxes through the API and checks what the operator made of them.
 * The operator runs as the install bundle's ServiceAccount with the core-only bundle's RBAC
 * (`extensions: false`, upstream's sandbox.yaml), so every write it needs must be granted there.
 */
import { BundleRbac } from './bundle-rbac';
import {
  HASH_LABEL, SandboxApi, condition, deleteSandboxes, isReady, sandboxManifest, summarizeLatencies,
} from './sandbox-api';
import { NameHash } from '../../../src/api/name-hash';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
let sbx: SandboxApi;
let rbac: BundleRbac;
let op: OperatorProcess;

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('sandbox-ctl');
  sbx = new SandboxApi(api, ns);
  rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: false });
  op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig });
}, 240_000);

afterAll(async () => {
  const code = await op?.stop();
  // eslint-disable-next-line no-console
  console.log(`operator log: ${op?.logFile} (exit ${code}, ${op?.errors().length} error lines)`);
  await rbac?.remove();
  if (ns) {
    await deleteSandboxes(api, ns);
    await kube.deleteNamespace(ns);
  }
});

test('create: one Pod named after the Sandbox, owned and hash-labeled; Ready with pod IPs and node; no Service unless asked', async () => {
  const latencies: number[] = [];
  for (const name of ['basic', 'basic-2', 'basic-3', 'basic-4', 'basic-5']) {
    latencies.push((await sbx.createAndWaitReady(sandboxManifest(name))).latencyMs);
  }
  // eslint-disable-next-line no-console
  console.log(`Sandbox create→Ready (cold, one at a time): ${summarizeLatencies(latencies)}`);

  const sb = await sbx.get('basic');
  const pods = await sbx.podsOf('basic');
  expect(pods.map((p) => p.metadata.name)).toEqual(['basic']);
  const pod = pods[0];
  expect(pod.metadata.labels[HASH_LABEL]).toBe(NameHash.of('basic'));
  expect(pod.metadata.ownerReferences).toEqual([{
    apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', name: 'basic', uid: sb.metadata.uid, controller: true, blockOwnerDeletion: true,
  }]);
  expect(sb.metadata.annotations['agents.x-k8s.io/pod-name']).toBe('basic');
  expect(sb.status.podIPs).toEqual(pod.status.podIPs.map((p: any) => p.ip));
  expect(sb.status.podIPs[0]).toMatch(/^127\.(6[4-9]|7[0-9])\.\d+\.\d+$/);
  expect(sb.status.nodeName).toBe(pod.spec.nodeName);
  expect(sb.status.nodeName).toMatch(/^kwok-node-/);
  expect(sb.status.selector).toBe(`${HASH_LABEL}=${NameHash.of('basic')}`);
  expect(condition(sb, 'Ready')).toMatchObject({ status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready', observedGeneration: 1 });
  expect(condition(sb, 'Suspended')).toMatchObject({ status: 'False', reason: 'NotSuspended' });
  expect(condition(sb, 'PodScheduled')).toMatchObject({ status: 'True' });
  expect(sb.status.service).toBeUndefined();
  expect(await sbx.service('basic')).toBeUndefined();
});

test('service: true makes the headless Service; unset keeps it; false deletes it and clears the status', async () => {
  await sbx.createAndWaitReady(sandboxManifest('web', { service: true }));
  const svc = await sbx.service('web');
  expect(svc.spec.clusterIP).toBe('None');
  expect(svc.spec.selector).toEqual({ [HASH_LABEL]: NameHash.of('web') });
  expect(svc.spec.ports).toEqual([{ name: 'http', port: 8888, protocol: 'TCP', targetPort: 8888 }]);
  expect(svc.metadata.ownerReferences[0]).toMatchObject({ kind: 'Sandbox', name: 'web', controller: true, blockOwnerDeletion: true });
  let sb = await sbx.get('web');
  expect(sb.status).toMatchObject({ service: 'web', serviceFQDN: `web.${ns}.svc.cluster.local` });
  expect(condition(sb, 'Ready')?.message).toBe('Pod is Ready; Service Exists');

  // Unset: the owned Service is kept (and is still part of readiness).
  await sbx.patchSpec('web', { service: null });
  sb = await sbx.waitFor('web', (s) => condition(s, 'Ready')?.observedGeneration === 2, 'generation 2 observed');
  expect(sb.status.service).toBe('web');
  expect((await sbx.service('web')).metadata.uid).toBe(svc.metadata.uid);

  await sbx.patchSpec('web', { service: false });
  await waitFor(async () => (await sbx.service('web')) === undefined, 30_000, 'the Service to be deleted');
  sb = await sbx.waitFor('web', (s) => s.status?.service === undefined && isReady(s), 'status.service cleared, still Ready');
  expect(sb.status.serviceFQDN).toBeUndefined();
});

test('PVCs: created as <template>-<sandbox>, owned, mounted; they survive suspend, and resume gets the same volume', async () => {
  const vct = { metadata: { name: 'data', labels: { tier: 'fast' } }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
  await sbx.createAndWaitReady(sandboxManifest('stateful', { service: true, volumeClaimTemplates: [vct] }));
  const pvc = await sbx.pvc('data-stateful');
  expect(pvc.metadata.labels).toEqual({ tier: 'fast', [HASH_LABEL]: NameHash.of('stateful') });
  expect(pvc.metadata.ownerReferences[0]).toMatchObject({ kind: 'Sandbox', name: 'stateful', controller: true });
  const firstPod = (await sbx.podsOf('stateful'))[0];
  expect(firstPod.spec.volumes).toContainEqual({ name: 'data', persistentVolumeClaim: { claimName: 'data-stateful' } });

  await sbx.patchSpec('stateful', { operatingMode: 'Suspended' });
  const suspended = await sbx.waitFor('stateful', (s) => condition(s, 'Suspended')?.status === 'True', 'Suspended=True');
  expect(condition(suspended, 'Suspended')?.reason).toBe('PodTerminated');
  expect(condition(suspended, 'Ready')).toMatchObject({ status: 'False', reason: 'SandboxSuspended', message: 'Sandbox is suspended' });
  expect(suspended.status.podIPs).toBeUndefined();
  expect(suspended.status.selector).toBe(`${HASH_LABEL}=${NameHash.of('stateful')}`);
  expect(suspended.metadata.annotations?.['agents.x-k8s.io/pod-name']).toBeUndefined();
  expect(await sbx.podsOf('stateful')).toEqual([]);
  expect((await sbx.pvc('data-stateful')).metadata.uid).toBe(pvc.metadata.uid);
  expect(await sbx.service('stateful')).toBeDefined();

  await sbx.patchSpec('stateful', { operatingMode: 'Running' });
  await sbx.waitFor('stateful', isReady, 'Ready again after resume');
  const secondPod = (await sbx.podsOf('stateful'))[0];
  expect(secondPod.metadata.uid).not.toBe(firstPod.metadata.uid);
  expect(secondPod.spec.volumes).toContainEqual({ name: 'data', persistentVolumeClaim: { claimName: 'data-stateful' } });
  const after = await sbx.pvc('data-stateful');
  expect(after.metadata.uid).toBe(pvc.metadata.uid);
  expect(after.spec.volumeName).toBe(pvc.spec.volumeName);
});

test('shutdownTime with Retain: Pod and Service go on time, the Sandbox stays expired with live status cleared', async () => {
  const vct = { metadata: { name: 'keep' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
  const shutdownMs = Math.ceil((Date.now() + 6_000) / 1000) * 1000;
  await sbx.createAndWaitReady(sandboxManifest('retained', { service: true, shutdownTime: new Date(shutdownMs).toISOString(), volumeClaimTemplates: [vct] }));
  const expired = (await sbx.watchUntil('retained', (ev) => condition(ev.object, 'Ready')?.reason === 'SandboxExpired', 30_000)).object;
  // eslint-disable-next-line no-console
  console.log(`expiry (Retain) seen ${Date.now() - shutdownMs} ms after shutdownTime`);
  expect(Date.now()).toBeGreaterThanOrEqual(shutdownMs);
  expect(condition(expired, 'Ready')).toMatchObject({ status: 'False', message: 'Sandbox has expired' });
  expect(condition(expired, 'PodScheduled')).toBeUndefined();
  expect(Object.keys(expired.status)).toEqual(['conditions']);
  await waitFor(async () => (await sbx.podsOf('retained')).length === 0, 30_000, 'the Pod to be gone');
  await waitFor(async () => (await sbx.service('retained')) === undefined, 30_000, 'the Service to be gone');
  expect(await sbx.pvc('keep-retained')).toBeDefined();
  expect(await sbx.get('retained')).toBeDefined();
});

test('shutdownTime with Delete: the Sandbox is deleted on time and garbage collection takes its children', async () => {
  const vct = { metadata: { name: 'scratch' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
  const shutdownMs = Math.ceil((Date.now() + 6_000) / 1000) * 1000;
  await sbx.createAndWaitReady(sandboxManifest('ephemeral', {
    service: true, shutdownPolicy: 'Delete', shutdownTime: new Date(shutdownMs).toISOString(), volumeClaimTemplates: [vct],
  }));
  await sbx.watchUntil('ephemeral', (ev) => ev.type === 'DELETED', 30_000);
  // eslint-disable-next-line no-console
  console.log(`expiry (Delete) seen ${Date.now() - shutdownMs} ms after shutdownTime`);
  expect(Date.now()).toBeGreaterThanOrEqual(shutdownMs);
  await waitFor(async () => (await sbx.podsOf('ephemeral')).length === 0 && (await sbx.service('ephemeral')) === undefined
    && (await sbx.pvc('scratch-ephemeral')) === undefined, 60_000, 'Pod, Service and PVC to be garbage-collected');
});

test('label spoofing fails: reserved keys never reach the Pod, and a tampered hash label is put back', async () => {
  await sbx.createAndWaitReady(sandboxManifest('victim', { service: true }));
  const victimHash = NameHash.of('victim');
  const attackerSpec = sandboxManifest('attacker', {}, {
    labels: { [HASH_LABEL]: victimHash, 'agents.x-k8s.io/warm-pool-sandbox': 'p', 'extensions.agents.x-k8s.io/any': 'x', 'app': 'attacker' },
    annotations: { 'agents.x-k8s.io/pod-name': 'victim', 'opentelemetry.io/trace-context': '{}', 'note': 'kept' },
  });
  await sbx.createAndWaitReady(attackerSpec);
  const attackerPod = (await sbx.podsOf('attacker'))[0];
  expect(attackerPod.metadata.labels).toEqual({ app: 'attacker', [HASH_LABEL]: NameHash.of('attacker') });
  expect(attackerPod.metadata.annotations).toEqual({
    'note': 'kept', 'agents.x-k8s.io/propagated-labels': 'app', 'agents.x-k8s.io/propagated-annotations': 'note',
  });
  // The owner is told which keys were dropped, once.
  const dropped = await waitFor(async () => {
    const events = (await api.call('GET', `/apis/events.k8s.io/v1/namespaces/${ns}/events`)).items;
    return events.find((e: any) => e.regarding?.name === 'attacker' && e.reason === 'ReservedMetadataDropped');
  }, 30_000, 'a ReservedMetadataDropped event for the attacker');
  expect(dropped.type).toBe('Warning');
  expect(dropped.note).toContain(`label ${HASH_LABEL}`);
  expect(dropped.note).toContain('annotation agents.x-k8s.io/pod-name');

  // The victim's Service selects the victim's Pod only. (EndpointSlices cannot show it here: the
  // API server refuses loopback endpoint addresses, and KWOK's pod IPs are loopback on purpose.)
  const selector = (await sbx.service('victim')).spec.selector;
  expect(selector).toEqual({ [HASH_LABEL]: victimHash });
  const selected = await sbx.podsByLabel(Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(','));
  expect(selected.map((p) => p.metadata.name)).toEqual(['victim']);

  // Someone with write access to Pods relabels the attacker's Pod: the controller restores it.
  await api.call('PATCH', `/api/v1/namespaces/${ns}/pods/attacker`, { metadata: { labels: { [HASH_LABEL]: victimHash } } });
  await waitFor(async () => (await sbx.podsOf('attacker'))[0]?.metadata.labels[HASH_LABEL] === NameHash.of('attacker'), 30_000, 'the hash label to be restored');
});

test('deleting a Sandbox removes its Pod, Service and PVCs', async () => {
  const vct = { metadata: { name: 'home' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
  await sbx.createAndWaitReady(sandboxManifest('doomed', { service: true, volumeClaimTemplates: [vct] }));
  await kube.kubectl(['delete', 'sandbox', 'doomed', '-n', ns, '--wait=false']);
  await waitFor(async () => (await sbx.podsOf('doomed')).length === 0 && (await sbx.service('doomed')) === undefined
    && (await sbx.pvc('home-doomed')) === undefined && (await sbx.get('doomed')) === undefined, 60_000, 'everything to be gone');
});

test('InvalidConfiguration: set once with a clear message, no retry loop, and a spec edit recovers', async () => {
  // 250 characters: a valid Sandbox name, but data-<name> is past the 253 a PVC name may have.
  const longName = `long-${'x'.repeat(245)}`;
  const vct = { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
  await sbx.create(sandboxManifest(longName, { volumeClaimTemplates: [vct] }));
  const tooLong = await sbx.waitFor(longName, (s) => condition(s, 'Ready')?.reason === 'InvalidConfiguration', 'InvalidConfiguration (PVC name)');
  expect(condition(tooLong, 'Ready')?.message).toMatch(/the PVC name .* at most 253 characters/);

  const badPod = sandboxManifest('bad-pod');
  badPod.spec.podTemplate.spec.containers[0].name = 'Not_A_DNS_Label';
  await sbx.create(badPod);
  const rejected = await sbx.waitFor('bad-pod', (s) => condition(s, 'Ready')?.reason === 'InvalidConfiguration', 'InvalidConfiguration (Pod rejected)');
  expect(condition(rejected, 'Ready')?.message).toMatch(/the API server rejected Pod "bad-pod".*spec.containers\[0\].name/);

  // No hot loop: once the operator has seen its own status writes (the barrier) and reconciled
  // everything they queued, neither Sandbox was written again, and no reconcile failed or was retried.
  const before = [(await sbx.get(longName)).metadata.resourceVersion, rejected.metadata.resourceVersion];
  const errorsBefore = op.errors().length;
  const metricsBefore = await op.metrics();
  await sbx.barrier();
  const settled = await op.waitIdle(['sandbox']);
  expect([(await sbx.get(longName)).metadata.resourceVersion, (await sbx.get('bad-pod')).metadata.resourceVersion]).toEqual(before);
  for (const counter of ['controller_runtime_reconcile_errors_total', 'workqueue_retries_total']) {
    expect([counter, settled.sum(counter, { controller: 'sandbox' })]).toEqual([counter, metricsBefore.sum(counter, { controller: 'sandbox' })]);
  }
  expect(op.errors().length).toBe(errorsBefore);
  expect(await sbx.podsOf(longName)).toEqual([]);

  await sbx.patchSpec('bad-pod', { podTemplate: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } });
  await sbx.waitFor('bad-pod', isReady, 'Ready after the spec was fixed');
});

test('MultiplePods: a second Pod controlled by the Sandbox is reported with a Warning, and resolving it recovers', async () => {
  await sbx.createAndWaitReady(sandboxManifest('twins'));
  const sb = await sbx.get('twins');
  const original = (await sbx.podsOf('twins'))[0];
  await api.call('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'twins-extra',
      labels: { [HASH_LABEL]: NameHash.of('twins') },
      ownerReferences: [{ apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', name: 'twins', uid: sb.metadata.uid, controller: true }],
    },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
  });
  const ambiguous = await sbx.waitFor('twins', (s) => condition(s, 'Ready')?.reason === 'MultiplePods', 'Ready=False/MultiplePods');
  expect(condition(ambiguous, 'Ready')?.message).toContain('twins, twins-extra');
  await waitFor(async () => (await sbx.events('twins')).some((e) => e.reason === 'MultiplePods' && e.type === 'Warning'), 30_000, 'a MultiplePods Warning event');

  await api.call('DELETE', `/api/v1/namespaces/${ns}/pods/twins-extra`);
  await sbx.waitFor('twins', isReady, 'Ready again');
  expect((await sbx.podsOf('twins')).map((p) => p.metadata.uid)).toEqual([original.metadata.uid]);
});

describe('adoption', () => {
  const podsUrl = () => `/api/v1/namespaces/${ns}/pods`;
  const squatter = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { hostNetwork: true, containers: [{ name: 'main', image: 'busybox', securityContext: { privileged: true }, ports: [{ containerPort: 10250 }] }] },
  });
  const refusedWith = (text: string) => (sb: any) => condition(sb, 'Ready')?.reason === 'ReconcilerError' && String(condition(sb, 'Ready')?.message).includes(text);

  test.each([
    ['labelled adoptable=true', 'squat-a', () => ({ 'agents.x-k8s.io/adoptable': 'true' }), 'does not carry this Sandbox\'s label'],
    ['carrying the Sandbox\'s hash label', 'squat-b', () => ({ [HASH_LABEL]: NameHash.of('squat-b') }), 'its spec breaks the hardening rules'],
  ])('a privileged hostNetwork Pod created beforehand %s is not adopted: Ready=False naming why, a Warning, no node address, the Pod left alone',
    async (_, name, labels, why) => {
      const created = await api.call('POST', podsUrl(), squatter(name, labels()));
      // KWOK runs it: a hostNetwork Pod reports its node's address.
      await waitFor(async () => (await api.call('GET', `${podsUrl()}/${name}`)).status?.podIP, 30_000, `Pod ${name} to get an address`);
      await sbx.create(sandboxManifest(name));
      const sb = await sbx.waitFor(name, refusedWith(why), `Ready=False/ReconcilerError: ${why}`);
      expect(condition(sb, 'Ready')).toMatchObject({ status: 'False', message: expect.stringContaining(`Pod "${name}" exists and no controller owns it`) });
      if (why.includes('hardening')) expect(condition(sb, 'Ready').message).toContain('spec.hostNetwork is true; spec.containers[0].securityContext.privileged (container "main") is true');
      expect(sb.status.podIPs).toBeUndefined();
      expect(sb.status.nodeName).toBeUndefined();
      await waitFor(async () => (await sbx.events(name)).some((e) => e.reason === 'PodAdoptionRefused' && e.type === 'Warning'), 30_000, 'a PodAdoptionRefused Warning');
      const pod = await api.call('GET', `${podsUrl()}/${name}`);
      expect(pod.metadata.uid).toBe(created.metadata.uid);
      expect(pod.metadata.ownerReferences).toBeUndefined();

      // Deleting the squatter lets the Sandbox make its own Pod.
      await api.call('DELETE', `${podsUrl()}/${name}`, { gracePeriodSeconds: 0 });
      const ready = await sbx.waitFor(name, isReady, 'Ready on a Pod of its own');
      const own = (await sbx.podsOf(name))[0];
      expect(own.metadata.uid).not.toBe(created.metadata.uid);
      expect(own.spec.hostNetwork).toBeUndefined();
      expect(ready.status.podIPs).toEqual(own.status.podIPs.map((p: any) => p.ip));
    });

  test('a harmless-looking Pod with another image, made under a suspended Sandbox\'s name with its hash label, is not adopted on resume', async () => {
    const name = 'suspended-victim';
    const sandboxUrl = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/${name}`;
    await sbx.createAndWaitReady(sandboxManifest(name));
    await api.call('PATCH', sandboxUrl, { spec: { operatingMode: 'Suspended' } });
    await waitFor(async () => (await sbx.podsOf(name)).length === 0 && (await api.request('GET', `${podsUrl()}/${name}`)).status === 404, 30_000, 'the Pod to go');
    // Keeps every hardening rule, carries the label, and is the Sandbox's Pod in all but its image.
    const impostor = await api.call('POST', podsUrl(), {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { [HASH_LABEL]: NameHash.of(name) } },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'main', image: 'attacker.example/agent:latest', ports: [{ name: 'http', containerPort: 8888 }] }] },
    });
    await api.call('PATCH', sandboxUrl, { spec: { operatingMode: 'Running' } });
    const why = 'it is not the Pod this Sandbox\'s spec describes (spec.containers[0].image (container "main") differs)';
    const sb = await sbx.waitFor(name, refusedWith(why), `Ready=False/ReconcilerError: ${why}`);
    expect(sb.status.podIPs).toBeUndefined();
    await waitFor(async () => (await sbx.events(name)).some((e) => e.reason === 'PodAdoptionRefused' && e.type === 'Warning' && e.note.includes(why)),
      30_000, 'a PodAdoptionRefused Warning naming the image');
    const left = await api.call('GET', `${podsUrl()}/${name}`);
    expect(left.metadata.uid).toBe(impostor.metadata.uid);
    expect(left.metadata.ownerReferences).toBeUndefined();

    // Deleting it lets the Sandbox make its own Pod, from its own spec.
    await api.call('DELETE', `${podsUrl()}/${name}`, { gracePeriodSeconds: 0 });
    await sbx.waitFor(name, isReady, 'Ready on a Pod of its own');
    const [own] = await sbx.podsOf(name);
    expect(own.metadata.uid).not.toBe(impostor.metadata.uid);
    expect(own.spec.containers[0].image).toBe('busybox');
  });

  test('a Pod of ours orphaned by deleting its Sandbox with propagationPolicy Orphan is adopted by the Sandbox made again under the name', async () => {
    await sbx.createAndWaitReady(sandboxManifest('orphan'));
    const [original] = await sbx.podsOf('orphan');
    await api.call('DELETE', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/orphan`, { propagationPolicy: 'Orphan' });
    await waitFor(async () => (await sbx.get('orphan')) === undefined, 30_000, 'the Sandbox to be deleted');
    await waitFor(async () => (await api.call('GET', `${podsUrl()}/orphan`)).metadata.ownerReferences === undefined, 30_000, 'the Pod to lose its ownerReference');

    await sbx.createAndWaitReady(sandboxManifest('orphan'));
    const again = await sbx.get('orphan');
    const pods = await sbx.podsOf('orphan');
    expect(pods.map((p) => p.metadata.uid)).toEqual([original.metadata.uid]);
    expect(pods[0].metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Sandbox', uid: again.metadata.uid, controller: true })]);
    expect((await sbx.events('orphan')).filter((e) => e.reason === 'PodAdoptionRefused')).toEqual([]);
  });
});

describe('crash safety', () => {
  const BURST = 30;
  const names = Array.from({ length: BURST }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
  const withService = (i: number) => i % 2 === 0;
  const withVolume = (i: number) => i % 5 === 0;

  test(`SIGKILL in the middle of a burst of ${BURST} Sandboxes: a restart converges, nothing lost or duplicated`, async () => {
    const vct = { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
    const started = Date.now();
    await Promise.all(names.map((name, i) => sbx.create(sandboxManifest(name, {
      ...(withService(i) ? { service: true } : {}),
      ...(withVolume(i) ? { volumeClaimTemplates: [vct] } : {}),
    }, { labels: { burst: 'yes' } }))));
    // Kill once the operator is visibly mid-way: some Pods made, most Sandboxes not Ready yet.
    await waitFor(async () => (await sbx.podsByLabel('burst=yes')).length >= 3, 60_000, 'the first burst Pods');
    await op.kill();
    const readyAtKill = (await sbx.list()).filter((s) => names.includes(s.metadata.name) && isReady(s)).length;
    // eslint-disable-next-line no-console
    console.log(`SIGKILL after ${Date.now() - started} ms with ${(await sbx.podsByLabel('burst=yes')).length} burst Pods and ${readyAtKill}/${BURST} Ready`);

    op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig });
    await waitFor(async () => {
      const all = await sbx.list();
      return names.every((n) => all.some((s) => s.metadata.name === n && isReady(s)));
    }, 150_000, `all ${BURST} burst Sandboxes to be Ready`);
    // eslint-disable-next-line no-console
    console.log(`burst of ${BURST} (with a SIGKILL and restart) all Ready after ${Date.now() - started} ms`);

    const sandboxes = new Map((await sbx.list()).map((s) => [s.metadata.name, s]));
    const pods = await sbx.podsByLabel('burst=yes');
    expect(pods.map((p) => p.metadata.name).sort()).toEqual(names);
    for (const pod of pods) {
      const owner = sandboxes.get(pod.metadata.name)!;
      expect(pod.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: owner.metadata.uid, controller: true })]);
    }
    const services = (await sbx.servicesByLabel(HASH_LABEL)).map((s) => s.metadata.name).filter((n) => n.startsWith('burst-')).sort();
    expect(services).toEqual(names.filter((_, i) => withService(i)));
    const pvcs = (await sbx.pvcsByLabel(HASH_LABEL)).map((p) => p.metadata.name).filter((n) => n.startsWith('data-burst-')).sort();
    expect(pvcs).toEqual(names.filter((_, i) => withVolume(i)).map((n) => `data-${n}`));
    // Picking up half-done work (Pods that exist, annotations not yet written) is routine, not an error.
    expect(op.errors()).toEqual([]);
  });

  test('a restarted operator that finds everything converged writes nothing', async () => {
    const snapshot = async () => {
      const rv = (objs: any[]) => Object.fromEntries(objs.map((o) => [o.metadata.name, o.metadata.resourceVersion]));
      return { sandboxes: rv(await sbx.list()), pods: rv(await sbx.podsByLabel(HASH_LABEL)), services: rv(await sbx.servicesByLabel(HASH_LABEL)) };
    };
    // The baseline waits for in-flight work of the previous tests: every Sandbox change so far seen
    // (the barrier) and reconciled.
    await sbx.barrier();
    await op.waitIdle(['sandbox']);
    const before = await snapshot();
    expect(await op.stop()).toBe(0);
    op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig });
    // Its informers listed every object before the controllers started, so every Sandbox was queued
    // by then; once the controller is idle, each has been reconciled, and any write it made is visible.
    const settled = await op.waitIdle(['sandbox']);
    expect(settled.sum('controller_runtime_reconcile_total', { controller: 'sandbox' })).toBeGreaterThanOrEqual(Object.keys(before.sandboxes).length);
    expect(await snapshot()).toEqual(before);
  });
});
