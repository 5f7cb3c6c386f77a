/**
 * Smoke test of the operator's API client and informer against a REAL API server (the local
 * control plane): what the server makes of our patch content types, server-side apply, delete
 * preconditions, Events with MicroTime, watches and the informer. The unit tests
 * check the bytes we send; this checks the API server agrees. It is a script, not a jest test,
 * because the operator's tests are ESM and the cluster belongs to the integration setup:
 *
 *   npx ts-node --transpile-only tools/control-plane/cli.ts up
 *   npx esbuild operator/test/smoke/kube-client-smoke.ts --bundle --platform=node --format=esm \
 *     --outfile=/tmp/kube-client-smoke.mjs --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
 *   node /tmp/kube-client-smoke.mjs <kubeconfig>
 *
 * Exits 0 when every check passes; prints each check.
 */
import { SharedInformer } from '../../src/runtime/informer';
import { HttpKubeClient } from '../../src/runtime/kube-client';
import { fromKubeconfigFiles } from '../../src/runtime/kubeconfig';
import { ApiError, KubeObject, ResourceType } from '../../src/runtime/types';

const CONFIGMAPS: ResourceType = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const NAMESPACES: ResourceType = { group: '', version: 'v1', resource: 'namespaces', namespaced: false };
const EVENTS: ResourceType = { group: 'events.k8s.io', version: 'v1', resource: 'events', namespaced: true };

let failures = 0;
async function check(what: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
    process.stdout.write(`ok   ${what}\n`);
  } catch (err) {
    failures++;
    process.stdout.write(`FAIL ${what}: ${(err as Error).stack ?? err}\n`);
  }
}

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

async function rejects(p: Promise<unknown>, test: (e: ApiError) => boolean, what: string): Promise<void> {
  const err = await p.then(() => undefined, (e) => e);
  assert(err instanceof ApiError && test(err), `${what}: got ${err instanceof ApiError ? `${err.statusCode} ${err.reason}: ${err.message}` : String(err)}`);
}

