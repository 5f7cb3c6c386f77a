/**
 * The install's ValidatingAdmissionPolicy on a real API server: the synthesized policy, its Deny
 * binding and the opt-out ClusterRole are applied as shipped, then two ServiceAccounts write
 * Sandboxes and SandboxTemplates. `author` may create and update them; `trusted` may too, and also
 * holds the shipped `agent-sandbox-allow-privileged` ClusterRole through a RoleBinding. Every refused
 * case is refused for both with a message naming the field; only `trusted`'s annotation waives the
 * baseline rules, anyone's secure-defaults opt-out waives the matching restricted rule (and only
 * that one), and nobody's waives the router labels. The opt-in credentials policy is applied, shown
 * refusing, and taken away again, after which the same objects are admitted.
 */
import { Testing } from 'cdk8s';
import { serviceAccountKubeconfig } from './operator/bundle-rbac';
import { AgentSandboxSystem } from '../../src/install';
import { OPERATOR_SANDBOX_LABELS } from '../../src/install/admission-policy';
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

function objectOf(kind: 'Sandbox' | 'SandboxTemplate', pod: Record<string, unknown>, labels?: object, annotations?: object, podAnnotations?: object): any {
  counter += 1;
  const podMetadata = { ...(labels ? { labels } : {}), ...(podAnnotations ? { annotations: podAnnotations } : {}) };
  return {
    apiVersion: kind === 'Sandbox' ? 'agents.x-k8s.io/v1beta1' : 'extensions.agents.x-k8s.io/v1beta1',
    kind,
    metadata: { name: `${kind.toLowerCase()}-${counter}`, ...(annotations ? { annotations } : {}) },
    spec: {
      podTemplate: {
        ...(Object.keys(podMetadata).length > 0 ? { metadata: podMetadata } : {}),
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

const OPT_OUT = 'agents.x-k8s.io/secure-defaults-opt-out';
const APPARMOR_MAIN = 'container.apparmor.security.beta.kubernetes.io/main';

// Pod Security Standards baseline (and restricted-only volume types): waived only by the allow-privileged annotation.
// [what, pod spec fields, field the message must name, pod template annotations]
type RefusedRow = [string, Record<string, unknown>, string, Record<string, string>?];
const REFUSED: RefusedRow[] = [
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
  ['seccomp Unconfined (Pod)', { securityContext: { seccompProfile: { type: 'Unconfined' } } }, 'spec.podTemplate.spec.securityContext.seccompProfile.type: is Unconfined'],
  ['seccomp Unconfined (init container)', { initContainers: [container({ name: 'setup', securityContext: { seccompProfile: { type: 'Unconfined' } } })] },
    'spec.podTemplate.spec.initContainers[0].securityContext.seccompProfile.type (container "setup"): is Unconfined'],
  ['AppArmor Unconfined (Pod)', { securityContext: { appArmorProfile: { type: 'Unconfined' } } }, 'spec.podTemplate.spec.securityContext.appArmorProfile.type: is not RuntimeDefault or Localhost'],
  ['AppArmor Unconfined (container)', { containers: [container({ securityContext: { appArmorProfile: { type: 'Unconfined' } } })] },
    'spec.podTemplate.spec.containers[0].securityContext.appArmorProfile.type (container "main")'],
  ['the AppArmor annotation "unconfined"', {}, `spec.podTemplate.metadata.annotations["${APPARMOR_MAIN}"]: is not runtime/default or localhost/<profile>`, { [APPARMOR_MAIN]: 'unconfined' }],
  ['SELinux type spc_t (Pod)', { securityContext: { seLinuxOptions: { type: 'spc_t' } } }, 'spec.podTemplate.spec.securityContext.seLinuxOptions: sets a user, a role or a type other than container_t'],
  ['an SELinux role (container)', { containers: [container({ securityContext: { seLinuxOptions: { type: 'container_t', role: 'sysadm_r' } } })] },
    'spec.podTemplate.spec.containers[0].securityContext.seLinuxOptions (container "main")'],
  ['an SELinux user (ephemeral container)', { ephemeralContainers: [container({ name: 'debug', securityContext: { seLinuxOptions: { user: 'system_u' } } })] },
    'spec.podTemplate.spec.ephemeralContainers[0].securityContext.seLinuxOptions (container "debug")'],
  ['the unsafe sysctl kernel.core_pattern', { securityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }, { name: 'kernel.core_pattern', value: '|/tmp/x' }] } },
    'spec.podTemplate.spec.securityContext.sysctls[1].name (sysctl "kernel.core_pattern"): is not a sysctl the baseline profile allows'],
  ['procMount Unmasked', { containers: [container({ securityContext: { procMount: 'Unmasked' } })] }, 'spec.podTemplate.spec.containers[0].securityContext.procMount (container "main"): is not Default'],
  ['a liveness probe of another host', { containers: [container({ livenessProbe: { httpGet: { host: '169.254.169.254', path: '/', port: 80 } } })] },
    'spec.podTemplate.spec.containers[0].livenessProbe.httpGet.host (container "main"): is set'],
  ['a preStop hook on another host (sidecar)', { initContainers: [container({ name: 'side', restartPolicy: 'Always', lifecycle: { preStop: { tcpSocket: { host: '10.0.0.1', port: 22 } } } })] },
    'spec.podTemplate.spec.initContainers[0].lifecycle.preStop.tcpSocket.host (container "side")'],
  ['an nfs volume', { volumes: [{ name: 'scratch', emptyDir: {} }, { name: 'share', nfs: { server: 'nfs.example', path: '/' } }] },
    'spec.podTemplate.spec.volumes[1].nfs (volume "share"): is a volume type the restricted profile forbids'],
];

// Restricted controls whose secure default the operator applies: the opt-out entry that waives each.
// [what, pod spec fields, field the message must name, opt-out entry]
const RESTRICTED: Array<[string, Record<string, unknown>, string, string]> = [
  ['runAsUser 0 (Pod)', { securityContext: { runAsUser: 0 } }, 'spec.podTemplate.spec.securityContext.runAsUser: is 0, which runs the containers as root', 'runAsNonRoot'],
  ['runAsNonRoot false (Pod)', { securityContext: { runAsNonRoot: false } }, 'spec.podTemplate.spec.securityContext.runAsNonRoot: is false', 'runAsNonRoot'],
  ['runAsUser 0 (init container)', { initContainers: [container({ name: 'setup', securityContext: { runAsUser: 0 } })] },
    'spec.podTemplate.spec.initContainers[0].securityContext.runAsUser (container "setup"): is 0', 'runAsNonRoot'],
  ['runAsNonRoot false (container)', { containers: [container({ securityContext: { runAsNonRoot: false } })] },
    'spec.podTemplate.spec.containers[0].securityContext.runAsNonRoot (container "main"): is false', 'runAsNonRoot'],
  ['a drop without ALL', { containers: [container({ securityContext: { capabilities: { drop: ['NET_RAW'] } } })] },
    'spec.podTemplate.spec.containers[0].securityContext.capabilities.drop (container "main"): does not include "ALL"', 'dropCapabilities'],
  ['adding CHOWN back after drop ALL', { containers: [container({ securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'CHOWN'] } } })] },
    'spec.podTemplate.spec.containers[0].securityContext.capabilities.add (container "main") adds CHOWN: the restricted profile lets a container add only NET_BIND_SERVICE', 'dropCapabilities'],
];

