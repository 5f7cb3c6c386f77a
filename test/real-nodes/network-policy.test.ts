/**
 * NetworkPolicy enforced on a real node (kube-router), with a negative control: from inside a
 * sandbox under its template's default policy, another sandbox's Pod IP, the API server (its
 * address and the `kubernetes` Service) and the operator's metrics port are unreachable while the
 * router still reaches the sandbox; once the policy is gone, the same probes from the same sandbox
 * connect, so a pass cannot come from a network that was never open.
 */
import * as fs from 'fs';
import { parse as parseYaml } from 'yaml';
import { TestNamespace, claimSandbox, eventually, execute, openNamespace, pods, probeCommand, pythonPool, writeArtifact } from './e2e';
import { KUBERNETES_SERVICE_IP } from '../../tools/control-plane/real-node';
import { SYSTEM_NAMESPACE } from '../../tools/shared/real-system';

let t: TestNamespace;

beforeAll(async () => {
  t = await openNamespace('netpol', (ns) => pythonPool(ns, 'guarded', { runAsUser: 1000, replicas: 2 }));
});

afterAll(async () => {
  await t?.close();
});

interface Targets { readonly [what: string]: [string, number] }

async function targets(self: string): Promise<Targets> {
  const sandboxes = await pods(t.k, t.ns);
  const other = sandboxes.find((p) => p.metadata.name !== self && p.status?.podIP);
  const operator = (await pods(t.k, SYSTEM_NAMESPACE, 'app.kubernetes.io/name=agent-sandbox-controller'))[0]
    ?? (await pods(t.k, SYSTEM_NAMESPACE)).find((p) => p.metadata.name.startsWith('agent-sandbox-controller'));
  const server = new URL(parseYaml(fs.readFileSync(t.k.kubeconfig, 'utf8')).clusters[0].cluster.server);
  return {
    'another sandbox': [other.status.podIP, 8888],
    'the API server': [server.hostname, Number(server.port)],
    'the kubernetes Service': [KUBERNETES_SERVICE_IP, 443],
    'the operator\'s metrics port': [operator.status.podIP, 8080],
  };
}

async function probeAll(self: string, to: Targets): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [what, [host, port]] of Object.entries(to)) {
    out[what] = (await execute(t.router.url, t.token, t.ns, self, probeCommand(host, port))).stdout.trim();
  }
  return out;
}

test('the default policy isolates a sandbox; without it the same probes connect', async () => {
  const ready = await eventually('2 Ready sandboxes and the operator\'s policy', async () => {
    const list = (await pods(t.k, t.ns)).filter((p) => p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    const policy = await t.k.tryGetJson(['networkpolicy', 'guarded-network-policy', '-n', t.ns]);
    return list.length >= 2 && policy ? list.map((p) => p.metadata.name as string) : undefined;
  }, 180_000);
  expect(ready.length).toBeGreaterThanOrEqual(2);
  // The router serves claimed sandboxes only: probe from one the agent claims.
  const self = await claimSandbox(t.k, t.ns, 'guarded');
  const to = await targets(self);

  // The router reaches the sandbox (that is how every probe runs), and the policy holds: give
  // kube-router a moment to program a new policy before the first probe counts.
  const isolated = await eventually('every probe blocked', async () => {
    const r = await probeAll(self, to);
    return Object.values(r).every((v) => v !== 'open') ? r : undefined;
  }, 60_000, 2_000);
  for (const v of Object.values(isolated)) expect(v).toMatch(/Error$/);

  // Negative control: the operator stops managing the policy, the policy goes, the same sandbox connects.
  await t.k.kubectl(['patch', 'sandboxtemplate', 'guarded', '-n', t.ns, '--type=merge', '-p', '{"spec":{"networkPolicyManagement":"Unmanaged"}}']);
  await t.k.kubectl(['delete', 'networkpolicy', 'guarded-network-policy', '-n', t.ns, '--ignore-not-found']);
  const open = await eventually('every probe connecting without the policy', async () => {
    const r = await probeAll(self, to);
    return Object.values(r).every((v) => v === 'open') ? r : undefined;
  }, 90_000, 2_000);
  expect(open).toEqual(Object.fromEntries(Object.keys(to).map((w) => [w, 'open'])));
  writeArtifact('real-nodes-network-policy.json', JSON.stringify({ targets: to, withPolicy: isolated, withoutPolicy: open }, null, 2));
});