const until = async (cond: () => boolean, ms: number, what: string) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function main(kubeconfig: string): Promise<void> {
  const connection = fromKubeconfigFiles([kubeconfig]);
  const client = new HttpKubeClient({ connection, eventSource: { controller: 'agent-sandbox-controller', instance: 'smoke' } });
  const ns = `client-smoke-${Math.random().toString(36).slice(2, 7)}`;
  await client.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const cm = (name: string, data: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { smoke: 'yes' } }, data });
  try {
    const informer = new SharedInformer<KubeObject>(client, CONFIGMAPS, { namespace: ns, labelSelector: 'smoke=yes' });
    const seen: string[] = [];
    informer.addHandlers({ onAdd: (o) => seen.push(`add ${o.metadata.name}`), onDelete: (o) => seen.push(`delete ${o.metadata.name}`) });
    informer.start();
    await informer.synced;

    await check('create, get, list with a label selector', async () => {
      const created = await client.create<KubeObject>(CONFIGMAPS, ns, cm('a', { k: 'v' }));
      assert(created.metadata.uid, 'no uid');
      assert((await client.get<KubeObject>(CONFIGMAPS, ns, 'a')).metadata.name === 'a', 'get');
      const list = await client.list(CONFIGMAPS, ns, { labelSelector: 'smoke=yes' });
      assert(list.items.length === 1 && list.metadata.resourceVersion, 'list');
    });
    await check('AlreadyExists and NotFound reasons', async () => {
      await rejects(client.create(CONFIGMAPS, ns, cm('a')), (e) => e.alreadyExists, 'create twice');
      await rejects(client.get(CONFIGMAPS, ns, 'missing'), (e) => e.notFound, 'get missing');
    });
    await check('update with a stale resourceVersion is a Conflict', async () => {
      const a = await client.get<KubeObject>(CONFIGMAPS, ns, 'a');
      await client.update(CONFIGMAPS, ns, { ...a, data: { k: 'v2' } });
      await rejects(client.update(CONFIGMAPS, ns, { ...a, data: { k: 'v3' } }), (e) => e.conflict, 'stale update');
    });
    await check('merge, JSON and strategic merge patches', async () => {
      await client.patch(CONFIGMAPS, ns, 'a', 'merge', { data: { m: '1' } });
      await client.patch(CONFIGMAPS, ns, 'a', 'json', [{ op: 'add', path: '/data/j', value: '2' }]);
      const out = await client.patch<KubeObject>(CONFIGMAPS, ns, 'a', 'strategic', { data: { s: '3' } });
      assert(JSON.stringify((out as any).data) === JSON.stringify({ j: '2', k: 'v2', m: '1', s: '3' }), `data ${JSON.stringify((out as any).data)}`);
    });
    await check('server-side apply: field manager recorded, conflicts without force, taken with force', async () => {
      await client.patch(CONFIGMAPS, ns, 'applied', 'apply', cm('applied', { x: '1' }), { fieldManager: 'smoke-one' });
      await rejects(client.patch(CONFIGMAPS, ns, 'applied', 'apply', cm('applied', { x: '2' }), { fieldManager: 'smoke-two' }), (e) => e.statusCode === 409, 'conflicting apply');
      const forced = await client.patch<KubeObject>(CONFIGMAPS, ns, 'applied', 'apply', cm('applied', { x: '2' }), { fieldManager: 'smoke-two', force: true });
      assert((forced as any).data.x === '2', 'forced apply');
      const managers = (forced.metadata.managedFields as any[]).map((m) => m.manager);
      assert(managers.includes('smoke-two'), `managers ${managers}`);
    });
    await check('delete preconditions: wrong uid and stale resourceVersion are refused; propagationPolicy accepted', async () => {
      const a = await client.get<KubeObject>(CONFIGMAPS, ns, 'a');
      await rejects(client.delete(CONFIGMAPS, ns, 'a', { uid: 'not-the-uid' }), (e) => e.conflict, 'wrong uid');
      await rejects(client.delete(CONFIGMAPS, ns, 'a', { resourceVersion: '1' }), (e) => e.conflict, 'stale rv');
      await client.delete(CONFIGMAPS, ns, 'a', { uid: a.metadata.uid, resourceVersion: a.metadata.resourceVersion, propagationPolicy: 'Foreground' });
      // Foreground: the object may linger with a deletionTimestamp until the garbage collector is done.
      const after = await client.get<KubeObject>(CONFIGMAPS, ns, 'a').catch((e) => e);
      assert((after instanceof ApiError && after.notFound) || after.metadata?.deletionTimestamp, 'not deleted');
    });
    await check('the informer saw the adds and the delete', async () => {
      await until(() => seen.includes('add a') && seen.includes('add applied') && seen.includes('delete a'), 5000, `informer events (${seen})`);
    });
    await check('event() writes an events.k8s.io/v1 Event the server accepts (MicroTime eventTime)', async () => {
      const regarding = await client.get<KubeObject>(CONFIGMAPS, ns, 'applied');
      client.event(regarding, 'Normal', 'SmokeTested', 'Test', 'the client wrote this Event');
      let found: any;
      const deadline = Date.now() + 5000;
      while (!found && Date.now() < deadline) {
        found = (await client.list(EVENTS, ns)).items.find((e: any) => e.reason === 'SmokeTested');
        if (!found) await new Promise((r) => setTimeout(r, 50));
      }
      assert(found, 'the Event never appeared');
      assert(/\.\d{6}Z$/.test(found.eventTime), `eventTime ${found.eventTime}`);
      assert(found.regarding.uid === regarding.metadata.uid, 'regarding');
    });
    await check('a watch from a list resourceVersion sees a create; abort ends it cleanly', async () => {
      const list = await client.list(CONFIGMAPS, ns);
      const events: string[] = [];
      const handle = client.watch(CONFIGMAPS, ns, { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 30 }, (e) => events.push(`${e.type} ${e.object.metadata.name}`));
      await client.create(CONFIGMAPS, ns, cm('watched'));
      await until(() => events.includes('ADDED watched'), 5000, `the watch event (${events})`);
      handle.abort();
      await handle.done;
    });
    informer.stop();
  } finally {
    await client.delete(NAMESPACES, undefined, ns).catch(() => undefined);
    client.close();
  }
}

main(process.argv[2] ?? process.env.KUBECONFIG ?? '').then(
  () => {
    process.stdout.write(failures === 0 ? 'all checks passed\n' : `${failures} check(s) failed\n`);
    process.exit(failures === 0 ? 0 : 1);
  },
  (err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
