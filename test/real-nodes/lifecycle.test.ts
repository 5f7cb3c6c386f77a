/**
 * A sandbox's life on a real node: suspend deletes the Pod and keeps the PVC (local-path), resume
 * brings a new Pod with the file written before; and the operator Pod SIGKILLed mid-burst (a real
 * container restart by the kubelet) leaves every claim in flight Ready, each bound to its own
 * Sandbox.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import { TestNamespace, eventually, execute, openNamespace, pods, pythonPool } from './e2e';
import { SYSTEM_NAMESPACE } from '../../tools/demo/real-system';

let t: TestNamespace;

beforeAll(async () => {
  t = await openNamespace('lifecycle', (ns) => [
    ...pythonPool(ns, 'keep', {
      runAsUser: 1000,
      extra: { volumeClaimTemplates: [{ name: 'workspace', storage: '64Mi' }], runtime: { workspaceVolume: 'workspace' } },
    }),
    ...pythonPool(ns, 'burst', { runAsUser: 1000, replicas: 3 }),
  ]);
});

afterAll(async () => {
  await t?.close();
});

const claim = (name: string, pool: string) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', metadata: { name, namespace: t.ns }, spec: { warmPoolRef: { name: pool } },
});
const isReady = (o: any) => o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

async function readyClaimSandbox(name: string, timeoutMs = 180_000): Promise<string> {
  return eventually(`claim ${name} Ready`, async () => {
    const c = await t.k.tryGetJson(['sandboxclaim', name, '-n', t.ns]);
    return isReady(c) ? c.status?.sandbox?.name as string | undefined : undefined;
  }, timeoutMs);
}

async function podReady(name: string): Promise<boolean | undefined> {
  const pod = await t.k.tryGetJson(['pod', name, '-n', t.ns]);
  return isReady(pod) ? true : undefined;
}

test('suspend: the Pod goes and the PVC stays; resume: a new Pod with the file written before', async () => {
  await t.k.applyServerSide([claim('keeper', 'keep')], 'real-nodes-test');
  const sandbox = await readyClaimSandbox('keeper');
  const before = await t.k.getJson(['pod', sandbox, '-n', t.ns]);
  const pvcName = before.spec.volumes.find((v: any) => v.name === 'workspace').persistentVolumeClaim.claimName;
  const w = await execute(t.router.url, t.token, t.ns, sandbox, 'echo "written before suspend" > note.txt && pwd');
  expect(w).toMatchObject({ exit_code: 0, stdout: '/workspace\n' });

  await t.k.kubectl(['patch', 'sandbox', sandbox, '-n', t.ns, '--type=merge', '-p', '{"spec":{"operatingMode":"Suspended"}}']);
  await eventually('the Pod deleted', async () => ((await t.k.tryGetJson(['pod', sandbox, '-n', t.ns])) ? undefined : true), 120_000);
  const pvc = await t.k.getJson(['pvc', pvcName, '-n', t.ns]);
  expect(pvc.status.phase).toBe('Bound');
  expect(pvc.metadata.deletionTimestamp).toBeUndefined();

  await t.k.kubectl(['patch', 'sandbox', sandbox, '-n', t.ns, '--type=merge', '-p', '{"spec":{"operatingMode":"Running"}}']);
  await eventually('the resumed Pod Ready', () => podReady(sandbox), 180_000);
  const after = await t.k.getJson(['pod', sandbox, '-n', t.ns]);
  expect(after.metadata.uid).not.toBe(before.metadata.uid);
  const r = await execute(t.router.url, t.token, t.ns, sandbox, 'cat note.txt');
  expect(r).toMatchObject({ exit_code: 0, stdout: 'written before suspend\n' });
});

test('the operator container SIGKILLed during a burst of claims: the kubelet restarts it, every claim ends Ready on its own Sandbox', async () => {
  const operatorPod = async () => (await pods(t.k, SYSTEM_NAMESPACE)).find((p) => p.metadata.name.startsWith('agent-sandbox-controller-'));
  const pod = await operatorPod();
  const restartsBefore = pod.status.containerStatuses[0].restartCount;
  // The operator's main process, found by the container ID the kubelet reports (its cgroup names it).
  const containerId = String(pod.status.containerStatuses[0].containerID).replace(/^containerd:\/\//, '');
  const names = Array.from({ length: 6 }, (_, i) => `burst-${i}`);
  await t.k.applyServerSide(names.map((n) => claim(n, 'burst')), 'real-nodes-test');
  const pid = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).find((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cgroup`, 'utf8').includes(containerId) && fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('controller');
    } catch {
      return false;
    }
  });
  expect(pid).toBeDefined();
  // The kill lands while claims are in flight: not all of them are Ready yet.
  const readyBefore = (await t.k.getJson<{ items: any[] }>(['sandboxclaims', '-n', t.ns])).items
    .filter((c) => names.includes(c.metadata.name) && isReady(c)).length;
  execFileSync('kill', ['-KILL', pid!]);
  expect(readyBefore).toBeLessThan(names.length);
  await eventually('the operator container restarted and Ready', async () => {
    const p = await operatorPod();
    const s = p?.status?.containerStatuses?.[0];
    return s && s.restartCount > restartsBefore && s.ready ? true : undefined;
  }, 180_000);
  const sandboxes = await Promise.all(names.map((n) => readyClaimSandbox(n, 240_000)));
  expect(new Set(sandboxes).size).toBe(names.length);
  for (const [i, s] of sandboxes.entries()) {
    const owner = (await t.k.getJson(['sandbox', s, '-n', t.ns])).metadata.ownerReferences?.find((r: any) => r.controller);
    expect(owner).toMatchObject({ kind: 'SandboxClaim', name: names[i] });
  }
});
