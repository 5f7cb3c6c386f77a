/**
 * The extension controllers (SandboxTemplate, SandboxWarmPool, SandboxClaim), black-box: the real
 * operator bundle with --extensions=true against the real local control plane. KWOK turns
 * scheduled Pods Ready with a loopback pod IP, so a warm member is Ready about a second after its
 * create. Timing is logged, never asserted. The operator runs as the install bundle's ServiceAccount
 * with the full bundle's RBAC (core and extension ClusterRoles), so every write it needs must be
 * granted there.
 */
import { BundleRbac } from './bundle-rbac';
import {
  ExtensionsApi, WriteCounts, claimManifest, claimReady, controllerOf, createClaimsAndWaitReady, percentiles, poolManifest,
  templateManifest,
} from './extensions-api';
import { condition, sandboxBarrier } from './sandbox-api';
import { NameHash } from '../../../src/api/name-hash';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { apiserverRequests } from '../../../tools/shared/metrics';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const OPERATOR_ARGS = ['--extensions=true', '--leader-elect=false'];
const CONTROLLERS = ['sandbox', 'sandboxtemplate', 'sandboxwarmpool', 'sandboxclaim'];
let ns: string;
let ext: ExtensionsApi;
let rbac: BundleRbac;
let op: OperatorProcess;

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('extensions');
  ext = new ExtensionsApi(api, ns);
  rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: true });
  op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: OPERATOR_ARGS });
}, 240_000);

afterAll(async () => {
  const code = await op?.stop();
  // eslint-disable-next-line no-console
  console.log(`operator log: ${op?.logFile} (exit ${code}, ${op?.errors().length} error lines)`);
  if (ns) {
    // Hundreds of Sandboxes: delete them before the namespace, so no other test's operator (they
    // watch every namespace) finds Sandboxes whose Pods it may no longer create in a terminating one.
    for (const plural of ['sandboxclaims', 'sandboxwarmpools'] as const) await api.call('DELETE', ext.path(plural));
    await api.call('DELETE', ext.sandboxesPath);
    await waitFor(async () => (await ext.sandboxes()).length === 0, 120_000, 'every Sandbox of the test namespace to be gone');
    await kube.deleteNamespace(ns);
  }
  await rbac?.remove();
}, 200_000);

let barriers = 0;

/**
 * A barrier on the operator's NetworkPolicy watch: creates an unowned marker NetworkPolicy (which
 * no controller acts on) and waits until the operator's NetworkPolicy cache holds one object more.
 * Watch events arrive in order, so by then it has seen every NetworkPolicy change made before.
 * Assumes nothing else creates or deletes NetworkPolicies meanwhile (tests in a file run in turn).
 */
