/**
 * The install's ValidatingAdmissionPolicy on a real API server: the synthesized policy, its Deny
 * binding and the opt-out ClusterRole are applied as shipped, then two ServiceAccounts write
 * Sandboxes and SandboxTemplates. `author` may create and update them; `trusted` may too, and also
 * holds the shipped `agent-sandbox-allow-privileged` ClusterRole through a RoleBinding. Every refused
 * case is refused for both with a message naming the field; only `trusted`'s annotation waives the
 * host-access rules, and nobody's waives the router labels.
 */
import { Testing } from 'cdk8s';
import { serviceAccountKubeconfig } from './operator/bundle-rbac';
import { AgentSandboxSystem } from '../../src/install';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { Kube, waitFor } from '../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const admin = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const FIELD_MANAGER = 'admission-policy-test';
const ANNOTATION = AgentSandboxSystem.ALLOW_PRIVILEGED_ANNOTATION;
let ns: string;
let author: ApiClient;
let trusted: ApiClient;
let shipped: any[];
let counter = 0;

const SANDBOXES = 'apis/agents.x-k8s.io/v1beta1';
const TEMPLATES = 'apis/extensions.agents.x-k8s.io/v1beta1';

function objectOf(kind: 'Sandbox' | 'SandboxTemplate', pod: Record<string, unknown>, labels?: object, annotations?: object): any {
  counter += 1;
  return {
    apiVersion: kind === 'Sandbox' ? 'agents.x-k8s.io/v1beta1' : 'extensions.agents.x-k8s.io/v1beta1',
    kind,
    metadata: { name: `${kind.toLowerCase()}-${counter}`, ...(annotations ? { annotations } : {}) },
    spec: {
      podTemplate: {
        ...(labels ? { metadata: { labels } } : {}),
        spec: { containers: [{ name: 'main', image: 'busybox', ports: [{ containerPort: 8888 }] }], ...pod },
      },
    },
  };
}

const collection = (o: any) => `/${o.kind === 'Sandbox' ? SANDBOXES : TEMPLATES}/namespaces/${ns}/${o.kind === 'Sandbox' ? 'sandboxes' : 'sandboxtemplates'}`;

/** Create `o` as `client`; the HTTP status and the server's message. */
async function create(client: ApiClient, o: any): Promise<{ status: number; message: string }> {
  const res = await client.request<any>('POST', collection(o), o);
  return { status: res.status, message: res.body?.message ?? '' };
}

const container = (extra: object) => ({ name: 'main', image: 'busybox', ...extra });

// [what, pod spec fields, field the message must name]
const REFUSED: Array<[string, Record<string, unknown>, string]> = [
  ['hostNetwork', { hostNetwork: true }, 'spec.podTemplate.spec.hostNetwork: is true'],
  ['hostPID', { hostPID: true }, 'spec.podTemplate.spec.hostPID: is true'],
  ['hostIPC', { hostIPC: true }, 'spec.podTemplate.spec.hostIPC: is true'],
  ['a hostPath volume', { volumes: [{ name: 'scratch', emptyDir: {} }, { name: 'root', hostPath: { path: '/' } }] }, 'spec.podTemplate.spec.volumes[1].hostPath (volume "root")'],
  ['a privileged container', { containers: [container({ name: 'a' }), container({ name: 'b', securityContext: { privileged: true } })] }, 'spec.podTemplate.spec.containers[1].securityContext.privileged (container "b")'],
  ['privilege escalation in an init container', { initContainers: [container({ name: 'setup', securityContext: { allowPrivilegeEscalation: true } })] }, 'spec.podTemplate.spec.initContainers[0].securityContext.allowPrivilegeEscalation (container "setup")'],
  ['a privileged ephemeral container', { ephemeralContainers: [container({ name: 'debug', securityContext: { privileged: true } })] }, 'spec.podTemplate.spec.ephemeralContainers[0].securityContext.privileged (container "debug")'],
  ['SYS_ADMIN', { containers: [container({ securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'SYS_ADMIN'] } } })] }, 'spec.podTemplate.spec.containers[0].securityContext.capabilities.add (container "main") adds SYS_ADMIN: only AUDIT_WRITE'],
  ['CAP_NET_ADMIN spelled with its prefix', { containers: [container({ securityContext: { capabilities: { add: ['CAP_NET_ADMIN'] } } })] }, 'adds CAP_NET_ADMIN'],
  ['a Windows host process (Pod)', { securityContext: { windowsOptions: { hostProcess: true } } }, 'spec.podTemplate.spec.securityContext.windowsOptions.hostProcess: is true'],
  ['a Windows host process (container)', { containers: [container({ securityContext: { windowsOptions: { hostProcess: true } } })] }, 'spec.podTemplate.spec.containers[0].securityContext.windowsOptions.hostProcess (container "main")'],
  ['a hostPort', { containers: [container({ ports: [{ containerPort: 8888, hostPort: 80 }] })] }, 'spec.podTemplate.spec.containers[0].ports[*].hostPort (container "main")'],
];

