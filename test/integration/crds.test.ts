/**
 * The synthesized CRDs, install bundle and examples against a real kube-apiserver: they install,
 * every manifest applies with server-side apply, defaults land, invalid objects are refused with
 * the schema's or CEL's message, scale and printer columns work, and owners garbage-collect.
 */
import { App, Chart, Testing } from 'cdk8s';
import { EXAMPLES } from '../../examples';
import { AgentSandboxSystem, NameHash, SandboxCrds } from '../../src';
import { ADMISSION_POLICY_NAME, CLAIM_POLICY_NAME, OWNERSHIP_POLICY_NAME } from '../../src/install/admission-policy';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { Kube, KubectlError, waitFor } from '../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const MANAGER = 'integration-test';
let ns: string;

const synth = (build: (chart: Chart) => void): any[] => {
  const chart = Testing.chart();
  build(chart);
  return Testing.synth(chart);
};

beforeAll(async () => {
  const crds = synth((chart) => new SandboxCrds(chart, 'crds'));
  await kube.applyServerSide(crds, MANAGER);
  for (const crd of crds) await kube.wait([`crd/${crd.metadata.name}`, '--for=condition=Established']);
  ns = await kube.createNamespace('crds');
});

afterAll(async () => {
  if (ns) await kube.deleteNamespace(ns);
  // The bundle's admission policies are cluster-wide: leave the shared cluster without them, so later
  // files' deliberately privileged objects are not refused by a policy this file happened to apply.
  for (const kind of ['validatingadmissionpolicybinding', 'validatingadmissionpolicy']) {
    await kube.kubectl(['delete', kind, ADMISSION_POLICY_NAME, CLAIM_POLICY_NAME, OWNERSHIP_POLICY_NAME, '--ignore-not-found']);
  }
});

const sandbox = (name: string, spec: any = {}, extra: any = {}) => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name, namespace: ns },
  spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.12-slim' }] } }, ...spec },
  ...extra,
});
const template = (name: string, spec: any = {}) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxTemplate',
  metadata: { name, namespace: ns },
  spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.12-slim' }] } }, ...spec },
});
const pool = (name: string, spec: any = {}) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxWarmPool',
  metadata: { name, namespace: ns },
  spec: { sandboxTemplateRef: { name: 'python' }, ...spec },
});
const claim = (name: string, spec: any = {}) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxClaim',
  metadata: { name, namespace: ns },
  spec: { warmPoolRef: { name: 'python' }, ...spec },
});

/** The apiserver's refusal of `obj` (server-side dry run, strict field validation), or undefined. */
async function refusal(obj: object): Promise<string | undefined> {
  try {
    await kube.kubectl(['create', '--dry-run=server', '--validate=strict', '-f', '-'], { input: JSON.stringify(obj) });
    return undefined;
  } catch (e) {
    if (e instanceof KubectlError) return e.stderr;
    throw e;
  }
}

describe('install', () => {
  test('the four CRDs are Established with their names accepted', async () => {
    const crd = await kube.getJson(['crd', 'sandboxwarmpools.extensions.agents.x-k8s.io']);
    const conditions = Object.fromEntries(crd.status.conditions.map((c: any) => [c.type, c.status]));
    expect(conditions).toMatchObject({ Established: 'True', NamesAccepted: 'True' });
    expect(crd.status.acceptedNames.shortNames).toEqual(['swp']);
  });

  test('the full install bundle applies with server-side apply (RBAC, Deployment, router, APF)', async () => {
    const objects = synth((chart) => new AgentSandboxSystem(chart, 'system', { router: {}, flowControl: {} }));
    const applied = await kube.applyServerSide(objects, MANAGER);
    expect(applied.map((o) => o.kind)).toEqual(objects.map((o) => o.kind));
    const flowSchema = await kube.getJson(['flowschema', 'agent-sandbox-critical']);
    expect(flowSchema.spec.rules[0].subjects).toEqual([
      { kind: 'ServiceAccount', serviceAccount: { name: 'agent-sandbox-controller', namespace: 'agent-sandbox-system' } },
    ]);
  });

  test.each(Object.keys(EXAMPLES))('example %s applies with server-side apply', async (name) => {
    const app = Testing.app();
    EXAMPLES[name](app as App);
    for (const chart of app.charts) {
      const objects = Testing.synth(chart);
      const namespaces = [...new Set(objects.map((o) => o.metadata.namespace).filter(Boolean))];
      await kube.applyServerSide(namespaces.map((n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } })), MANAGER);
      const applied = await kube.applyServerSide(objects, MANAGER);
      expect(applied.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    }
  });
});

