import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NOW, condition, foreignRef, pod, sandbox, service, vct } from './fixtures';
import { KEY, created, setup, statusBody } from './harness';
import { ClaimPressure, Deferral, PRESSURE_LINGER_MS } from '../../../src/controllers/claims-first';
import { SandboxReconcileError, priorityOf } from '../../../src/controllers/sandbox/reconcile';
import { RACE_RETRY_MS } from '../../../src/runtime/controller';
import { apiError } from '../../fake-kube';
import { FakeClock } from '../../runtime/fake-clock';

describe('SandboxReconciler', () => {
  test('a new Sandbox: Pod created under our field manager and the pod-name annotation; status waits for the Pod event', async () => {
    const { client, reconciler } = setup(sandbox());
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox']);
    expect(client.calls[0].options).toEqual({ fieldManager: 'sandbox-controller', priority: 'normal' });
    expect(client.calls[1].body).toEqual({ metadata: { annotations: { 'agents.x-k8s.io/pod-name': 'my-sandbox' } } });
  });

  test('the pass the new Pod wakes writes the status, as one merge patch on /status', async () => {
    const { client, reconciler } = setup(created, { pods: [pod({ phase: 'Pending', ready: false, ips: [] })] });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
    expect(client.calls[0].options).toMatchObject({ patchType: 'merge', subresource: 'status', fieldManager: 'sandbox-controller' });
    expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ reason: 'DependenciesNotReady', message: 'Pod exists with phase: Pending' });
  });

  test('a failed Pod create still writes the status (nothing waits on an event that will not come)', async () => {
    const { client, reconciler } = setup(sandbox());
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(503, 'ServiceUnavailable', 'try later') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow('try later');
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox/status']);
  });

  test('a Pod create refused because the namespace is being deleted ends the pass: no error, no status write', async () => {
    const { client, reconciler } = setup(sandbox());
    const terminating = apiError(403, 'Forbidden', 'namespace ns is being terminated');
    Object.assign(terminating, { body: { details: { causes: [{ reason: 'NamespaceTerminating' }] } } });
    client.failOnce({ verb: 'create', resource: 'pods', error: terminating });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['create pods my-sandbox']);
  });

  test('PVCs are written before the Pod, Pod and Service together', async () => {
    const { client, reconciler } = setup(sandbox({ spec: { service: true, volumeClaimTemplates: [vct('data')] } }));
    await reconciler.reconcile(KEY);
    expect(client.writes.slice(0, 3)).toEqual(['create persistentvolumeclaims data-my-sandbox', 'create pods my-sandbox', 'create services my-sandbox']);
  });

  test('converged: not a single write', async () => {
    const first = setup(created, { pods: [pod()] });
    await first.reconciler.reconcile(KEY);
    const status = statusBody(first.client);
    const { client, reconciler } = setup({ ...created, status }, { pods: [pod()] });
    await reconciler.reconcile(KEY);
    expect(client.calls).toEqual([]);
  });

  test('while claims wait, an adopted Sandbox\'s Pod relabel and observedGeneration rewrite wait too, then go when they are served', async () => {
    const first = setup(created, { pods: [pod()] });
    await first.reconciler.reconcile(KEY);
    const status = statusBody(first.client);
    // The adoption: a spec change (the claim's Pod labels) bumps the generation.
    const adopted = sandbox({
      generation: 2,
      annotations: created.metadata.annotations,
      spec: {
        podTemplate: { metadata: { labels: { team: 'a' } }, spec: { containers: [{ name: 'main', image: 'busybox' }] } },
      },
    });
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock);
    const woken: string[] = [];
    const deferral = new Deferral(pressure, (key) => woken.push(key), 3_000);
    const { client, reconciler } = setup({ ...adopted, status }, { pods: [pod()] }, { deferral });
    pressure.waitingOn('team-a/other-claim', 'team-a/pool');
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 3_000 });
    expect(client.writes).toEqual([]);
    pressure.settled('team-a/other-claim');
    clock.advance(PRESSURE_LINGER_MS);
    expect(woken).toEqual([KEY]);
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch pods my-sandbox', 'patch sandboxes my-sandbox/status']);
    expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 2 });
    // Bookkeeping serves no waiting claim: both go in the background lane.
    expect(client.calls.map((c) => (c.options as any)?.priority)).toEqual(['background', 'background']);
  });

  test('while claims wait, a Pod to create or a readiness change never waits', async () => {
    const pressure = new ClaimPressure(new FakeClock());
    pressure.waitingOn('team-a/other-claim', 'team-a/pool');
    const deferral = new Deferral(pressure, () => undefined, 3_000);
    const fresh = setup(sandbox(), {}, { deferral });
    await fresh.reconciler.reconcile(KEY);
    expect(fresh.client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox']);
    const ready = setup(created, { pods: [pod()] }, { deferral });
    await ready.reconciler.reconcile(KEY);
    expect(ready.client.writes).toEqual(['patch sandboxes my-sandbox/status']);
    expect((ready.client.calls[0].options as any).priority).toBe('normal');
  });

  test('gone or deleting Sandboxes are left to garbage collection', async () => {
    for (const sb of [undefined, { ...created, metadata: { ...created.metadata, deletionTimestamp: '2026-09-01T11:00:00Z' } }]) {
      const { client, reconciler } = setup(sb);
      await reconciler.reconcile(KEY);
      expect(client.calls).toEqual([]);
    }
  });

  test('AlreadyExists on the Pod, and it is ours (cache behind): no second create, status from the live Pod', async () => {
    const { client, reconciler } = setup(created);
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(409, 'AlreadyExists') });
    client.live.set('pods/my-sandbox', pod());
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox/status']);
    expect(condition(statusBody(client).conditions, 'Ready')?.status).toBe('True');
  });

  test('AlreadyExists on the Pod does not create the Service made in the same stage twice', async () => {
    const { client, reconciler } = setup(sandbox({ annotations: { [SandboxAnnotations.POD_NAME]: 'my-sandbox' }, spec: { service: true } }));
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(409, 'AlreadyExists') });
    client.live.set('pods/my-sandbox', pod());
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create pods my-sandbox', 'create services my-sandbox', 'patch sandboxes my-sandbox/status']);
  });

  test('AlreadyExists on a Pod labelled only adoptable=true: refused in the same pass, with a Warning event and the error for the backoff', async () => {
    const { client, reconciler } = setup(created);
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(409, 'AlreadyExists') });
    client.live.set('pods/my-sandbox', pod({ owner: null, labels: { [SandboxLabels.ADOPTABLE]: 'true' } }));
    await expect(reconciler.reconcile(KEY)).rejects.toThrow(SandboxReconcileError);
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox/status']);
    expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ reason: 'ReconcilerError', message: expect.stringContaining('does not carry this Sandbox\'s label') });
    expect(client.calls.filter((c) => c.verb === 'event').map((c) => c.body)).toEqual([
      { type: 'Warning', reason: 'PodAdoptionRefused', action: 'Reconciling', note: expect.stringContaining('Pod "my-sandbox" exists and no controller owns it') },
    ]);
    expect(client.live.get('pods/my-sandbox')?.metadata.ownerReferences).toBeUndefined();
  });

  test('AlreadyExists on a label-less Pod that lost its ownerReference but kept our hash: adopted in the same pass', async () => {
    const { client, reconciler } = setup(created);
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(409, 'AlreadyExists') });
    client.live.set('pods/my-sandbox', pod({ owner: null }));
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch pods my-sandbox', 'patch sandboxes my-sandbox/status']);
  });

  describe('an unowned Pod with our hash in the cache, which keeps no Pod spec', () => {
    const slim = (p: ReturnType<typeof pod>) => ({ ...p, spec: { nodeName: 'kwok-node-0' } }) as ReturnType<typeof pod>;

    test('is read live first, and adopted when its spec keeps the hardening rules', async () => {
      const orphan = pod({ owner: null });
      const { client, reconciler } = setup(created, { pods: [slim(orphan)] });
      client.live.set('pods/my-sandbox', orphan);
      await reconciler.reconcile(KEY);
      expect(client.calls.filter((c) => c.verb === 'get').map((c) => `${c.resource} ${c.name}`)).toEqual(['pods my-sandbox']);
      expect(client.writes).toEqual(['patch pods my-sandbox', 'patch sandboxes my-sandbox/status']);
      expect(client.live.get('pods/my-sandbox')?.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Sandbox', uid: 'uid-sandbox-1', controller: true })]);
    });

    test('is refused when the live spec is privileged on the host network: no adoption, ReconcilerError naming the fields, one Warning', async () => {
      const orphan = pod({ owner: null, ips: ['10.0.0.5'] });
      const { client, reconciler } = setup(created, { pods: [slim(orphan)] });
      client.live.set('pods/my-sandbox', { ...orphan, spec: { hostNetwork: true, nodeName: 'kwok-node-0', containers: [{ name: 'main', securityContext: { privileged: true } }] } });
      await expect(reconciler.reconcile(KEY)).rejects.toThrow(SandboxReconcileError);
      expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
      const status = statusBody(client);
      expect(condition(status.conditions, 'Ready')).toMatchObject({
        status: 'False', reason: 'ReconcilerError', message: expect.stringContaining('spec.hostNetwork is true; spec.containers[0].securityContext.privileged (container "main") is true'),
      });
      expect(status.podIPs).toBeUndefined();
      expect(client.calls.filter((c) => c.verb === 'event').map((c) => c.body.reason)).toEqual(['PodAdoptionRefused']);
      expect(client.live.get('pods/my-sandbox')?.metadata.ownerReferences).toBeUndefined();
    });

    test('gone by the time it is read: the Sandbox creates its own', async () => {
      const { client, reconciler } = setup(created, { pods: [slim(pod({ owner: null }))] });
      client.live.delete('pods/my-sandbox');
      await reconciler.reconcile(KEY);
      expect(client.writes).toEqual(['create pods my-sandbox']);
    });
  });

  test('AlreadyExists on a foreign Pod: ReconcilerError in status, then an error for the backoff', async () => {
    const { client, reconciler } = setup(created);
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(409, 'AlreadyExists') });
    client.live.set('pods/my-sandbox', pod({ owner: foreignRef('Job', 'batch') }));
    await expect(reconciler.reconcile(KEY)).rejects.toThrow(SandboxReconcileError);
    expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ reason: 'ReconcilerError', message: expect.stringContaining('Job "batch"') });
  });

  test('Conflict on an adoption (stale resourceVersion): a quiet requeue, no status write', async () => {
    const { client, reconciler } = setup(created, { pods: [pod({ owner: null })] });
    client.failOnce({ verb: 'patch', resource: 'pods', error: apiError(409, 'Conflict') });
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: RACE_RETRY_MS });
    expect(client.writes).toEqual(['patch pods my-sandbox']);
  });

  test('NotFound on a delete: already done', async () => {
    const sb = sandbox({ spec: { operatingMode: 'Suspended' }, annotations: { [SandboxAnnotations.POD_NAME]: 'my-sandbox' } });
    const { client, reconciler } = setup(sb, { pods: [pod()] });
    client.failOnce({ verb: 'delete', resource: 'pods', error: apiError(404, 'NotFound') });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['delete pods my-sandbox', 'patch sandboxes my-sandbox/status']);
    expect(client.calls[0].options).toEqual({ uid: 'uid-pod-my-sandbox' });
  });

  test('the API server rejects the Pod (422): InvalidConfiguration written once, no error, no retry', async () => {
    const { client, reconciler } = setup(created);
    client.failOnce({ verb: 'create', resource: 'pods', error: apiError(422, 'Invalid', 'Pod "my-sandbox" is invalid: spec.containers[0].name: Invalid value: "Bad"') });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    const status = statusBody(client);
    expect(condition(status.conditions, 'Ready')).toMatchObject({ reason: 'InvalidConfiguration', message: expect.stringContaining('spec.containers[0].name') });

    const again = setup({ ...created, status });
    await again.reconciler.reconcile(KEY);
    expect(again.client.calls).toEqual([]);
  });

  test('any other API failure: ReconcilerError in status and an error for the backoff', async () => {
    const { client, reconciler } = setup(sandbox({ spec: { service: true } }));
    client.failOnce({ verb: 'create', resource: 'services', error: apiError(500, 'InternalError', 'etcd timeout') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow('etcd timeout');
    expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ reason: 'ReconcilerError', message: 'Error seen: Service "my-sandbox": etcd timeout' });
  });

  test('a Pod step failure while suspended shows Suspended=Unknown/PodStateUnknown', async () => {
    const sb = sandbox({ spec: { operatingMode: 'Suspended' } });
    const { client, reconciler } = setup(sb, { pods: [pod()] });
    client.failOnce({ verb: 'delete', resource: 'pods', error: apiError(403, 'Forbidden', 'no') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow();
    expect(condition(statusBody(client).conditions, 'Suspended')).toMatchObject({ status: 'Unknown', reason: 'PodStateUnknown' });
  });

  test('MultiplePods: one Warning event, no error (the next Pod event re-triggers)', async () => {
    const { client, reconciler } = setup(created, { pods: [pod(), pod({ name: 'x', uid: 'uid-x' })] });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.calls.filter((c) => c.verb === 'event').map((c) => c.body)).toEqual([
      { type: 'Warning', reason: 'MultiplePods', action: 'Reconciling', note: expect.stringContaining('2 Pods') },
    ]);
  });

  test('reserved podTemplate keys: dropped from the Pod, and one Warning event naming them when the Pod is created', async () => {
    const sb = sandbox();
    sb.spec.podTemplate.metadata = {
      labels: { app: 'mine', [SandboxLabels.SANDBOX_NAME_HASH]: 'forged' },
      annotations: { note: 'kept', [SandboxAnnotations.POD_NAME]: 'other' },
    };
    const { client, reconciler } = setup(sb);
    await reconciler.reconcile(KEY);
    const podBody = client.calls.find((c) => c.verb === 'create')!.body as any;
    expect(podBody.metadata.labels).toMatchObject({ app: 'mine', [SandboxLabels.SANDBOX_NAME_HASH]: expect.not.stringMatching('forged') });
    expect(podBody.metadata.annotations).toMatchObject({ note: 'kept' });
    expect(podBody.metadata.annotations[SandboxAnnotations.POD_NAME]).toBeUndefined();
    expect(client.calls.filter((c) => c.verb === 'event').map((c) => c.body)).toEqual([{
      type: 'Warning',
      reason: 'ReservedMetadataDropped',
      action: 'CreatingPod',
      note: expect.stringContaining(`annotation ${SandboxAnnotations.POD_NAME}, label ${SandboxLabels.SANDBOX_NAME_HASH}`),
    }]);
    // The next pass (Pod exists) says nothing more.
    const again = setup({ ...created, spec: sb.spec }, { pods: [pod()] });
    await again.reconciler.reconcile(KEY);
    expect(again.client.calls.filter((c) => c.verb === 'event')).toEqual([]);
  });

  test('a warm member\'s own pool labels mirrored in its podTemplate are no Warning; a different value still is', async () => {
    const poolLabels = { [SandboxLabels.WARM_POOL_SANDBOX]: 'a1b2c3', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'd4e5f6' };
    const member = sandbox({ labels: poolLabels });
    member.spec.podTemplate.metadata = { labels: { app: 'mine', ...poolLabels } };
    const quiet = setup(member);
    await quiet.reconciler.reconcile(KEY);
    expect(quiet.client.calls.filter((c) => c.verb === 'event')).toEqual([]);

    const forged = sandbox({ labels: poolLabels });
    forged.spec.podTemplate.metadata = { labels: { ...poolLabels, [SandboxLabels.WARM_POOL_SANDBOX]: 'other' } };
    const loud = setup(forged);
    await loud.reconciler.reconcile(KEY);
    expect(loud.client.calls.filter((c) => c.verb === 'event').map((c) => c.body.note)).toEqual([expect.stringContaining(`label ${SandboxLabels.WARM_POOL_SANDBOX}`)]);
  });

  test('the shutdownTime timer comes back as requeueAfterMs', async () => {
    const { reconciler } = setup(sandbox({ spec: { shutdownTime: new Date(NOW + 5_000).toISOString() } }));
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 5_000 });
  });

  test('expired with Delete: the Sandbox is deleted with a uid precondition, nothing else', async () => {
    const sb = sandbox({ spec: { shutdownTime: new Date(NOW - 1).toISOString(), shutdownPolicy: 'Delete' } });
    const { client, reconciler } = setup(sb, { pods: [pod()], services: [service()] });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['delete sandboxes my-sandbox']);
    expect(client.calls[0].options).toEqual({ uid: 'uid-sandbox-1', propagationPolicy: 'Background' });
  });

  test('status patch nulls what went away and leaves unchanged fields out', async () => {
    const sb = sandbox({
      annotations: { [SandboxAnnotations.POD_NAME]: 'my-sandbox' },
      spec: { operatingMode: 'Suspended' },
      status: { podIPs: ['127.64.0.7'], nodeName: 'kwok-node-0', selector: 'agents.x-k8s.io/sandbox-name-hash=374de8f5' },
    });
    const { client, reconciler } = setup(sb);
    await reconciler.reconcile(KEY);
    const body = statusBody(client);
    expect(body).toMatchObject({ podIPs: null, nodeName: null });
    expect('selector' in body).toBe(false);
  });

  test('the Sandbox vanishing mid-pass ends it quietly', async () => {
    const { client, reconciler } = setup(sandbox());
    client.failOnce({ verb: 'patch', resource: 'sandboxes', error: apiError(404, 'NotFound') });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox']);
  });


  describe('progress status window', () => {
    const pending = () => pod({ phase: 'Pending', ready: false, ips: [], scheduled: null });

    test('a progress-only status waits for the window, then is written once', async () => {
      let now = NOW;
      const { client, stores, reconciler } = setup(created, { pods: [pending()] }, { progressStatusWindowMs: 1000, now: () => now });
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 1000 });
      now += 400;
      stores.pods.put(pod({ phase: 'Pending', ready: false, ips: [] }));
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 600 });
      expect(client.calls).toEqual([]);
      now += 600;
      await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
      expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
      expect(condition(statusBody(client).conditions, 'PodScheduled')).toMatchObject({ status: 'True' });
    });

    test('a Pod Ready within the window: one status write, at once', async () => {
      let now = NOW;
      const { client, stores, reconciler } = setup(created, { pods: [pending()] }, { progressStatusWindowMs: 1000, now: () => now });
      await reconciler.reconcile(KEY);
      now += 50;
      stores.pods.put(pod());
      await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
      expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
      expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ status: 'True', reason: 'DependenciesReady' });
    });

    test('losing readiness is never held', async () => {
      const ready = setup(created, { pods: [pod()] });
      await ready.reconciler.reconcile(KEY);
      const wasReady = { ...created, status: statusBody(ready.client) };
      const { client, reconciler } = setup(wasReady, { pods: [pod({ ready: false })] }, { progressStatusWindowMs: 1000 });
      await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
      expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'DependenciesNotReady' });
    });

    test('an unschedulable Pod is written at once: the pool acts on it', async () => {
      const unschedulable = pod({ phase: 'Pending', ready: false, ips: [], scheduled: { status: 'False', reason: 'Unschedulable', message: '0/3 nodes' } });
      const { client, reconciler } = setup(created, { pods: [unschedulable] }, { progressStatusWindowMs: 1000 });
      await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
      expect(condition(statusBody(client).conditions, 'PodScheduled')).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    });

    describe('an unclaimed warm pool member waits the longer window', () => {
      const poolRef = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxWarmPool', name: 'pool', uid: 'pool-uid', controller: true };
      const claimRef = { ...poolRef, kind: 'SandboxClaim', name: 'claim', uid: 'claim-uid' };
      const windows = { progressStatusWindowMs: 1000, warmMemberProgressWindowMs: 10_000 };

      test.each([
        ['a pool member', poolRef, 10_000],
        ['a claimed Sandbox', claimRef, 1000],
      ])('%s', async (_name, ref, expectedMs) => {
        let now = NOW;
        const owned = { ...created, metadata: { ...created.metadata, ownerReferences: [ref] } };
        const { client, reconciler } = setup(owned, { pods: [pending()] }, { ...windows, now: () => now });
        await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: expectedMs });
        now += expectedMs;
        await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
        expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
        // Ready inside the window is one write, for both.
        const second = setup(owned, { pods: [pending()] }, { ...windows, now: () => now });
        await second.reconciler.reconcile(KEY);
        second.stores.pods.put(pod());
        await second.reconciler.reconcile(KEY);
        expect(second.client.writes).toEqual(['patch sandboxes my-sandbox/status']);
      });

      test('0 keeps the base window for members too', async () => {
        const owned = { ...created, metadata: { ...created.metadata, ownerReferences: [poolRef] } };
        const { reconciler } = setup(owned, { pods: [pending()] }, { progressStatusWindowMs: 1000, warmMemberProgressWindowMs: 0 });
        await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 1000 });
      });
    });

    test('errors are never held', async () => {
      const { client, reconciler } = setup(created, { pods: [pod({ owner: null, labels: {} })] }, { progressStatusWindowMs: 1000 });
      await expect(reconciler.reconcile(KEY)).rejects.toThrow(SandboxReconcileError);
      expect(condition(statusBody(client).conditions, 'Ready')).toMatchObject({ reason: 'ReconcilerError' });
    });
  });

  test('a second pass before the cache shows our status write does not write it again', async () => {
    const { client, stores, reconciler } = setup(created, { pods: [pod()] });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
    // A Pod event wakes the Sandbox again; its cached status is still the old one.
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
    // Once the cache moves on (another writer, a new resourceVersion), it is the truth again.
    stores.sandboxes.put({ ...created, metadata: { ...created.metadata, resourceVersion: '99' } });
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes my-sandbox/status', 'patch sandboxes my-sandbox/status']);
  });

  test('a second pass before the cache shows our pod-name annotation does not patch it again', async () => {
    const { client, stores, reconciler } = setup(sandbox());
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['create pods my-sandbox', 'patch sandboxes my-sandbox']);
    stores.pods.put(pod());
    client.calls.length = 0;
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
  });

  test('write priority: a claim waiting on a cold Sandbox first, warm-pool refill last', () => {
    const owned = (kind: string, ready: boolean) => sandbox({
      ownerReferences: [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind, name: 'o', uid: 'o-uid', controller: true }],
      ...(ready ? { conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady', message: '', lastTransitionTime: '2026-09-01T12:00:00Z' }] } : {}),
    } as never);
    expect(priorityOf(owned('SandboxClaim', false))).toBe('urgent');
    expect(priorityOf(owned('SandboxClaim', true))).toBe('normal');
    expect(priorityOf(owned('SandboxWarmPool', false))).toBe('background');
    expect(priorityOf(sandbox())).toBe('normal');
    // A member of a pool that claims wait on while it is short, not Ready yet, is what they wait for.
    const wanted = (pool: string) => pool === 'team-a/o';
    expect(priorityOf(owned('SandboxWarmPool', false), wanted)).toBe('normal');
    expect(priorityOf(owned('SandboxWarmPool', true), wanted)).toBe('background');
    expect(priorityOf(owned('SandboxWarmPool', false), () => false)).toBe('background');
  });
});