beforeAll(async () => {
  ns = await kube.createNamespace('admission');
  const chart = Testing.chart();
  new AgentSandboxSystem(chart, 'install', {});
  const all = Testing.synth(chart);
  shipped = all.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy') || o.metadata.name === AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE);
  expect(shipped.map((o) => o.kind).sort()).toEqual([
    'ClusterRole', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding',
  ]);
  await kube.applyServerSide(shipped, FIELD_MANAGER);

  const writer = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'sandbox-writer', namespace: ns },
    rules: [
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['create', 'get', 'update', 'patch'] },
      { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxtemplates', 'sandboxclaims'], verbs: ['create', 'get', 'update', 'patch'] },
    ],
  };
  const binding = (name: string, roleKind: string, role: string, accounts: string[]) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: role },
    subjects: accounts.map((a) => ({ kind: 'ServiceAccount', name: a, namespace: ns })),
  });
  await kube.applyServerSide([
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'author', namespace: ns } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'trusted', namespace: ns } },
    writer,
    binding('writers', 'Role', 'sandbox-writer', ['author', 'trusted']),
    binding('trusted-allow-privileged', 'ClusterRole', AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE, ['trusted']),
  ], FIELD_MANAGER);
  author = new ApiClient(connectionFromKubeconfig(await serviceAccountKubeconfig(kube, admin, ns, 'author', `admission-author-${ns}`)));
  trusted = new ApiClient(connectionFromKubeconfig(await serviceAccountKubeconfig(kube, admin, ns, 'trusted', `admission-trusted-${ns}`)));
  // The API server loads a new policy asynchronously: wait until it refuses.
  await waitFor(async () => (await create(author, objectOf('Sandbox', { hostNetwork: true }))).status === 403, 60_000, 'the policy to take effect');
}, 120_000);

afterAll(async () => {
  // The policy is cluster-wide: take it away so later test files see the API server as before.
  for (const o of shipped ?? []) {
    const group = o.kind === 'ClusterRole' ? 'apis/rbac.authorization.k8s.io/v1/clusterroles' : `apis/admissionregistration.k8s.io/v1/${o.kind.toLowerCase()}s`;
    await admin.request('DELETE', `/${group}/${o.metadata.name}`);
  }
  author?.close();
  trusted?.close();
  if (ns) await kube.deleteNamespace(ns);
  admin.close();
});

test.each(['agent-sandbox-pod-hardening', 'agent-sandbox-claim-pod-labels'])('the admissionregistration v1 API serves %s, with no type-checking warnings', async (name) => {
  const path = `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`;
  expect((await admin.call('GET', path)).spec.validations.length).toBeGreaterThan(0);
  const checked = await waitFor(async () => {
    const p = await admin.call('GET', path);
    return p.status?.observedGeneration === p.metadata.generation ? p : undefined;
  }, 30_000, 'the policy to be type-checked');
  expect(checked.status.typeChecking?.expressionWarnings ?? []).toEqual([]);
});

test('a template\'s secure-defaults opt-out list must name known defaults', async () => {
  const key = 'agents.x-k8s.io/secure-defaults-opt-out';
  const bad = await create(author, objectOf('SandboxTemplate', {}, undefined, { [key]: 'runAsNonRoot, seccomp,dropCaps' }));
  expect(bad.status).toBe(422);
  expect(bad.message).toContain(`metadata.annotations["${key}"]: seccomp, dropCaps is not a secure default; list any of runAsNonRoot, seccompProfile, allowPrivilegeEscalation, dropCapabilities`);
  expect((await create(author, objectOf('SandboxTemplate', {}, undefined, { [key]: 'runAsNonRoot, seccompProfile,' }))).status).toBe(201);
});