async function networkPolicyBarrier(): Promise<void> {
  const resource = 'networkpolicies.networking.k8s.io';
  const cached = (await op.metrics()).sum('agent_sandbox_informer_objects', { resource });
  await api.call('POST', `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: `barrier-${++barriers}` }, spec: { podSelector: { matchLabels: { barrier: 'none' } } },
  });
  await waitFor(async () => (await op.metrics()).sum('agent_sandbox_informer_objects', { resource }) === cached + 1, 30_000, 'the operator to cache the barrier NetworkPolicy');
}

describe('SandboxTemplate', () => {
  test('NetworkPolicy: secure default created and marked as the template\'s, replaced on a template change, removed when Unmanaged', async () => {
    await ext.create('sandboxtemplates', templateManifest('np'));
    const hash = NameHash.of('np');
    const np = await waitFor(() => ext.networkPolicy('np-network-policy'), 30_000, 'the NetworkPolicy');
    // No ownerReference, so garbage collection cannot remove it from under running Sandboxes.
    expect(np.metadata.ownerReferences).toBeUndefined();
    expect(np.metadata.annotations).toEqual({ 'agents.x-k8s.io/sandbox-template-ref': 'np' });
    expect(np.metadata.labels).toEqual({ 'agents.x-k8s.io/sandbox-template-ref-hash': hash });
    expect(np.spec.podSelector).toEqual({ matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': hash } });
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    // Outside a pod the operator's namespace is the install default, which the router lives in.
    expect(np.spec.ingress).toEqual([{
      from: [{
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'agent-sandbox-system' } },
        podSelector: { matchLabels: { app: 'sandbox-router' } },
      }],
    }]);
    const v4 = np.spec.egress.flatMap((r: any) => r.to ?? []).find((p: any) => p.ipBlock?.cidr === '0.0.0.0/0');
    expect(v4.ipBlock.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']));
    // The template carries its own ref-hash label.
    await waitFor(async () => (await ext.get('sandboxtemplates', 'np'))?.metadata.labels?.['agents.x-k8s.io/sandbox-template-ref-hash'] === hash,
      30_000, 'the template-ref-hash label on the template');

    // Custom rules replace the default in place (same object, new spec).
    const custom = { ingress: [{ ports: [{ port: 8888 }] }], egress: [] };
    await ext.patch('sandboxtemplates', 'np', { spec: { networkPolicy: custom } });
    const updated = await waitFor(async () => {
      const p = await ext.networkPolicy('np-network-policy');
      return p?.spec.ingress?.[0]?.ports?.[0]?.port === 8888 ? p : undefined;
    }, 30_000, 'the custom NetworkPolicy');
    expect(updated.metadata.uid).toBe(np.metadata.uid);
    expect(updated.spec).toEqual({
      podSelector: { matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': hash } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ ports: [{ port: 8888, protocol: 'TCP' }] }],
    });
    // Converged: the operator does not keep rewriting it (the server-defaulted protocol is not drift).
    // Checked once the operator has seen its own update of the NetworkPolicy (the barrier) and the
    // template controller has reconciled everything that queued.
    await networkPolicyBarrier();
    await op.waitIdle(['sandboxtemplate']);
    expect((await ext.networkPolicy('np-network-policy')).metadata.resourceVersion).toBe(updated.metadata.resourceVersion);

    await ext.patch('sandboxtemplates', 'np', { spec: { networkPolicyManagement: 'Unmanaged' } });
    await waitFor(async () => (await ext.networkPolicy('np-network-policy')) === undefined, 30_000, 'the NetworkPolicy to be removed');
  });

  test('a foreign NetworkPolicy of that name is left alone and reported', async () => {
    await api.call('POST', `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'mine-network-policy' }, spec: { podSelector: {} },
    });
    await ext.create('sandboxtemplates', templateManifest('mine'));
    await waitFor(async () => (await ext.events('SandboxTemplate', 'mine')).some((e) => e.reason === 'NetworkPolicyConflict'), 30_000, 'a NetworkPolicyConflict event');
    expect(controllerOf(await ext.networkPolicy('mine-network-policy'))).toBeUndefined();
  });
});

describe('SandboxWarmPool', () => {
  test('kubectl scale: the pool grows and shrinks to the new replica count', async () => {
    await ext.create('sandboxtemplates', templateManifest('scaled'));
    await ext.create('sandboxwarmpools', poolManifest('scaled', 'scaled', 1));
    await ext.waitPoolReady('scaled', 1);
    await kube.kubectl(['scale', 'sandboxwarmpool', 'scaled', '-n', ns, '--replicas=4']);
    const grown = await ext.waitPoolReady('scaled', 4);
    expect(new Set(grown.map((s) => s.metadata.name)).size).toBe(4);
    await kube.kubectl(['scale', 'sandboxwarmpool', 'scaled', '-n', ns, '--replicas=2']);
    await ext.waitPoolReady('scaled', 2);
    const pool = await ext.get('sandboxwarmpools', 'scaled');
    expect(pool.status.selector).toBe(`agents.x-k8s.io/warm-pool-sandbox=${NameHash.of('scaled')}`);
    expect(pool.status.observedGeneration).toBe(pool.metadata.generation);
  });

  test('update strategies after a template change: Recreate replaces members at once, OnReplenish keeps them', async () => {
    await ext.create('sandboxtemplates', templateManifest('upd'));
    await ext.create('sandboxwarmpools', poolManifest('upd-recreate', 'upd', 2, 'Recreate'));
    await ext.create('sandboxwarmpools', poolManifest('upd-replenish', 'upd', 2, 'OnReplenish'));
    const recreateBefore = await ext.waitPoolReady('upd-recreate', 2);
    const replenishBefore = await ext.waitPoolReady('upd-replenish', 2);
    const oldHash = recreateBefore[0].metadata.labels['agents.x-k8s.io/sandbox-template-hash'];

    await ext.patch('sandboxtemplates', 'upd', { spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'busybox:1.37' }] } } } });
    const recreated = await waitFor(async () => {
      const members = await ext.waitPoolReady('upd-recreate', 2);
      return members.every((s) => s.metadata.labels['agents.x-k8s.io/sandbox-template-hash'] !== oldHash) ? members : undefined;
    }, 90_000, 'Recreate to replace both members');
    expect(recreated.map((s) => s.spec.podTemplate.spec.containers[0].image)).toEqual(['busybox:1.37', 'busybox:1.37']);
    expect(recreated.some((s) => recreateBefore.some((b) => b.metadata.uid === s.metadata.uid))).toBe(false);

    // OnReplenish: the same members, untouched, once the pool controller has reconciled the change.
    // The template's event queued both pools at once (pools are keyed by their template), and the
    // Recreate pool's new members show that event was handled; idle means the other pool was too.
    await op.waitIdle(['sandboxwarmpool']);
    const replenishAfter = await ext.poolMembers('upd-replenish');
    expect(replenishAfter.map((s) => s.metadata.uid).sort()).toEqual(replenishBefore.map((s) => s.metadata.uid).sort());
    expect(replenishAfter.every((s) => s.spec.podTemplate.spec.containers[0].image === 'busybox')).toBe(true);
  });
});