beforeAll(async () => {
  ns = await kube.createNamespace('admission');
  const chart = Testing.chart();
  new AgentSandboxSystem(chart, 'install', {});
  const all = Testing.synth(chart);
  shipped = all.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy') || o.metadata.name === AgentSandboxSystem.ALLOW_PRIVILEGED_CLUSTER_ROLE);
  expect(shipped.map((o) => o.kind).sort()).toEqual([
    'ClusterRole', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding',
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
  // The API server loads each new policy and binding asynchronously: wait until each of the three refuses.
  await waitFor(async () => (await create(author, objectOf('Sandbox', { hostNetwork: true }))).status === 403, 60_000, 'the pod-hardening policy to take effect');
  await waitFor(async () => {
    counter += 1;
    const probe = {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: `probe-${counter}` },
      spec: { warmPoolRef: { name: 'any' }, additionalPodMetadata: { labels: { app: 'sandbox-router' } } },
    };
    return (await author.request<any>('POST', `/${TEMPLATES}/namespaces/${ns}/sandboxclaims`, probe)).status === 403;
  }, 60_000, 'the claim pod-labels policy to take effect');
  await waitFor(async () => {
    const o = objectOf('Sandbox', {});
    o.metadata.ownerReferences = [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', name: 'probe', uid: '00000000-0000-4000-8000-000000000000' }];
    return (await create(author, o)).status === 403;
  }, 60_000, 'the ownership policy to take effect');
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

/** The policy as served once the API server has type-checked it; fails on any expression warning. */
async function expectTypeChecked(name: string): Promise<void> {
  const path = `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`;
  expect((await admin.call('GET', path)).spec.validations.length).toBeGreaterThan(0);
  const checked = await waitFor(async () => {
    const p = await admin.call('GET', path);
    return p.status?.observedGeneration === p.metadata.generation ? p : undefined;
  }, 30_000, 'the policy to be type-checked');
  expect(checked.status.typeChecking?.expressionWarnings ?? []).toEqual([]);
}

test.each(['agent-sandbox-pod-hardening', 'agent-sandbox-claim-pod-labels', 'agent-sandbox-ownership'])('the admissionregistration v1 API serves %s, with no type-checking warnings', async (name) => {
  await expectTypeChecked(name);
});

test.each(['SandboxTemplate', 'Sandbox'] as const)('a %s\'s secure-defaults opt-out list must name known defaults', async (kind) => {
  const bad = await create(author, objectOf(kind, {}, undefined, { [OPT_OUT]: 'runAsNonRoot, seccomp,dropCaps' }));
  expect(bad.status).toBe(422);
  expect(bad.message).toContain(`metadata.annotations["${OPT_OUT}"]: seccomp, dropCaps is not a secure default; list any of runAsNonRoot, seccompProfile, allowPrivilegeEscalation, dropCapabilities`);
  expect((await create(author, objectOf(kind, {}, undefined, { [OPT_OUT]: 'runAsNonRoot, seccompProfile,' }))).status).toBe(201);
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

test('a claim\'s additionalPodMetadata may not turn AppArmor off; the confined values pass', async () => {
  const claim = (name: string, annotations: object) => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name },
    spec: { warmPoolRef: { name: 'any' }, additionalPodMetadata: { annotations } },
  });
  const url = `/${TEMPLATES}/namespaces/${ns}/sandboxclaims`;
  const refused = await author.request<any>('POST', url, claim('unconfined', { [APPARMOR_MAIN]: 'unconfined' }));
  expect(refused.status).toBe(403);
  expect(refused.body.message).toContain(`spec.additionalPodMetadata.annotations["${APPARMOR_MAIN}"]: is not runtime/default or localhost/<profile>`);
  expect(await author.request<any>('POST', url, claim('confined', { [APPARMOR_MAIN]: 'localhost/agent' }))).toMatchObject({ status: 201 });
  expect(await author.request<any>('POST', url, claim('default', { [APPARMOR_MAIN]: 'runtime/default', note: 'x' }))).toMatchObject({ status: 201 });
});

describe.each(['Sandbox', 'SandboxTemplate'] as const)('%s', (kind) => {
  // Rest parameters: a callback with more parameters than a row has would be taken for a `done` callback.
  test.each(REFUSED)('%s is refused, naming the field, even with the annotation from a user without the verb', async (...[, pod, field, podAnnotations]: RefusedRow) => {
    const plain = await create(author, objectOf(kind, pod, undefined, undefined, podAnnotations));
    expect(plain.status).toBe(403);
    expect(plain.message).toContain(field);
    expect(plain.message).toContain(`annotates it ${ANNOTATION}: "true"`);

    const annotated = await create(author, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }, podAnnotations));
    expect(annotated.status).toBe(403);
    expect(annotated.message).toContain(field);
    expect(annotated.message).toContain(`annotation is ignored: system:serviceaccount:${ns}:author may not allow-privileged`);
    // The secure-defaults opt-out waives none of these.
    expect((await create(author, objectOf(kind, pod, undefined, { [OPT_OUT]: 'runAsNonRoot,seccompProfile,allowPrivilegeEscalation,dropCapabilities' }, podAnnotations))).status).toBe(403);
  });

  test.each(REFUSED)('%s is admitted with the annotation from a user granted the ClusterRole', async (...[, pod, , podAnnotations]: RefusedRow) => {
    expect(await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }, podAnnotations))).toMatchObject({ status: 201 });
    // The annotation must say "true".
    expect((await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'yes' }, podAnnotations))).status).toBe(403);
  });

  test.each(RESTRICTED)('restricted: %s is refused, naming the field and the opt-out that would allow it', async (_, pod, field, optOut) => {
    const plain = await create(author, objectOf(kind, pod));
    expect(plain.status).toBe(403);
    expect(plain.message).toContain(field);
    expect(plain.message).toContain(`list ${optOut} in its ${OPT_OUT} annotation`);
    // Opting out of another default waives nothing here.
    const other = optOut === 'runAsNonRoot' ? 'dropCapabilities' : 'runAsNonRoot';
    expect((await create(author, objectOf(kind, pod, undefined, { [OPT_OUT]: `seccompProfile,${other}` }))).status).toBe(403);
  });

  test.each(RESTRICTED)('restricted: %s is admitted for anyone with its secure-defaults opt-out, and with allow-privileged from a trusted user', async (_, pod, __, optOut) => {
    expect(await create(author, objectOf(kind, pod, undefined, { [OPT_OUT]: `seccompProfile, ${optOut}` }))).toMatchObject({ status: 201 });
    expect(await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }))).toMatchObject({ status: 201 });
  });

  test('restricted: root is admitted in a user namespace (hostUsers: false), as the standard allows', async () => {
    const root = RESTRICTED.filter(([, , , optOut]) => optOut === 'runAsNonRoot');
    expect(root).toHaveLength(4);
    for (const [, pod] of root) {
      expect(await create(author, objectOf(kind, { ...pod, hostUsers: false }))).toMatchObject({ status: 201 });
      expect((await create(author, objectOf(kind, { ...pod, hostUsers: true }))).status).toBe(403);
    }
  });

  test('safe pods are admitted for anyone: hardened contexts, explicit falses and allowed values of every control', async () => {
    const probe = { httpGet: { path: '/healthz', port: 8888 }, tcpSocket: { port: 8888, host: '' } };
    const safe: Array<[Record<string, unknown>, Record<string, string>?]> = [
      [{}],
      [{ hostNetwork: false, hostPID: false, hostIPC: false, volumes: [{ name: 'work', emptyDir: {} }] }],
      [{
        initContainers: [container({ name: 'setup', securityContext: { privileged: false, allowPrivilegeEscalation: false } })],
        containers: [container({ securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } }, ports: [{ containerPort: 80 }] })],
      }],
      [{
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
          appArmorProfile: { type: 'RuntimeDefault' },
          seLinuxOptions: { type: 'container_t' },
          sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }, { name: 'kernel.shm_rmid_forced', value: '1' }],
        },
        containers: [container({
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            procMount: 'Default',
            seccompProfile: { type: 'Localhost', localhostProfile: 'agent.json' },
            appArmorProfile: { type: 'Localhost', localhostProfile: 'agent' },
            seLinuxOptions: { type: 'container_init_t', level: 's0:c1,c2' },
          },
          livenessProbe: { httpGet: probe.httpGet },
          readinessProbe: { tcpSocket: probe.tcpSocket },
          lifecycle: { preStop: { httpGet: probe.httpGet } },
        })],
        volumes: [
          { name: 'cm', configMap: { name: 'c' } }, { name: 'sec', secret: { secretName: 's' } }, { name: 'pvc', persistentVolumeClaim: { claimName: 'p' } },
          { name: 'down', downwardAPI: { items: [] } }, { name: 'proj', projected: { sources: [] } }, { name: 'csi', csi: { driver: 'x.example' } },
          { name: 'img', image: { reference: 'busybox' } }, { name: 'bare' },
          { name: 'eph', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } } },
        ],
      }, { [APPARMOR_MAIN]: 'runtime/default', 'container.apparmor.security.beta.kubernetes.io/side': 'localhost/agent' }],
    ];
    for (const [pod, podAnnotations] of safe) expect(await create(author, objectOf(kind, pod, { app: 'agent' }, undefined, podAnnotations))).toMatchObject({ status: 201 });
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