test('a claim\'s additionalPodMetadata may not carry the router Pod labels', async () => {
  const claim = (name: string, labels: object) => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name },
    spec: { sandboxTemplateRef: { name: 'any' }, warmPoolRef: { name: 'any' }, additionalPodMetadata: { labels } },
  });
  const url = `/${TEMPLATES}/namespaces/${ns}/sandboxclaims`;
  const refused = await author.request<any>('POST', url, claim('impostor', { app: 'sandbox-router' }));
  expect(refused).toMatchObject({ status: 403, body: { message: expect.stringContaining('spec.additionalPodMetadata.labels carry a label of the sandbox router\'s Pods (app=sandbox-router)') } });
  expect(await author.request<any>('POST', url, claim('fine', { 'sandbox.users.io/team': 'a' }))).toMatchObject({ status: 201 });
});

describe.each(['Sandbox', 'SandboxTemplate'] as const)('%s', (kind) => {
  test.each(REFUSED)('%s is refused, naming the field, even with the annotation from a user without the verb', async (_, pod, field) => {
    const plain = await create(author, objectOf(kind, pod));
    expect(plain.status).toBe(403);
    expect(plain.message).toContain(field);
    expect(plain.message).toContain(`annotates it ${ANNOTATION}: "true"`);

    const annotated = await create(author, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }));
    expect(annotated.status).toBe(403);
    expect(annotated.message).toContain(field);
    expect(annotated.message).toContain(`annotation is ignored: system:serviceaccount:${ns}:author may not allow-privileged`);
  });

  test.each(REFUSED)('%s is admitted with the annotation from a user granted the ClusterRole', async (_, pod) => {
    expect(await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }))).toMatchObject({ status: 201 });
    // The annotation must say "true".
    expect((await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'yes' }))).status).toBe(403);
  });

  test('safe pods are admitted for anyone: hardened contexts, explicit falses, the allowed capabilities', async () => {
    const safe: Array<Record<string, unknown>> = [
      {},
      { hostNetwork: false, hostPID: false, hostIPC: false, volumes: [{ name: 'work', emptyDir: {} }] },
      {
        initContainers: [container({ name: 'setup', securityContext: { privileged: false, allowPrivilegeEscalation: false } })],
        containers: [container({ securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'chown', 'CAP_SETUID'] } }, ports: [{ containerPort: 80 }] })],
      },
    ];
    for (const pod of safe) expect(await create(author, objectOf(kind, pod, { app: 'agent' }))).toMatchObject({ status: 201 });
  });

  test('the router Pod labels are refused for everyone, the annotation notwithstanding', async () => {
    for (const client of [author, trusted]) {
      const res = await create(client, objectOf(kind, {}, { app: 'sandbox-router', team: 'x' }, { [ANNOTATION]: 'true' }));
      expect(res.status).toBe(403);
      expect(res.message).toContain('spec.podTemplate.metadata.labels carry a label of the sandbox router\'s Pods (app=sandbox-router)');
    }
    // Another value of the same key is fine.
    expect(await create(author, objectOf(kind, {}, { app: 'sandbox-router-client' }))).toMatchObject({ status: 201 });
  });
});

test('updates: a pod template edit is checked; metadata-only updates of an opted-out object pass', async () => {
  const safe = objectOf('Sandbox', {});
  expect((await create(author, safe)).status).toBe(201);
  const edit = await author.request<any>('PATCH', `${collection(safe)}/${safe.metadata.name}`,
    { spec: { podTemplate: { spec: { hostNetwork: true } } } }, { patchType: 'merge' });
  expect(edit.status).toBe(403);
  expect(edit.body.message).toContain('spec.podTemplate.spec.hostNetwork');

  const waived = objectOf('Sandbox', { hostPID: true }, undefined, { [ANNOTATION]: 'true' });
  expect((await create(trusted, waived)).status).toBe(201);
  const relabel = await author.request<any>('PATCH', `${collection(waived)}/${waived.metadata.name}`,
    { metadata: { labels: { owner: 'me' } } }, { patchType: 'merge' });
  expect(relabel.status).toBe(200);
  // Dropping the annotation is a change the policy re-checks.
  const unwaive = await trusted.request<any>('PATCH', `${collection(waived)}/${waived.metadata.name}`,
    { metadata: { annotations: { [ANNOTATION]: null } } }, { patchType: 'merge' });
  expect(unwaive.status).toBe(403);
  expect(unwaive.body.message).toContain('spec.podTemplate.spec.hostPID');
});
