/**
 * SandboxClaim status.sandbox.serviceFQDN (upstream v1.0.1's field), black-box: the real operator
 * bundle with --extensions=true against the real local control plane (KWOK turns Pods Ready).
 *
 * A claim bound to a Sandbox with a Service carries that Sandbox's status.serviceFQDN
 * (`<sandbox>.<namespace>.svc.cluster.local`, the default --cluster-domain), warm or cold; a warm
 * claim gets it in its one status write (read from a watch opened before the claim, so every
 * write is seen); turning the Sandbox's Service off clears it. Upstream's Python SDK, unchanged,
 * still resolves and waits on such a claim. The negative control is a claim of a template without
 * a Service: no serviceFQDN.
 */
import { execFile, execFileSync } from 'child_process';
import * as path from 'path';
import { claimManifest, claimReady, poolManifest, templateManifest } from './extensions-api';
import { type ExtensionsOperator, startExtensionsOperator, stopExtensionsOperator } from './extensions-operator';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube } from '../../../tools/control-plane/kube';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const FIRST_READY_AT = 'agents.x-k8s.io/claim-first-ready-at';
const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let env: ExtensionsOperator;

beforeAll(async () => {
  env = await startExtensionsOperator(kube, api, 'claim-fqdn');
  await env.ext.create('sandboxtemplates', templateManifest('served', { service: true }));
  await env.ext.create('sandboxtemplates', templateManifest('plain'));
}, 240_000);

afterAll(() => stopExtensionsOperator(kube, api, env), 200_000);

const fqdnOf = (sandbox: string) => `${sandbox}.${env.ns}.svc.cluster.local`;

/**
 * Creates the claim once a watch on it is open and returns every distinct status it went through,
 * up to the write that follows Ready (the observability annotations).
 */
async function claimStatuses(name: string, pool: string): Promise<any[]> {
  const seen: any[] = [];
  const selector = encodeURIComponent(`metadata.name=${name}`);
  return api.watch(`${env.ext.path('sandboxclaims')}?fieldSelector=${selector}`, (ev) => {
    const status = ev.object?.status;
    if (status && JSON.stringify(status) !== JSON.stringify(seen[seen.length - 1])) seen.push(status);
    return ev.object?.metadata?.annotations?.[FIRST_READY_AT] ? seen : undefined;
  }, { timeoutMs: 60_000, onReady: async () => { await env.ext.create('sandboxclaims', claimManifest(name, pool)); } });
}

test('a warm claim of a template with a Service: serviceFQDN in its one status write; the Service turned off clears it', async () => {
  await env.ext.create('sandboxwarmpools', poolManifest('served', 'served', 1));
  const [member] = await env.ext.waitPoolReady('served', 1);
  expect(member.status.serviceFQDN).toBe(fqdnOf(member.metadata.name));

  const statuses = await claimStatuses('warm', 'served');
  // One status write, Ready with the whole binding at once: no second write for the name.
  expect(statuses).toHaveLength(1);
  expect(statuses[0].sandbox).toEqual({ name: member.metadata.name, podIPs: member.status.podIPs, serviceFQDN: fqdnOf(member.metadata.name) });
  expect(claimReady({ status: statuses[0] })).toBe(true);

  // The Sandbox's Service goes: its status.serviceFQDN, then the claim's, are cleared.
  await api.call('PATCH', `${env.ext.sandboxesPath}/${member.metadata.name}`, { spec: { service: false } });
  const cleared = await env.ext.waitClaim('warm', (c) => c.status?.sandbox?.serviceFQDN === undefined, 'serviceFQDN cleared');
  expect(cleared.status.sandbox).toEqual({ name: member.metadata.name, podIPs: member.status.podIPs });
  const sandbox = (await env.ext.sandboxes()).find((s) => s.metadata.name === member.metadata.name);
  expect(sandbox.status.serviceFQDN).toBeUndefined();
});

test('a cold claim (a pool of 0) gets its new Sandbox\'s serviceFQDN; a template without a Service gives none', async () => {
  await env.ext.create('sandboxwarmpools', poolManifest('served-cold', 'served', 0));
  await env.ext.create('sandboxwarmpools', poolManifest('plain', 'plain', 1));
  await env.ext.waitPoolReady('plain', 1);
  await env.ext.create('sandboxclaims', claimManifest('cold', 'served-cold'));
  await env.ext.create('sandboxclaims', claimManifest('no-service', 'plain'));

  const cold = await env.ext.waitClaim('cold', (c) => claimReady(c) && c.status.sandbox?.serviceFQDN !== undefined, 'Ready with a serviceFQDN');
  expect(cold.status.sandbox).toMatchObject({ name: 'cold', serviceFQDN: fqdnOf('cold') });
  const sandbox = (await env.ext.sandboxes()).find((s) => s.metadata.name === 'cold');
  expect(sandbox.status.serviceFQDN).toBe(cold.status.sandbox.serviceFQDN);

  const plain = await env.ext.waitClaim('no-service', claimReady, 'Ready=True');
  expect(plain.status.sandbox.name).toBeDefined();
  expect(plain.status.sandbox).not.toHaveProperty('serviceFQDN');
});

test('upstream\'s Python SDK (PyPI k8s-agent-sandbox, unchanged) resolves and waits on a claim that carries serviceFQDN', async () => {
  await env.ext.create('sandboxwarmpools', poolManifest('py', 'served', 1));
  const [member] = await env.ext.waitPoolReady('py', 1);
  await env.ext.create('sandboxclaims', claimManifest('py-claim', 'py'));
  await env.ext.waitClaim('py-claim', (c) => claimReady(c) && c.status.sandbox?.serviceFQDN !== undefined, 'Ready with a serviceFQDN');

  // First run: a minute to create the venv from PyPI; cached after that (hack/python-sdk-venv.sh).
  const python = execFileSync(path.join(ROOT, 'hack', 'python-sdk-venv.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
  const script = [
    'import json, sys',
    'from k8s_agent_sandbox.k8s_helper import K8sHelper',
    'claim, ns = sys.argv[1], sys.argv[2]',
    'h = K8sHelper()',
    'out = {"resolved": h.resolve_sandbox_name(claim, ns, 60), "ready": h.wait_for_claim_ready(claim, ns, 60)}',
    'out["claim_sandbox"] = h.get_sandbox_claim(claim, ns)["status"]["sandbox"]',
    'print(json.dumps(out))',
  ].join('\n');
  const out = await new Promise<any>((resolve, reject) => {
    execFile(python, ['-c', script, 'py-claim', env.ns], { env: { ...process.env, KUBECONFIG: kube.kubeconfig }, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`upstream's Python SDK failed on the claim: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
  expect(out).toEqual({
    resolved: member.metadata.name,
    ready: member.metadata.name,
    claim_sandbox: { name: member.metadata.name, podIPs: member.status.podIPs, serviceFQDN: fqdnOf(member.metadata.name) },
  });
}, 300_000);