describe('defaults', () => {
  test('Sandbox: operatingMode Running, shutdownPolicy Retain, container port protocol TCP', async () => {
    const [obj] = await kube.applyServerSide([sandbox('defaults', {
      podTemplate: { spec: { containers: [{ name: 'main', image: 'python', ports: [{ containerPort: 8888 }] }] } },
    })], MANAGER);
    expect(obj.spec.operatingMode).toBe('Running');
    expect(obj.spec.shutdownPolicy).toBe('Retain');
    expect(obj.spec.podTemplate.spec.containers[0].ports[0].protocol).toBe('TCP');
  });

  test('SandboxTemplate: Managed, Disallowed, Disallowed', async () => {
    const [obj] = await kube.applyServerSide([template('python')], MANAGER);
    expect(obj.spec).toMatchObject({ networkPolicyManagement: 'Managed', envVarsInjectionPolicy: 'Disallowed', volumeClaimTemplatesPolicy: 'Disallowed' });
  });

  test('SandboxWarmPool: replicas 1; updateStrategy.type OnReplenish only when updateStrategy is present', async () => {
    const [plain, withStrategy] = await kube.applyServerSide([pool('plain'), pool('strategy', { updateStrategy: {} })], MANAGER);
    expect(plain.spec.replicas).toBe(1);
    expect(plain.spec.updateStrategy).toBeUndefined();
    expect(withStrategy.spec.updateStrategy).toEqual({ type: 'OnReplenish' });
  });

  test('SandboxClaim: lifecycle.shutdownPolicy Retain only when lifecycle is present', async () => {
    const [plain, withLifecycle] = await kube.applyServerSide([claim('plain'), claim('lifecycle', { lifecycle: {} })], MANAGER);
    expect(plain.spec.lifecycle).toBeUndefined();
    expect(withLifecycle.spec.lifecycle).toEqual({ shutdownPolicy: 'Retain' });
  });
});