describe('ownership: a Sandbox\'s ownerReferences and system labels are the operator\'s', () => {
  const OPERATOR = 'system:serviceaccount:agent-sandbox-system:agent-sandbox-controller';
  const POOL_LABEL = 'agents.x-k8s.io/warm-pool-sandbox';
  const CLAIM_UID = 'agents.x-k8s.io/claim-uid';
  const ONLY = 'only the agent-sandbox operator sets them';
  // Real owners: the garbage collector deletes a Sandbox whose owners do not exist.
  const owners: Record<string, any> = {};
  const ref = (kind: string, name: string, controller = true) => ({
    apiVersion: kind === 'ConfigMap' ? 'v1' : 'extensions.agents.x-k8s.io/v1beta1', kind, name, uid: owners[`${kind}/${name}`].metadata.uid, controller,
  });
  let claimRef: any;
  let poolRef: any;
  let mineRef: any;
  let cmRef: any;
  beforeAll(async () => {
    const ext = (kind: string, name: string, spec: object) => ({ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind, metadata: { name, namespace: ns }, spec });
    const created = await kube.applyServerSide([
      ext('SandboxClaim', 'victim-claim', { warmPoolRef: { name: 'any' } }),
      ext('SandboxClaim', 'mine', { warmPoolRef: { name: 'any' } }),
      ext('SandboxWarmPool', 'pool', { sandboxTemplateRef: { name: 'any' } }),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns } },
    ], FIELD_MANAGER);
    for (const o of created) owners[`${o.kind}/${o.metadata.name}`] = o;
    claimRef = ref('SandboxClaim', 'victim-claim');
    mineRef = ref('SandboxClaim', 'mine');
    poolRef = ref('SandboxWarmPool', 'pool');
    cmRef = ref('ConfigMap', 'cm', false);
  });
  const sandboxOf = (metadata: object) => {
    const o = objectOf('Sandbox', {});
    o.metadata = { ...o.metadata, ...metadata };
    return o;
  };
  /**
   * `kubectl` as `user` (impersonated by the admin, in system:masters so RBAC lets it through):
   * the admission policy sees that user name. Resolves the exit and stderr.
   */
  async function kubectlAs(user: string, args: string[], input?: string): Promise<{ ok: boolean; stderr: string }> {
    try {
      await kube.kubectl([...args, '-n', ns, `--as=${user}`, '--as-group=system:masters', '--as-group=system:authenticated'], { input });
      return { ok: true, stderr: '' };
    } catch (e: any) {
      return { ok: false, stderr: String(e.stderr ?? e.message) };
    }
  }
  const createAs = (user: string, o: object) => kubectlAs(user, ['create', '-f', '-'], JSON.stringify(o));
  const patchAs = (user: string, name: string, patch: object, type = 'merge') =>
    kubectlAs(user, ['patch', 'sandbox', name, `--type=${type}`, '-p', JSON.stringify(patch)]);
  const patch = (client: ApiClient, name: string, body: object) =>
    client.request<any>('PATCH', `/${SANDBOXES}/namespaces/${ns}/sandboxes/${name}`, body, { patchType: 'merge' });
  const get = (name: string) => admin.call('GET', `/${SANDBOXES}/namespaces/${ns}/sandboxes/${name}`);

  test.each([['SandboxClaim', 'victim-claim'], ['SandboxWarmPool', 'pool']])('creating a Sandbox owned by a %s is refused for users, naming the reference', async (kind, ownerName) => {
    const owner = ref(kind, ownerName);
    for (const client of [author, trusted]) {
      const res = await create(client, sandboxOf({ ownerReferences: [cmRef, owner] }));
      expect(res.status).toBe(403);
      expect(res.message).toContain(`metadata.ownerReferences[1] (${kind} "${owner.name}"): a Sandbox may not be created with an ownerReference to a SandboxClaim or SandboxWarmPool, ${ONLY}`);
    }
    // Negative control: the same reference as the operator is admitted.
    expect(await createAs(OPERATOR, sandboxOf({ ownerReferences: [owner] }))).toEqual({ ok: true, stderr: '' });
  });

  test('an ownerReference to another kind, even as controller, is not the policy\'s business', async () => {
    const o = sandboxOf({ ownerReferences: [{ ...cmRef, controller: true }] });
    expect(await create(author, o)).toMatchObject({ status: 201 });
  });

  test.each(OPERATOR_SANDBOX_LABELS.map((l) => [l]))('creating a Sandbox labelled %s is refused for users, naming the label', async (label) => {
    const res = await create(author, sandboxOf({ labels: { team: 'a', [label]: 'x' } }));
    expect(res.status).toBe(403);
    expect(res.message).toContain(`metadata.labels["${label}"]: a Sandbox may not be created with this label, ${ONLY}`);
    // Negative controls: the operator may; other labels under the same prefix (created-by) are not system ones here.
    expect((await createAs(OPERATOR, sandboxOf({ labels: { [label]: 'x' } }))).ok).toBe(true);
    expect(await create(author, sandboxOf({ labels: { 'agents.x-k8s.io/created-by': 'python-client', 'team': 'a' } }))).toMatchObject({ status: 201 });
  });

  test('updates by users may not re-point, add, drop or relabel; other metadata and spec edits pass', async () => {
    const member = sandboxOf({ ownerReferences: [poolRef], labels: { [POOL_LABEL]: 'hash', 'agents.x-k8s.io/sandbox-template-ref-hash': 't' } });
    const claimed = sandboxOf({ ownerReferences: [claimRef], labels: { [CLAIM_UID]: claimRef.uid } });
    const plain = sandboxOf({ labels: { team: 'a' } });
    for (const o of [member, claimed]) expect((await createAs(OPERATOR, o)).ok).toBe(true);
    expect((await create(author, plain)).status).toBe(201);

    const refused: Array<[string, object, string]> = [
      ['point a claimed Sandbox back at the pool', { metadata: { ownerReferences: [poolRef], labels: { [POOL_LABEL]: 'hash' } } }, 'metadata.ownerReferences: may not be changed'],
      ['point the victim at another claim', { metadata: { ownerReferences: [mineRef] } }, 'metadata.ownerReferences: may not be changed'],
      ['drop the claim reference', { metadata: { ownerReferences: null } }, 'metadata.ownerReferences: may not be changed'],
      ['change the claim-uid label', { metadata: { labels: { [CLAIM_UID]: 'other' } } }, `metadata.labels["${CLAIM_UID}"]: may not be added, changed or removed, ${ONLY}`],
      ['remove the claim-uid label', { metadata: { labels: { [CLAIM_UID]: null } } }, `metadata.labels["${CLAIM_UID}"]: may not be added, changed or removed`],
      ['add the warm-pool label', { metadata: { labels: { [POOL_LABEL]: 'hash' } } }, `metadata.labels["${POOL_LABEL}"]: may not be added, changed or removed`],
    ];
    for (const [what, body, message] of refused) {
      const res = await patch(author, claimed.metadata.name, body);
      expect({ what, status: res.status, message: res.body.message }).toEqual({ what, status: 403, message: expect.stringContaining(message) });
    }
    expect(await get(claimed.metadata.name)).toMatchObject({ metadata: { ownerReferences: [claimRef], labels: { [CLAIM_UID]: claimRef.uid } } });
    const grab = await patch(author, plain.metadata.name, { metadata: { ownerReferences: [claimRef] } });
    expect(grab.status).toBe(403);
    const join = await patch(author, plain.metadata.name, { metadata: { labels: { [POOL_LABEL]: 'hash' } } });
    expect(join.body.message).toContain(`metadata.labels["${POOL_LABEL}"]: may not be added`);
    const leave = await patch(author, member.metadata.name, { metadata: { labels: { [POOL_LABEL]: null } } });
    expect(leave.status).toBe(403);

    // Negative controls: what suspend, resume and ordinary labelling do, on claimed and pool Sandboxes alike.
    for (const name of [claimed.metadata.name, member.metadata.name, plain.metadata.name]) {
      const ok = await patch(author, name, { metadata: { labels: { team: 'b' }, annotations: { note: 'x' } }, spec: { operatingMode: 'Suspended' } });
      expect({ name, status: ok.status }).toEqual({ name, status: 200 });
    }
    // The operator hands a member to a claim: ownerReference and labels in one patch.
    const handover = { metadata: { ownerReferences: [claimRef], labels: { [POOL_LABEL]: null, [CLAIM_UID]: claimRef.uid } } };
    const adopt = await patchAs(OPERATOR, member.metadata.name, handover);
    expect(adopt).toEqual({ ok: true, stderr: '' });
  });

  test.each(['system:serviceaccount:kube-system:generic-garbage-collector', 'system:kube-controller-manager'])(
    'the garbage collector (%s) may remove references and clear blockOwnerDeletion, nothing more', async (gc) => {
      const other = cmRef;
      const o = sandboxOf({ ownerReferences: [claimRef, other], labels: { [CLAIM_UID]: claimRef.uid } });
      expect((await createAs(OPERATOR, o)).ok).toBe(true);
      const name = o.metadata.name;
      // Refused for it too: adding a reference, re-pointing one, making one the controller, a system label.
      const add = await patchAs(gc, name, { metadata: { ownerReferences: [claimRef, other, { ...poolRef, controller: false }] } });
      expect(add.ok).toBe(false);
      expect(add.stderr).toContain('metadata.ownerReferences: may not be changed');
      expect((await patchAs(gc, name, { metadata: { ownerReferences: [{ ...claimRef, uid: poolRef.uid }, other] } })).ok).toBe(false);
      expect((await patchAs(gc, name, { metadata: { ownerReferences: [{ ...other, controller: true }] } })).ok).toBe(false);
      expect((await patchAs(gc, name, { metadata: { labels: { [CLAIM_UID]: null } } })).stderr).toContain(`metadata.labels["${CLAIM_UID}"]`);
      // What it does when an owner is deleted with blocking or orphaning: both pass.
      const blocking = sandboxOf({ ownerReferences: [{ ...claimRef, blockOwnerDeletion: true }] });
      expect((await createAs(OPERATOR, blocking)).ok).toBe(true);
      expect(await patchAs(gc, blocking.metadata.name, { metadata: { ownerReferences: [{ ...claimRef, blockOwnerDeletion: false }] } })).toEqual({ ok: true, stderr: '' });
      expect(await patchAs(gc, name, { metadata: { ownerReferences: [other] } })).toEqual({ ok: true, stderr: '' });
      expect((await get(name)).metadata.ownerReferences).toEqual([other]);
      // The same removal by a user is refused.
      expect((await patch(author, name, { metadata: { ownerReferences: null } })).status).toBe(403);
    });
});

