/**
 * The install bundle's RBAC, black-box. Every operator integration test runs the operator as the
 * bundle's ServiceAccount under the bundle's own ClusterRoles (BundleRbac), which only shows the
 * shipped rules are enough if the operator really is held to them. So: the token authenticates as
 * that ServiceAccount, not as an admin; and with one verb taken away (`create` on pods, the rule's
 * other verbs kept) a Sandbox gets no Pod, the API server refuses the operator with 403 (counted in
 * the operator's own client metrics, named in its log and in the Sandbox's Ready condition); putting
 * the shipped rule back lets the same Sandbox become Ready without restarting the operator.
 *
 * "No Pod" holds because this file's operator is the only one running (the suite runs one test
 * file at a time, see jest.config.js).
 */
import { BundleRbac, PolicyRule } from './bundle-rbac';
import { HASH_LABEL, SandboxApi, condition, deleteSandboxes, isReady, sandboxManifest } from './sandbox-api';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
let sbx: SandboxApi;
let rbac: BundleRbac;
let op: OperatorProcess;

/** `rules` without `verb` on core `resource`; fails if no rule granted it, so the edit cannot silently do nothing. */
function withoutVerb(rules: PolicyRule[], resource: string, verb: string): PolicyRule[] {
  const granting = (r: PolicyRule) => (r.apiGroups ?? []).includes('') && (r.resources ?? []).includes(resource) && r.verbs.includes(verb);
  if (!rules.some(granting)) throw new Error(`no rule grants ${verb} on ${resource}`);
  return rules.flatMap((r) => {
    if (!granting(r)) return [r];
    // Split the rule so only this resource loses the verb; everything else it granted stays.
    const others = r.resources!.filter((x) => x !== resource);
    return [
      ...(others.length > 0 ? [{ ...r, resources: others }] : []),
      { ...r, resources: [resource], verbs: r.verbs.filter((v) => v !== verb) },
    ];
  });
}

/** Every `group/resource:verb` the ClusterRoles grant. */
function grants(objects: any[]): string[] {
  return objects.filter((o) => o.kind === 'ClusterRole').flatMap((o) => (o.rules as PolicyRule[]).flatMap((r) =>
    (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))))).sort();
}

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('bundle-rbac');
  sbx = new SandboxApi(api, ns);
  rbac = await BundleRbac.apply(kube, api, {
    namespace: ns,
    extensions: false,
    editRules: (role, rules) => (role.kind === 'ClusterRole' && role.name === `agent-sandbox-controller-${ns}` ? withoutVerb(rules, 'pods', 'create') : rules),
  });
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

test('the operator authenticates as the bundle ServiceAccount, and its rules are the shipped ones minus create on pods', async () => {
  const user = await rbac.whoAmI();
  expect(user.username).toBe(`system:serviceaccount:${ns}:agent-sandbox-controller`);
  expect(user.groups).toContain('system:serviceaccounts');
  expect(user.groups).not.toContain('system:masters');
  const applied = new Set(grants(rbac.objects));
  expect(grants(rbac.shipped).filter((g) => !applied.has(g))).toEqual(['/pods:create']);
  expect(grants(rbac.objects).filter((g) => !grants(rbac.shipped).includes(g))).toEqual([]);
});

test('without create on pods a Sandbox gets no Pod and the operator reports the 403; the shipped rule back makes it Ready', async () => {
  const before = await op.metrics();
  const forbiddenPosts = (m: typeof before) => m.sum('rest_client_requests_total', { code: '403', method: 'POST' });
  const sandboxErrors = (m: typeof before) => m.sum('controller_runtime_reconcile_errors_total', { controller: 'sandbox' });
  await sbx.create(sandboxManifest('denied'));

  // The failure as the operator saw it, not a timeout: the API server refused its POST and the reconcile failed.
  const failing = await sbx.waitFor('denied', (s) => condition(s, 'Ready')?.reason === 'ReconcilerError', 'Ready=False/ReconcilerError');
  const refusal = `User "${rbac.userName}" cannot create resource "pods" in API group "" in the namespace "${ns}"`;
  expect(condition(failing, 'Ready')).toMatchObject({ status: 'False' });
  expect(condition(failing, 'Ready').message).toContain(refusal);
  const after = await waitFor(async () => {
    const m = await op.metrics();
    return forbiddenPosts(m) > forbiddenPosts(before) && sandboxErrors(m) > sandboxErrors(before) ? m : undefined;
  }, 30_000, 'the operator to count a 403 on POST and a failed sandbox reconcile');
  expect(forbiddenPosts(after)).toBeGreaterThan(forbiddenPosts(before));
  const logged = await op.waitForLog((l) => l.level === 'error' && String(l.err?.message).includes(refusal), 30_000, 'the refusal in the operator log');
  expect(logged.key).toBe(`${ns}/denied`);
  expect(await sbx.podsOf('denied')).toEqual([]);
  expect(await sbx.podsByLabel(HASH_LABEL)).toEqual([]);

  // Only the missing verb stood in the way: with the shipped rules back, the retry succeeds.
  await rbac.restoreShipped();
  await sbx.waitFor('denied', isReady, 'Ready once the shipped rule is back', 120_000);
  expect((await sbx.podsOf('denied')).map((p) => p.metadata.name)).toEqual(['denied']);
});