describe('SandboxClaim', () => {
  test('quickstart: a pool of 2, a claim adopts one member (owner becomes the claim), the pool refills to 2', async () => {
    await ext.create('sandboxtemplates', templateManifest('quick'));
    await ext.create('sandboxwarmpools', poolManifest('quick', 'quick', 2));
    const before = await ext.waitPoolReady('quick', 2);
    const claim = await ext.create('sandboxclaims', claimManifest('quick-claim', 'quick'));
    const ready = await ext.waitClaim('quick-claim', claimReady, 'Ready=True');

    const name = ready.status.sandbox.name;
    expect(before.map((s) => s.metadata.name)).toContain(name);
    const sb = (await ext.sandboxes()).find((s) => s.metadata.name === name);
    expect(controllerOf(sb)).toMatchObject({ kind: 'SandboxClaim', name: 'quick-claim', uid: claim.metadata.uid, controller: true, blockOwnerDeletion: true });
    expect(sb.metadata.ownerReferences).toHaveLength(1);
    expect(sb.metadata.labels['agents.x-k8s.io/launch-type']).toBe('warm');
    expect(sb.metadata.labels['agents.x-k8s.io/claim-uid']).toBe(claim.metadata.uid);
    expect(sb.metadata.labels['agents.x-k8s.io/warm-pool-sandbox']).toBeUndefined();
    expect(ready.status.sandbox.podIPs).toEqual(sb.status.podIPs);
    expect(condition(ready, 'Ready')).toMatchObject({ reason: 'DependenciesReady', observedGeneration: 1 });

    const refilled = await ext.waitPoolReady('quick', 2);
    expect(refilled.map((s) => s.metadata.name)).not.toContain(name);
    const annotated = await ext.waitClaim('quick-claim', (c) => c.metadata.annotations?.['agents.x-k8s.io/claim-first-ready-at'] !== undefined, 'observability annotations');
    expect(annotated.metadata.annotations['agents.x-k8s.io/controller-first-observed-at']).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
    await waitFor(async () => (await ext.events('SandboxClaim', 'quick-claim')).some((e) => e.reason === 'SandboxAdopted' && e.note.includes(name)), 30_000, 'a SandboxAdopted event');
  });

  test('a claim with env against a template that forbids it: Ready=False EnvVarsInjectionRejected, nothing created', async () => {
    await ext.create('sandboxtemplates', templateManifest('noenv'));
    await ext.create('sandboxwarmpools', poolManifest('noenv', 'noenv', 1));
    await ext.create('sandboxclaims', claimManifest('envy', 'noenv', { env: [{ name: 'SECRET', value: 'x' }] }));
    const rejected = await ext.waitClaim('envy', (c) => condition(c, 'Ready')?.reason === 'EnvVarsInjectionRejected', 'EnvVarsInjectionRejected');
    expect(condition(rejected, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(rejected, 'Ready').message).toContain('envVarsInjectionPolicy');
    expect((await ext.sandboxes()).some((s) => s.metadata.name === 'envy')).toBe(false);
  });

  test('lifecycle expiry: Delete removes claim and Sandbox, DeleteForeground the Sandbox first, Retain keeps the claim as ClaimExpired', async () => {
    await ext.create('sandboxtemplates', templateManifest('life'));
    await ext.create('sandboxwarmpools', poolManifest('life', 'life', 3));
    await ext.waitPoolReady('life', 3);
    const shutdownTime = new Date(Math.ceil((Date.now() + 5_000) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    const policies = { 'life-delete': 'Delete', 'life-foreground': 'DeleteForeground', 'life-retain': 'Retain' };
    for (const [name, shutdownPolicy] of Object.entries(policies)) {
      await ext.create('sandboxclaims', claimManifest(name, 'life', { lifecycle: { shutdownTime, shutdownPolicy } }));
    }
    const sandboxOf: Record<string, string> = {};
    for (const name of Object.keys(policies)) sandboxOf[name] = (await ext.waitClaim(name, claimReady, 'Ready')).status.sandbox.name;
    const sandboxGone = (name: string) => async () => !(await ext.sandboxes()).some((s) => s.metadata.name === sandboxOf[name]);

    await waitFor(async () => (await ext.get('sandboxclaims', 'life-delete')) === undefined && sandboxGone('life-delete')(), 60_000, 'Delete: claim and Sandbox gone');
    // eslint-disable-next-line no-console
    console.log(`claim expiry (Delete) done ${Date.now() - Date.parse(shutdownTime)} ms after shutdownTime`);
    await waitFor(async () => (await ext.get('sandboxclaims', 'life-foreground')) === undefined && sandboxGone('life-foreground')(), 60_000, 'DeleteForeground: claim and Sandbox gone');

    const retained = await ext.waitClaim('life-retain', (c) => condition(c, 'Ready')?.reason === 'ClaimExpired', 'ClaimExpired');
    expect(condition(retained, 'Ready')).toMatchObject({ status: 'False', message: 'Claim expired. Sandbox cleanup initiated.' });
    await waitFor(sandboxGone('life-retain'), 60_000, 'Retain: the Sandbox deleted');
    expect(await ext.get('sandboxclaims', 'life-retain')).toBeDefined();
    await waitFor(async () => (await ext.events('SandboxClaim', 'life-retain')).some((e) => e.reason === 'ClaimExpired'), 30_000, 'a ClaimExpired event');
  });
});

/** The SandboxAdopted Events about the claims `names`. */
async function adoptions(names: string[]): Promise<any[]> {
  const events = (await api.call('GET', `/apis/events.k8s.io/v1/namespaces/${ns}/events`)).items;
  return events.filter((e: any) => e.reason === 'SandboxAdopted' && e.regarding?.kind === 'SandboxClaim' && names.includes(e.regarding.name));
}

/** Every claim Ready and bound to exactly one Sandbox it controls, no Sandbox bound twice; returns the warm/cold split. */
async function checkClaimsBound(names: string[]): Promise<{ warm: number; cold: number }> {
  const claims = new Map((await ext.list('sandboxclaims')).map((c) => [c.metadata.name, c]));
  const sandboxes = await ext.sandboxes();
  const owned = new Map<string, any[]>();
  for (const s of sandboxes) {
    const ref = controllerOf(s);
    if (ref?.kind === 'SandboxClaim') owned.set(ref.uid, [...(owned.get(ref.uid) ?? []), s]);
  }
  const bound = new Set<string>();
  let warm = 0;
  for (const name of names) {
    const c = claims.get(name);
    expect(claimReady(c)).toBe(true);
    const mine = owned.get(c.metadata.uid) ?? [];
    expect(mine.map((s) => s.metadata.name)).toEqual([c.status.sandbox.name]);
    expect(bound.has(c.status.sandbox.name)).toBe(false);
    bound.add(c.status.sandbox.name);
    if (mine[0].metadata.labels['agents.x-k8s.io/launch-type'] === 'warm') warm++;
  }
  return { warm, cold: names.length - warm };
}

describe('load', () => {
  const log = (msg: string) => console.log(msg); // eslint-disable-line no-console

  test('warm-claim latency and API writes per warm claim: 100 claims, 4 at a time, against a pool of 100', async () => {
    const CLAIMS = 100;
    await ext.create('sandboxtemplates', templateManifest('steady'));
    await ext.create('sandboxwarmpools', poolManifest('steady', 'steady', CLAIMS));
    await ext.waitPoolReady('steady', CLAIMS, 120_000);
    // Count from a quiet operator: every Sandbox change seen (the barrier) and every key reconciled.
    await sandboxBarrier(api, ns);
    await op.waitIdle(CONTROLLERS);
    const before = await apiserverRequests(api, { byCode: true });
    const operatorBefore = await op.metrics();
    const names = Array.from({ length: CLAIMS }, (_, i) => `steady-${i}`);
    const latency = await createClaimsAndWaitReady(ext, names.map((n) => claimManifest(n, 'steady')), 4, 120_000);
    await ext.waitPoolReady('steady', CLAIMS, 120_000);
    // The deferred writes land after Ready: the annotation patch (the claim reconcile's last write)
    // and the SandboxAdopted Event (sent without waiting); then everything they and the refill queued.
    await waitFor(async () => (await ext.list('sandboxclaims')).filter((c) => names.includes(c.metadata.name)
      && c.metadata.annotations?.['agents.x-k8s.io/claim-first-ready-at']).length === CLAIMS, 60_000, 'the observability annotations on every claim');
    await waitFor(async () => (await adoptions(names)).length === CLAIMS, 60_000, 'a SandboxAdopted Event for every claim');
    await sandboxBarrier(api, ns);
    await op.waitIdle(CONTROLLERS);
    const after = await apiserverRequests(api, { byCode: true });
    const operatorAfter = await op.metrics();

    const split = await checkClaimsBound(names);
    expect(split.warm).toBe(CLAIMS);
    log(`warm claims (4 in flight), client create -> Ready=True on a watch: ${percentiles([...latency.values()])}; ${split.warm} warm / ${split.cold} cold`);
    // The operator's own share: its first sighting of the claim to the pass that persisted Ready.
    const claims = (await ext.list('sandboxclaims')).filter((c) => names.includes(c.metadata.name));
    const inOperator = claims.map((c) => Date.parse(c.metadata.annotations['agents.x-k8s.io/claim-first-ready-at'])
      - Date.parse(c.metadata.annotations['agents.x-k8s.io/controller-first-observed-at']));
    log(`same claims, controller-first-observed-at -> claim-first-ready-at: ${percentiles(inOperator)}`);
    expect(claims.every((c) => c.metadata.annotations['agents.x-k8s.io/claim-first-ready-at'] !== 'unknown')).toBe(true);

    const writes = new WriteCounts(before, after);
    log(`API writes per warm claim by every client, per verb, resource and code (claim path + the pool's refill of its member + scheduler and KWOK), from apiserver_request_total: ${JSON.stringify(writes.per(CLAIMS))}`);
    const operatorWrites = ['POST', 'PUT', 'PATCH', 'DELETE'].map((method) => [method,
      operatorAfter.sum('rest_client_requests_total', { method }) - operatorBefore.sum('rest_client_requests_total', { method })] as const);
    log(`the operator's own writes per warm claim, from its rest_client_requests_total (Events included): ${JSON.stringify(Object.fromEntries(operatorWrites.map(([m, n]) => [m, n / CLAIMS])))}`);
    // The warm claim as docs/operator.md ("Warm pools and claims") describes it: one conditional
    // patch on the Sandbox, one status write on the claim,
    // one patch of the claim's observability annotations, and a SandboxAdopted Event; nothing else
    // touches Sandboxes or claims (pool members are created with their pod-name annotation).
    expect({
      'conditional patch of the Sandbox': writes.ok('PATCH', 'sandboxes'),
      'claim status write': writes.ok('PATCH', 'sandboxclaims/status'),
      'claim annotation patch': writes.ok('PATCH', 'sandboxclaims'),
      'Sandbox or claim updates': writes.ok('PUT', 'sandboxes') + writes.ok('PUT', 'sandboxclaims') + writes.ok('PUT', 'sandboxclaims/status'),
      'SandboxAdopted Events': (await adoptions(names)).length,
    }).toEqual({
      'conditional patch of the Sandbox': CLAIMS,
      'claim status write': CLAIMS,
      'claim annotation patch': CLAIMS,
      'Sandbox or claim updates': 0,
      'SandboxAdopted Events': CLAIMS,
    });
    // No claim write was refused for a stale version: the controller decides on its own writes until the cache shows them.
    expect(writes.failed('PATCH', 'sandboxclaims/status') + writes.failed('PATCH', 'sandboxclaims')).toBe(0);
    log(`adoption patches refused (409, a member another claim took first): ${writes.failed('PATCH', 'sandboxes')}`);
    // The refill, as docs/operator.md has it: one new member per claimed one, and its Pod created once
    // (no duplicate creates). The harness made one more Sandbox in the window: the second barrier.
    expect({
      'Sandboxes created by the pool': writes.ok('POST', 'sandboxes') - 1,
      'Pods created': writes.ok('POST', 'pods'),
      'Pod creates refused': writes.failed('POST', 'pods'),
    }).toEqual({ 'Sandboxes created by the pool': CLAIMS, 'Pods created': CLAIMS, 'Pod creates refused': 0 });
    // Not stated by docs/operator.md, so logged, not asserted: the Sandbox controller's follow-ups of an
    // adoption (the claimed Pod's new labels, the status for the new generation) and a refilled
    // member's status writes (one when its Pod is Ready within --sandbox-progress-status-window).
    log(`Sandbox controller per warm claim: Pod metadata patches ${writes.ok('PATCH', 'pods') / CLAIMS}, Sandbox status writes ${(writes.ok('PATCH', 'sandboxes/status') - 1) / CLAIMS} (barrier's excluded)`);
  }, 300_000);

  test('200 concurrent claims against a pool of 100: every claim Ready, at least 100 warm, no Sandbox bound twice', async () => {
    await ext.create('sandboxtemplates', templateManifest('burst'));
    await ext.create('sandboxwarmpools', poolManifest('burst', 'burst', 100));
    await ext.waitPoolReady('burst', 100, 120_000);
    const names = Array.from({ length: 200 }, (_, i) => `burst-${i}`);
    const started = Date.now();
    const latency = await createClaimsAndWaitReady(ext, names.map((n) => claimManifest(n, 'burst')), 50, 180_000);
    log(`200 claims all Ready ${Date.now() - started} ms after the first create`);
    const split = await checkClaimsBound(names);
    const sandboxes = new Map((await ext.sandboxes()).map((s) => [s.metadata.name, s]));
    const claims = await ext.list('sandboxclaims');
    const byType = { warm: [] as number[], cold: [] as number[] };
    for (const c of claims.filter((x) => names.includes(x.metadata.name))) {
      byType[sandboxes.get(c.status.sandbox.name)?.metadata.labels['agents.x-k8s.io/launch-type'] === 'warm' ? 'warm' : 'cold'].push(latency.get(c.metadata.name)!);
    }
    log(`burst: ${split.warm} warm (${percentiles(byType.warm)}), ${split.cold} cold (${byType.cold.length ? percentiles(byType.cold) : 'none'})`);
    // Members refilled during the burst may be adopted too, so warm can exceed the pool's 100.
    expect(split.warm).toBeGreaterThanOrEqual(100);
    expect(split.warm + split.cold).toBe(200);
    await ext.waitPoolReady('burst', 100, 120_000);
    expect(op.errors()).toEqual([]);
  }, 400_000);

  test('SIGKILL in the middle of a burst of 100 claims against a pool of 50: a restart converges, nothing bound twice', async () => {
    await ext.create('sandboxtemplates', templateManifest('crash'));
    await ext.create('sandboxwarmpools', poolManifest('crash', 'crash', 50));
    await ext.waitPoolReady('crash', 50, 120_000);
    const names = Array.from({ length: 100 }, (_, i) => `crash-${i}`);
    const started = Date.now();
    const creating = Promise.all(names.map((n) => ext.create('sandboxclaims', claimManifest(n, 'crash'))));
    await waitFor(async () => (await ext.list('sandboxclaims')).filter((c) => names.includes(c.metadata.name) && claimReady(c)).length >= 10, 60_000, 'the first 10 Ready claims');
    await op.kill();
    await creating;
    const readyAtKill = (await ext.list('sandboxclaims')).filter((c) => names.includes(c.metadata.name) && claimReady(c)).length;
    log(`SIGKILL after ${Date.now() - started} ms with ${readyAtKill}/100 claims Ready`);
    op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: OPERATOR_ARGS });
    await waitFor(async () => (await ext.list('sandboxclaims')).filter((c) => names.includes(c.metadata.name) && claimReady(c)).length === 100,
      180_000, 'all 100 claims Ready after the restart');
    log(`burst of 100 claims (with a SIGKILL and restart) all Ready after ${Date.now() - started} ms`);
    const split = await checkClaimsBound(names);
    log(`after the restart: ${split.warm} warm / ${split.cold} cold`);
    await ext.waitPoolReady('crash', 50, 120_000);
    expect(op.errors()).toEqual([]);
  }, 400_000);
});