describe('invalid objects are refused with the schema or CEL message', () => {
  const cases: Array<[string, () => object, RegExp]> = [
    // enums
    ['Sandbox operatingMode enum', () => sandbox('x', { operatingMode: 'Paused' }), /spec.operatingMode: Unsupported value: "Paused": supported values: "Running", "Suspended"/],
    ['Sandbox shutdownPolicy enum', () => sandbox('x', { shutdownPolicy: 'Destroy' }), /spec.shutdownPolicy: Unsupported value: "Destroy"/],
    ['template networkPolicyManagement enum', () => template('x', { networkPolicyManagement: 'Auto' }), /spec.networkPolicyManagement: Unsupported value: "Auto"/],
    ['template envVarsInjectionPolicy enum', () => template('x', { envVarsInjectionPolicy: 'Sometimes' }), /spec.envVarsInjectionPolicy: Unsupported value: "Sometimes": supported values: "Allowed", "Overrides", "Disallowed"/],
    ['template volumeClaimTemplatesPolicy enum', () => template('x', { volumeClaimTemplatesPolicy: 'Maybe' }), /spec.volumeClaimTemplatesPolicy: Unsupported value: "Maybe"/],
    ['pool updateStrategy.type enum', () => pool('x', { updateStrategy: { type: 'Rolling' } }), /spec.updateStrategy.type: Unsupported value: "Rolling": supported values: "Recreate", "OnReplenish"/],
    ['claim lifecycle.shutdownPolicy enum', () => claim('x', { lifecycle: { shutdownPolicy: 'Later' } }), /spec.lifecycle.shutdownPolicy: Unsupported value: "Later": supported values: "Delete", "DeleteForeground", "Retain"/],
    // required fields
    ['spec required', () => ({ ...sandbox('x'), spec: undefined }), /spec: Required value/],
    ['Sandbox podTemplate required', () => ({ ...sandbox('x'), spec: { service: true } }), /spec.podTemplate: Required value/],
    ['podTemplate.spec required', () => sandbox('x', { podTemplate: { metadata: {} } }), /spec.podTemplate.spec: Required value/],
    ['PodSpec containers required', () => template('x', { podTemplate: { spec: { hostname: 'h' } } }), /spec.podTemplate.spec.containers: Required value/],
    ['pool sandboxTemplateRef required', () => ({ ...pool('x'), spec: { replicas: 1 } }), /spec.sandboxTemplateRef: Required value/],
    ['pool sandboxTemplateRef.name required', () => pool('x', { sandboxTemplateRef: {} }), /spec.sandboxTemplateRef.name: Required value/],
    ['claim warmPoolRef required', () => ({ ...claim('x'), spec: { env: [] } }), /spec.warmPoolRef: Required value/],
    ['claim env value required', () => claim('x', { env: [{ name: 'A' }] }), /spec.env\[0\].value: Required value/],
    ['VCT spec required', () => sandbox('x', { volumeClaimTemplates: [{ metadata: { name: 'data' } }] }), /spec.volumeClaimTemplates\[0\].spec: Required value/],
    // minimums, types and formats
    ['pool replicas minimum', () => pool('x', { replicas: -1 }), /spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0/],
    ['claim ttlSecondsAfterFinished minimum', () => claim('x', { lifecycle: { ttlSecondsAfterFinished: -5 } }), /spec.lifecycle.ttlSecondsAfterFinished in body should be greater than or equal to 0/],
    ['pool replicas type', () => pool('x', { replicas: 'three' }), /spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer/],
    ['Sandbox shutdownTime format', () => sandbox('x', { shutdownTime: 'tomorrow' }), /spec.shutdownTime: Invalid value: "tomorrow": spec.shutdownTime in body must be of type date-time/],
    ['claim shutdownTime format', () => claim('x', { lifecycle: { shutdownTime: '12/01/2026' } }), /spec.lifecycle.shutdownTime in body must be of type date-time/],
    // the embedded PodSpec is a real, structural schema: unknown fields and wrong types are caught
    ['unknown PodSpec field (strict validation)', () => sandbox('x', { podTemplate: { spec: { containers: [{ name: 'm', image: 'i' }], containerz: [] } } }), /unknown field "spec.podTemplate.spec.containerz"/],
    ['container port type', () => sandbox('x', { podTemplate: { spec: { containers: [{ name: 'm', image: 'i', ports: [{ containerPort: 'http' }] }] } } }), /containerPort in body must be of type integer/],
    ['PVC resources quantity pattern', () => sandbox('x', { volumeClaimTemplates: [{ metadata: { name: 'd' }, spec: { resources: { requests: { storage: 'ten gigs' } } } }] }), /storage.*(should match|quantities must match)/],
    // our CEL rule: a Sandbox asking for a Service needs a DNS-1035 name
    // (the error names spec.service, the field that asked for the Service, not "<nil>")
    ['CEL: Service needs a DNS-1035 name', () => sandbox('1-starts-with-digit', { service: true }), /spec.service: Invalid value: .*metadata.name must be a DNS-1035 label/],
    ['CEL: Service needs at most 63 characters', () => sandbox('s'.repeat(64), { service: true }), /spec.service: Invalid value: .*metadata.name must be a DNS-1035 label.*set spec.service to false/],
  ];

  test.each(cases)('%s', async (_name, make, message) => {
    expect(await refusal(make())).toMatch(message);
  });

  test('the CEL Service rule refuses nothing upstream could run: long names without a Service pass', async () => {
    expect(await refusal(sandbox('s'.repeat(64)))).toBeUndefined();
    expect(await refusal(sandbox('ok-name', { service: true }))).toBeUndefined();
  });

  test('CEL: volumeClaimTemplates is immutable (transition rule, checked on update)', async () => {
    const vct = (size: string) => [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } } }];
    await kube.applyServerSide([sandbox('immutable', { volumeClaimTemplates: vct('1Gi') })], MANAGER);
    await expect(kube.applyServerSide([sandbox('immutable', { volumeClaimTemplates: vct('2Gi') })], MANAGER))
      .rejects.toThrow(/volumeClaimTemplates is immutable/);
    // Other fields stay mutable.
    const [updated] = await kube.applyServerSide([sandbox('immutable', { volumeClaimTemplates: vct('1Gi'), operatingMode: 'Suspended' })], MANAGER);
    expect(updated.spec.operatingMode).toBe('Suspended');
  });

  test('status conditions: reason pattern and status enum are enforced on the status subresource', async () => {
    await kube.applyServerSide([sandbox('status-check')], MANAGER);
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/status-check/status`;
    const condition = { type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'ok', lastTransitionTime: '2026-11-29T12:00:00Z' };
    const bad = await api.request('PATCH', path, { status: { conditions: [{ ...condition, reason: 'not valid!' }] } });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body)).toMatch(/status.conditions\[0\].reason: Invalid value: .*in body should match/);
    const badStatus = await api.request('PATCH', path, { status: { conditions: [{ ...condition, status: 'Maybe' }] } });
    expect(JSON.stringify(badStatus.body)).toMatch(/Unsupported value: \\"Maybe\\"/);
    const good = await api.request('PATCH', path, { status: { conditions: [condition] } });
    expect(good.status).toBe(200);
  });
});

describe('kubectl', () => {
  test('kubectl scale drives a SandboxWarmPool through its scale subresource', async () => {
    await kube.applyServerSide([pool('scalable', { replicas: 2 })], MANAGER);
    await kube.kubectl(['scale', 'sandboxwarmpool/scalable', '--replicas=5', '-n', ns]);
    const obj = await kube.getJson(['swp', 'scalable', '-n', ns]);
    expect(obj.spec.replicas).toBe(5);
    const selector = `agents.x-k8s.io/warm-pool-sandbox=${NameHash.of('scalable')}`;
    await api.call('PATCH', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/scalable/status`,
      { status: { replicas: 4, readyReplicas: 3, selector } });
    const scale = await api.call('GET', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/scalable/scale`);
    expect(scale.spec.replicas).toBe(5);
    expect(scale.status).toEqual({ replicas: 4, selector });
  });

  test('kubectl get shows the printer columns', async () => {
    await kube.applyServerSide([sandbox('columns'), claim('columns-claim')], MANAGER);
    const ready = { type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready', lastTransitionTime: '2026-11-29T12:00:00Z' };
    await api.call('PATCH', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/columns/status`, { status: { conditions: [ready] } });
    await api.call('PATCH', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims/columns-claim/status`,
      { status: { conditions: [ready], sandbox: { name: 'columns' } } });
    const table = async (args: string[]) => (await kube.kubectl(['get', ...args, '-n', ns])).trim().split('\n').map((l) => l.trim().split(/\s+/));
    const sandboxes = await table(['sandbox', 'columns']);
    expect(sandboxes[0]).toEqual(['NAME', 'READY', 'REASON', 'AGE']);
    expect(sandboxes[1].slice(0, 3)).toEqual(['columns', 'True', 'DependenciesReady']);
    const claims = await table(['sandboxclaim', 'columns-claim']);
    expect(claims[0]).toEqual(['NAME', 'READY', 'SANDBOX', 'REASON', 'AGE']);
    expect(claims[1].slice(0, 4)).toEqual(['columns-claim', 'True', 'columns', 'DependenciesReady']);
    await kube.applyServerSide([pool('columns-pool', { replicas: 3 })], MANAGER);
    await api.call('PATCH', `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxwarmpools/columns-pool/status`,
      { status: { replicas: 3, readyReplicas: 2 } });
    const pools = await table(['swp', 'columns-pool']);
    expect(pools[0]).toEqual(['NAME', 'READY', 'DESIRED', 'AGE']);
    expect(pools[1].slice(0, 3)).toEqual(['columns-pool', '2', '3']);
  });
});

describe('garbage collection (kube-controller-manager)', () => {
  test('deleting a SandboxClaim garbage-collects the Sandbox it controls', async () => {
    const [owner] = await kube.applyServerSide([claim('gc-owner')], MANAGER);
    const ownerReferences = [{
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', name: 'gc-owner', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true,
    }];
    // Only the operator gives a Sandbox a claim as owner (the bundle's ownership policy, applied above, refuses anyone else).
    const dependent = sandbox('gc-dependent', {}, { metadata: { name: 'gc-dependent', namespace: ns, ownerReferences } });
    await kube.kubectl(['create', '-f', '-', '--as=system:serviceaccount:agent-sandbox-system:agent-sandbox-controller', '--as-group=system:masters'],
      { input: JSON.stringify(dependent) });
    await kube.kubectl(['delete', 'sandboxclaim', 'gc-owner', '-n', ns, '--wait=false']);
    await waitFor(async () => (await kube.tryGetJson(['sandbox', 'gc-dependent', '-n', ns])) === undefined, 90_000, 'the dependent Sandbox to be garbage-collected');
  });
});
