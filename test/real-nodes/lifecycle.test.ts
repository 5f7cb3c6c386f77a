/**
 * A sandbox's life on a real node, and what survives it (the table in docs/what-survives-what.md):
 * suspend deletes the Pod and keeps the workspace PVC (local-path), resume brings a new Pod with the
 * file written there before, while a file in /tmp (the container's root filesystem) and one in an
 * emptyDir workspace are gone (negative controls), and so does a Pod deleted under a running Sandbox; a container restart (the runtime SIGKILLed, the
 * same Pod) keeps the PVC's and the emptyDir's files and loses /tmp's; and the operator Pod SIGKILLed
 * mid-burst (a real container restart by the kubelet) leaves every claim in flight Ready, each bound
 * to its own Sandbox.
 */
import { execFileSync } from 'child_process';
import { TestNamespace, containerProcess, eventually, execute, openNamespace, pods, pythonPool } from './e2e';
import { SYSTEM_NAMESPACE } from '../../tools/shared/real-system';

let t: TestNamespace;

beforeAll(async () => {
  t = await openNamespace('lifecycle', (ns) => [
    ...pythonPool(ns, 'keep', {
      runAsUser: 1000,
      replicas: 2,
      extra: { volumeClaimTemplates: [{ name: 'workspace', storage: '64Mi' }], runtime: { workspaceVolume: 'workspace' } },
    }),
    // The runtime's default workspace: an emptyDir.
    ...pythonPool(ns, 'scratch', { runAsUser: 1000, replicas: 2 }),
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

/** Writes a file in the workspace and one in /tmp; both are there afterwards. */
async function writeBoth(sandbox: string): Promise<void> {
  const w = await execute(t.router.url, t.token, t.ns, sandbox,
    'echo "in the workspace" > note.txt && echo "in /tmp" > /tmp/outside.txt && pwd && cat note.txt /tmp/outside.txt');
  expect(w).toMatchObject({ exit_code: 0, stdout: '/workspace\nin the workspace\nin /tmp\n' });
}

/** What is left of {@link writeBoth}'s files: each one's content, or `absent`. */
async function readBoth(sandbox: string): Promise<{ workspace: string; tmp: string }> {
  const show = (f: string) => `if [ -e ${f} ]; then cat ${f}; else echo absent; fi`;
  const r = await execute(t.router.url, t.token, t.ns, sandbox, `${show('note.txt')}; ${show('/tmp/outside.txt')}`);
  expect(r.exit_code).toBe(0);
  const [workspace, tmp] = r.stdout.split('\n');
  return { workspace, tmp };
}

const setMode = (sandbox: string, mode: string) =>
  t.k.kubectl(['patch', 'sandbox', sandbox, '-n', t.ns, '--type=merge', '-p', JSON.stringify({ spec: { operatingMode: mode } })]);

/** The uids of the Pods of warm pool `pool` once it is full (members are named `<pool>-<suffix>`). */
async function warmPods(pool: string, replicas: number): Promise<Map<string, string>> {
  await t.k.wait([`sandboxwarmpool/${pool}`, `--for=jsonpath={.status.readyReplicas}=${replicas}`], t.ns, 180_000);
  return new Map((await pods(t.k, t.ns)).filter((p) => p.metadata.name.startsWith(`${pool}-`)).map((p) => [p.metadata.name, p.metadata.uid]));
}

test('suspend and resume, and a deleted Pod: a new Pod, with the workspace PVC\'s file; /tmp\'s file and an emptyDir workspace\'s are gone', async () => {
  const warm = new Map([...await warmPods('keep', 2), ...await warmPods('scratch', 2)]);
  await t.k.applyServerSide([claim('keeper', 'keep'), claim('scratcher', 'scratch')], 'real-nodes-test');
  const [kept, scratch] = await Promise.all([readyClaimSandbox('keeper'), readyClaimSandbox('scratcher')]);
  const before = await t.k.getJson(['pod', kept, '-n', t.ns]);
  const scratchBefore = await t.k.getJson(['pod', scratch, '-n', t.ns]);
  // Adoption: each claim took a warm member as it was, the Pod the pool started (what ran in it stays).
  expect(warm.get(kept)).toBe(before.metadata.uid);
  expect(warm.get(scratch)).toBe(scratchBefore.metadata.uid);
  const pvcName = before.spec.volumes.find((v: any) => v.name === 'workspace').persistentVolumeClaim.claimName;
  expect(scratchBefore.spec.volumes.find((v: any) => v.name === 'workspace')).toEqual({ name: 'workspace', emptyDir: {} });
  await writeBoth(kept);
  await writeBoth(scratch);

  await Promise.all([setMode(kept, 'Suspended'), setMode(scratch, 'Suspended')]);
  for (const s of [kept, scratch]) await eventually(`the Pod ${s} deleted`, async () => ((await t.k.tryGetJson(['pod', s, '-n', t.ns])) ? undefined : true), 120_000);
  const pvc = await t.k.getJson(['pvc', pvcName, '-n', t.ns]);
  expect(pvc.status.phase).toBe('Bound');
  expect(pvc.metadata.deletionTimestamp).toBeUndefined();

  await Promise.all([setMode(kept, 'Running'), setMode(scratch, 'Running')]);
  for (const s of [kept, scratch]) await eventually(`the resumed Pod ${s} Ready`, () => podReady(s), 180_000);
  expect((await t.k.getJson(['pod', kept, '-n', t.ns])).metadata.uid).not.toBe(before.metadata.uid);
  expect((await t.k.getJson(['pod', scratch, '-n', t.ns])).metadata.uid).not.toBe(scratchBefore.metadata.uid);
  expect(await readBoth(kept)).toEqual({ workspace: 'in the workspace', tmp: 'absent' });
  expect(await readBoth(scratch)).toEqual({ workspace: 'absent', tmp: 'absent' });

  // The same when the Pod is deleted from under a running Sandbox: the controller makes a new one.
  const running = await Promise.all([kept, scratch].map((s) => t.k.getJson(['pod', s, '-n', t.ns])));
  for (const s of [kept, scratch]) await writeBoth(s);
  await t.k.kubectl(['delete', 'pod', kept, scratch, '-n', t.ns, '--wait=true']);
  for (const [i, s] of [kept, scratch].entries()) {
    await eventually(`a new Pod ${s} Ready`, async () => {
      const pod = await t.k.tryGetJson(['pod', s, '-n', t.ns]);
      return pod && pod.metadata.uid !== running[i].metadata.uid && isReady(pod) ? true : undefined;
    }, 180_000);
  }
  expect(await readBoth(kept)).toEqual({ workspace: 'in the workspace', tmp: 'absent' });
  expect(await readBoth(scratch)).toEqual({ workspace: 'absent', tmp: 'absent' });
});

test('a container restart (the runtime SIGKILLed, the same Pod) keeps the workspace PVC\'s and the emptyDir\'s files, not /tmp\'s', async () => {
  await t.k.applyServerSide([claim('restart-keep', 'keep'), claim('restart-scratch', 'scratch')], 'real-nodes-test');
  const sandboxes = await Promise.all([readyClaimSandbox('restart-keep'), readyClaimSandbox('restart-scratch')]);
  const before = await Promise.all(sandboxes.map((s) => t.k.getJson(['pod', s, '-n', t.ns])));
  for (const s of sandboxes) await writeBoth(s);
  for (const pod of before) {
    const pid = containerProcess(pod, pod.spec.containers[0].name, 'runtime');
    expect(pid).toBeDefined();
    execFileSync('kill', ['-KILL', pid!]);
  }
  for (const [i, s] of sandboxes.entries()) {
    const restarted = await eventually(`the runtime of ${s} restarted and Ready`, async () => {
      const pod = await t.k.getJson(['pod', s, '-n', t.ns]);
      return pod.status.containerStatuses[0].restartCount > before[i].status.containerStatuses[0].restartCount && isReady(pod) ? pod : undefined;
    }, 180_000);
    expect(restarted.metadata.uid).toBe(before[i].metadata.uid);
  }
  expect(await readBoth(sandboxes[0])).toEqual({ workspace: 'in the workspace', tmp: 'absent' });
  expect(await readBoth(sandboxes[1])).toEqual({ workspace: 'in the workspace', tmp: 'absent' });
});

test('the operator container SIGKILLed during a burst of claims: the kubelet restarts it, every claim ends Ready on its own Sandbox', async () => {
  const operatorPod = async () => (await pods(t.k, SYSTEM_NAMESPACE)).find((p) => p.metadata.name.startsWith('agent-sandbox-controller-'));
  const pod = await operatorPod();
  const restartsBefore = pod.status.containerStatuses[0].restartCount;
  const names = Array.from({ length: 6 }, (_, i) => `burst-${i}`);
  await t.k.applyServerSide(names.map((n) => claim(n, 'burst')), 'real-nodes-test');
  // The operator's main process, found by the container ID the kubelet reports (its cgroup names it).
  const pid = containerProcess(pod, pod.status.containerStatuses[0].name, 'controller');
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
