/**
 * The Sandbox reconciler against the fake API server while its caches lag: its own creates and
 * deletes not shown yet, a crash between two writes, a lost event, a write that loses a race.
 */
import { NOW, NS, condition, pod, sandbox, vct } from './fixtures';
import { KEY, catchUp, created, pass, setup, statusBody } from './harness';
import { controllerRefOf } from '../../../src/model';
import { RACE_RETRY_MS } from '../../../src/runtime/controller';

describe('SandboxReconciler', () => {
  describe('creates the caches have not shown yet', () => {
    test('a Sandbox event before the child events: no second create, no AlreadyExists round trip', async () => {
      const { client, stores, reconciler } = setup(sandbox({ spec: { service: true } }));
      await reconciler.reconcile(KEY);
      expect(client.writes).toEqual(['create pods my-sandbox', 'create services my-sandbox', 'patch sandboxes my-sandbox']);
      // The annotation patch wakes the Sandbox again; the Pod and Service events have not arrived.
      stores.sandboxes.put(created);
      client.calls.length = 0;
      await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
      // Only the status, from the objects the creates returned.
      expect(client.writes).toEqual(['patch sandboxes my-sandbox/status']);
      expect(client.calls.filter((c) => c.verb === 'get')).toEqual([]);
    });

    test('an informer event for the child ends the memory: the cache is the truth again', async () => {
      const { client, stores, reconciler } = setup(sandbox());
      await reconciler.reconcile(KEY);
      stores.sandboxes.put(created);
      // The Pod was added and deleted again before any pass ran: it must be created once more.
      stores.pods.put(pod()).remove(NS, 'my-sandbox');
      client.live.delete('pods/my-sandbox');
      expect(await pass(client, reconciler)).toEqual(['create pods my-sandbox']);
    });

    test('the cache wins as soon as it has the object, whatever its UID', async () => {
      const { client, stores, reconciler } = setup(sandbox());
      await reconciler.reconcile(KEY);
      stores.sandboxes.put(created);
      stores.pods.put(pod({ phase: 'Pending', ready: false, ips: [] }));
      await pass(client, reconciler);
      expect(condition(statusBody(client).conditions, 'Ready')?.message).toBe('Pod exists with phase: Pending');
    });

    test('kinds do not mix: a pending Pod create does not stand in for a Service of the same name', async () => {
      const { client, stores, reconciler } = setup(sandbox());
      await reconciler.reconcile(KEY);
      // The Service is asked for (a spec edit, a new resourceVersion) before any child event arrived.
      const edited = sandbox({ annotations: created.metadata.annotations, spec: { service: true } });
      stores.sandboxes.put({ ...edited, metadata: { ...edited.metadata, resourceVersion: '500' } });
      expect(await pass(client, reconciler)).toEqual(['create services my-sandbox', 'patch sandboxes my-sandbox/status']);
    });

    test('a delete the cache has not shown is not made twice; the Pod counts as terminating meanwhile', async () => {
      const suspended = sandbox({ spec: { operatingMode: 'Suspended' }, annotations: created.metadata.annotations });
      const { client, stores, reconciler } = setup(suspended, { pods: [pod()] });
      expect(await pass(client, reconciler)).toEqual(['delete pods my-sandbox', 'patch sandboxes my-sandbox/status']);
      // Our status write wakes the Sandbox before the Pod's delete event arrives.
      stores.sandboxes.syncFrom(client, 'sandboxes');
      expect(await pass(client, reconciler)).toEqual([]);
      expect(stores.pods.get(NS, 'my-sandbox')).toBeDefined();
      // The delete event: the annotation goes, and the status says the Pod is gone.
      stores.pods.syncFrom(client, 'pods');
      expect(await pass(client, reconciler)).toEqual(['patch sandboxes my-sandbox', 'patch sandboxes my-sandbox/status']);
      expect(condition(statusBody(client).conditions, 'Suspended')).toMatchObject({ status: 'True', reason: 'PodTerminated' });
    });

    test('NotFound on a delete is remembered as done too', async () => {
      const suspended = sandbox({ spec: { operatingMode: 'Suspended' }, annotations: created.metadata.annotations });
      const { client, stores, reconciler } = setup(suspended, { pods: [pod()] });
      client.live.delete('pods/my-sandbox');
      await pass(client, reconciler);
      stores.sandboxes.syncFrom(client, 'sandboxes');
      expect(await pass(client, reconciler)).toEqual([]);
    });

    test('the memory expires: a lost watch event cannot hide a missing Pod for long', async () => {
      let now = NOW;
      const { client, stores, reconciler } = setup(sandbox(), {}, { now: () => now });
      await reconciler.reconcile(KEY);
      stores.sandboxes.put(created);
      // The Pod is gone and its delete event was lost.
      client.live.delete('pods/my-sandbox');
      now += 29_999;
      expect(await pass(client, reconciler)).not.toContain('create pods my-sandbox');
      now += 1;
      expect(await pass(client, reconciler)).toEqual(['create pods my-sandbox']);
    });
  });

  describe('against the API server', () => {
    test('from nothing to converged: each write once, then none', async () => {
      const { client, stores, reconciler } = setup(sandbox({ spec: { service: true, volumeClaimTemplates: [vct('data')] } }));
      expect(await pass(client, reconciler)).toEqual([
        'create persistentvolumeclaims data-my-sandbox', 'create pods my-sandbox', 'create services my-sandbox', 'patch sandboxes my-sandbox',
      ]);
      expect(await pass(client, reconciler)).toEqual(['patch sandboxes my-sandbox/status']);
      catchUp(client, stores);
      expect(await pass(client, reconciler)).toEqual([]);
    });

    test('a crash between the Pod create and the annotation: a fresh reconciler finishes without a second create', async () => {
      const first = setup(sandbox());
      first.client.failOnce({ verb: 'patch', resource: 'sandboxes', error: new Error('operator killed') });
      await expect(first.reconciler.reconcile(KEY)).rejects.toThrow('operator killed');
      const { client, stores, reconciler } = setup(undefined);
      client.live.clear();
      for (const [key, obj] of first.client.live) client.live.set(key, obj);
      catchUp(client, stores);
      expect(await pass(client, reconciler)).toEqual(['patch sandboxes my-sandbox', 'patch sandboxes my-sandbox/status']);
      catchUp(client, stores);
      expect(await pass(client, reconciler)).toEqual([]);
    });

    test('an adoption that loses to a concurrent change (409) is retried on the cache that shows it', async () => {
      const orphan = pod({ owner: null });
      const { client, stores, reconciler } = setup(created, { pods: [orphan] });
      // Someone labels the Pod after our cache saw it: the adoption's resourceVersion is stale.
      client.live.set('pods/my-sandbox', { ...orphan, metadata: { ...orphan.metadata, resourceVersion: '11', labels: { ...orphan.metadata.labels, team: 'a' } } });
      await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: RACE_RETRY_MS });
      expect(client.writes).toEqual(['patch pods my-sandbox']);
      stores.pods.syncFrom(client, 'pods');
      expect(await pass(client, reconciler)).toEqual(['patch pods my-sandbox', 'patch sandboxes my-sandbox/status']);
      expect(controllerRefOf(client.live.get('pods/my-sandbox')!)?.uid).toBe(created.metadata.uid);
    });
  });
});