describe('the opt-in credentials policy', () => {
  const WAIVER = AgentSandboxSystem.ALLOW_CREDENTIALS_ANNOTATION;
  const NAME = 'agent-sandbox-credentials';
  let objects: any[] = [];
  // [what, pod spec fields, field the message must name]
  const NAMED: Array<[string, Record<string, unknown>, string]> = [
    ['a ServiceAccount outside the allow-list', { serviceAccountName: 'deployer' },
      'spec.podTemplate.spec.serviceAccountName: "deployer": is a ServiceAccount sandbox authors may not run as; the platform lets sandbox authors use default, runner'],
    ['the deprecated serviceAccount field', { serviceAccount: 'deployer' }, 'spec.podTemplate.spec.serviceAccount: "deployer"'],
    ['a service-account token', { automountServiceAccountToken: true }, 'spec.podTemplate.spec.automountServiceAccountToken: is true'],
    ['a projected service-account token', { volumes: [{ name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }] },
      'spec.podTemplate.spec.volumes[0].projected.sources[*].serviceAccountToken (volume "tok")'],
    ['a secret volume', { volumes: [{ name: 'cfg', configMap: { name: 'c' } }, { name: 'creds', secret: { secretName: 'db' } }] },
      'spec.podTemplate.spec.volumes[1].secret.secretName (volume "creds"): names a Secret sandbox authors may not read; the platform lets sandbox authors use shared'],
    ['a projected secret', { volumes: [{ name: 'mix', projected: { sources: [{ secret: { name: 'shared' } }, { secret: { name: 'db' } }] } }] },
      'spec.podTemplate.spec.volumes[0].projected.sources[*].secret.name (volume "mix")'],
    ['a CSI node-publish secret', { volumes: [{ name: 'smb', csi: { driver: 'smb.csi.k8s.io', nodePublishSecretRef: { name: 'smb-creds' } } }] },
      'spec.podTemplate.spec.volumes[0].csi.nodePublishSecretRef.name (volume "smb")'],
    ['env from a Secret key (init container)', { initContainers: [container({ name: 'setup', env: [{ name: 'A', value: 'x' }, { name: 'PW', valueFrom: { secretKeyRef: { name: 'db', key: 'pw' } } }] })] },
      'spec.podTemplate.spec.initContainers[0].env[*].valueFrom.secretKeyRef.name (container "setup")'],
    ['envFrom a Secret', { containers: [container({ envFrom: [{ configMapRef: { name: 'c' } }, { secretRef: { name: 'db' } }] })] },
      'spec.podTemplate.spec.containers[0].envFrom[*].secretRef.name (container "main")'],
  ];
  const dryRun = (client: ApiClient, o: any) => client.request<any>('POST', `${collection(o)}?dryRun=All`, o);

  beforeAll(async () => {
    const chart = Testing.chart();
    new AgentSandboxSystem(chart, 'install', { credentialsPolicy: true, credentialsPolicyServiceAccounts: ['runner'], credentialsPolicySecrets: ['shared'] });
    objects = Testing.synth(chart).filter((o) => o.metadata.name === NAME || o.metadata.name === AgentSandboxSystem.ALLOW_CREDENTIALS_CLUSTER_ROLE);
    expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    await kube.applyServerSide([...objects, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'trusted-allow-credentials', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: AgentSandboxSystem.ALLOW_CREDENTIALS_CLUSTER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: 'trusted', namespace: ns }],
    }], FIELD_MANAGER);
    await waitFor(async () => (await dryRun(author, objectOf('Sandbox', NAMED[0][1]))).status === 403, 60_000, 'the credentials policy to take effect');
  }, 120_000);

  afterAll(async () => {
    for (const o of objects) {
      const group = o.kind === 'ClusterRole' ? 'apis/rbac.authorization.k8s.io/v1/clusterroles' : `apis/admissionregistration.k8s.io/v1/${o.kind.toLowerCase()}s`;
      await admin.request('DELETE', `/${group}/${o.metadata.name}`);
    }
  });

  test('the admissionregistration v1 API serves it with no type-checking warnings', async () => {
    await expectTypeChecked(NAME);
  });

  describe.each(['Sandbox', 'SandboxTemplate'] as const)('%s', (kind) => {
    test.each(NAMED)('%s is refused, naming the field, even with the annotation from a user without the verb', async (_, pod, field) => {
      const plain = await create(author, objectOf(kind, pod));
      expect(plain.status).toBe(403);
      expect(plain.message).toContain(field);
      expect(plain.message).toContain(`annotates it ${WAIVER}: "true"`);
      const annotated = await create(author, objectOf(kind, pod, undefined, { [WAIVER]: 'true' }));
      expect(annotated.status).toBe(403);
      expect(annotated.message).toContain(`annotation is ignored: system:serviceaccount:${ns}:author may not allow-credentials`);
      // The hardening policy's waiver is another matter.
      expect((await create(trusted, objectOf(kind, pod, undefined, { [ANNOTATION]: 'true' }))).status).toBe(403);
    });

    test.each(NAMED)('%s is admitted with the annotation from a user granted the ClusterRole', async (_, pod) => {
      expect(await create(trusted, objectOf(kind, pod, undefined, { [WAIVER]: 'true' }))).toMatchObject({ status: 201 });
    });

    test('the allowed ServiceAccount and Secret, config maps and no token are admitted for anyone', async () => {
      const allowed = {
        serviceAccountName: 'runner',
        automountServiceAccountToken: false,
        volumes: [
          { name: 's', secret: { secretName: 'shared' } },
          { name: 'p', projected: { sources: [{ secret: { name: 'shared' } }, { configMap: { name: 'c' } }, { downwardAPI: { items: [] } }] } },
          { name: 'csi', csi: { driver: 'x.example' } },
        ],
        containers: [container({
          env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'shared', key: 'k' } } }, { name: 'C', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }],
          envFrom: [{ secretRef: { name: 'shared' } }, { configMapRef: { name: 'c' } }],
        })],
      };
      for (const pod of [{}, { serviceAccountName: 'default' }, allowed]) expect(await create(author, objectOf(kind, pod))).toMatchObject({ status: 201 });
    });
  });

  test('without it (its binding deleted) every refused pod is admitted', async () => {
    await admin.call('DELETE', `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${NAME}`);
    await waitFor(async () => (await dryRun(author, objectOf('Sandbox', NAMED[0][1]))).status === 201, 60_000, 'the credentials policy to stop applying');
    for (const kind of ['Sandbox', 'SandboxTemplate'] as const) {
      for (const [what, pod] of NAMED) expect({ what, status: (await dryRun(author, objectOf(kind, pod))).status }).toEqual({ what, status: 201 });
    }
  });
});
