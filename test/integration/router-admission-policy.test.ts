/**
 * The router's admission policy on a real API server. The router's ClusterRole has `patch` on every
 * Sandbox, for two writes only: the last-activity stamp and the resume of an idle-suspended Sandbox
 * whose idlePolicy allows it. RouterRbac synthesizes the bundle (with `router`, in this test's
 * namespace) and applies the router's ServiceAccount, ClusterRole and binding and its
 * `agent-sandbox-router` policy and binding (named for the namespace, so nothing cluster-wide of
 * other files is touched), and the requests are made with a real token of that ServiceAccount: the API server
 * authorizes them with the bundle's RBAC and the policy sees the router's user name. Every other
 * change is refused with a message naming it; the same change by the admin is admitted.
 */
import { RouterRbac } from './data-plane/router-rbac';
import { sandboxManifest } from './operator/sandbox-api';
import { SandboxAnnotations } from '../../src/api/labels';
import { ROUTER_POLICY_NAME } from '../../src/install/admission-policy';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { Kube, waitFor } from '../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const admin = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const MAY = 'the sandbox router may only stamp agents.x-k8s.io/last-activity and resume a Sandbox whose idlePolicy allows it; it changed ';
const LAST_ACTIVITY = SandboxAnnotations.LAST_ACTIVITY;
const SUSPENDED_AT = SandboxAnnotations.IDLE_SUSPENDED_AT;
let ns: string;
let policyName: string;
let rbac: RouterRbac;
let router: ApiClient;
let counter = 0;

const path = (name: string) => `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/${name}`;
const patch = (client: ApiClient, name: string, body: object) => client.request<any>('PATCH', path(name), body, { patchType: 'merge' });
const now = () => new Date().toISOString();

/** A Sandbox created by the admin: suspended for idleness unless `mode` says otherwise. */
async function sandbox(spec: Record<string, unknown>, mode = 'Suspended'): Promise<any> {
  counter += 1;
  const o = sandboxManifest(`sb-${counter}`, { operatingMode: mode, ...spec });
  o.metadata.labels = { team: 'a' };
  o.metadata.annotations = { note: 'x', [LAST_ACTIVITY]: now(), ...(mode === 'Suspended' ? { [SUSPENDED_AT]: now() } : {}) };
  return admin.call('POST', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`, o);
}

/** The router's resume, as it sends it: preconditions, Running, the idle mark removed, a fresh stamp. */
const resumeOf = (o: any) => ({
  metadata: { resourceVersion: o.metadata.resourceVersion, uid: o.metadata.uid, annotations: { [SUSPENDED_AT]: null, [LAST_ACTIVITY]: now() } },
  spec: { operatingMode: 'Running' },
});
const IDLE = { idlePolicy: { suspendAfterSeconds: 60 } };

beforeAll(async () => {
  ns = await kube.createNamespace('router-admission');
  // The bundle's router ServiceAccount, ClusterRole and binding, and its router policy and binding.
  rbac = await RouterRbac.apply(kube, admin, ns);
  policyName = rbac.admissionPolicy;
  expect(policyName).toBe(`${ROUTER_POLICY_NAME}-${ns}`);
  router = new ApiClient(connectionFromKubeconfig(rbac.kubeconfig));
  // The API server loads a new policy asynchronously: wait until it refuses.
  const probe = await sandbox(IDLE);
  // A label value of its own each time: a patch that changes nothing passes any policy.
  await waitFor(async () => (await patch(router, probe.metadata.name, { metadata: { labels: { probe: String(Date.now()) } } })).status === 403,
    60_000, 'the router policy to take effect');
}, 120_000);

afterAll(async () => {
  await rbac?.remove();
  router?.close();
  if (ns) await kube.deleteNamespace(ns);
  admin.close();
});

test('the policy type-checks against the Sandbox CRD without warnings', async () => {
  const checked = await waitFor(async () => {
    const p = await admin.call('GET', `${ADMISSION}/validatingadmissionpolicies/${policyName}`);
    return p.status?.observedGeneration === p.metadata.generation ? p : undefined;
  }, 30_000, 'the policy to be type-checked');
  expect(checked.status.typeChecking?.expressionWarnings ?? []).toEqual([]);
});

test('the router may stamp last-activity on any Sandbox, and resume an idle-suspended one whose idlePolicy allows it', async () => {
  for (const spec of [IDLE, {}]) {
    const o = await sandbox(spec, 'Running');
    const stamp = await patch(router, o.metadata.name, { metadata: { annotations: { [LAST_ACTIVITY]: now() } } });
    expect({ spec, status: stamp.status, message: stamp.body.message }).toEqual({ spec, status: 200, message: undefined });
  }
  for (const spec of [IDLE, { idlePolicy: { suspendAfterSeconds: 60, resumeOnRequest: true } }]) {
    const o = await sandbox(spec);
    const res = await patch(router, o.metadata.name, resumeOf(o));
    expect({ spec, status: res.status, message: res.body.message }).toEqual({ spec, status: 200, message: undefined });
    expect(res.body.spec.operatingMode).toBe('Running');
    expect(res.body.metadata.annotations[SUSPENDED_AT]).toBeUndefined();
  }
});

test('any other change by the router is refused, naming it; the same change by the admin is admitted', async () => {
  const o = await sandbox(IDLE);
  const name = o.metadata.name;
  const image = { spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'evil:latest', ports: [{ name: 'http', containerPort: 8888 }] }] } } } };
  const refused: Array<[string, object, string]> = [
    ['the pod template\'s image', image, 'spec.podTemplate'],
    ['the pod template in a resume', { ...resumeOf(o), spec: { ...image.spec, operatingMode: 'Running' } }, 'spec.podTemplate'],
    ['the idle policy', { spec: { idlePolicy: { suspendAfterSeconds: 1 } } }, 'spec.idlePolicy'],
    ['the shutdown time', { spec: { shutdownTime: '2030-01-01T00:00:00Z' } }, 'spec.shutdownTime'],
    ['a label', { metadata: { labels: { team: 'b' } } }, 'metadata.labels["team"]'],
    ['a new label', { metadata: { labels: { app: 'sandbox-router' } } }, 'metadata.labels["app"]'],
    ['another annotation', { metadata: { annotations: { note: 'y', [LAST_ACTIVITY]: now() } } }, 'metadata.annotations["note"]'],
    ['a removed annotation', { metadata: { annotations: { note: null } } }, 'metadata.annotations["note"]'],
    ['a finalizer', { metadata: { finalizers: ['example.com/hold'] } }, 'metadata.finalizers'],
    ['an ownerReference', { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: o.metadata.uid }] } }, 'metadata.ownerReferences'],
  ];
  for (const [what, body, field] of refused) {
    const res = await patch(router, name, body);
    expect({ what, status: res.status, message: res.body.message }).toEqual({ what, status: 403, message: expect.stringContaining(`${MAY}${field}`) });
  }
  const after = await admin.call('GET', path(name));
  expect(after.spec).toEqual(o.spec);
  expect(after.metadata.labels).toEqual(o.metadata.labels);
  expect(after.metadata.annotations).toEqual(o.metadata.annotations);

  // Negative control: the admin (not the router) makes the same pod template change.
  const byAdmin = await patch(admin, name, image);
  expect({ status: byAdmin.status, image: byAdmin.body.spec?.podTemplate.spec.containers[0].image }).toEqual({ status: 200, image: 'evil:latest' });
});

test('the router may not resume a Sandbox without an idlePolicy or with resumeOnRequest false, nor suspend one', async () => {
  const cases: Array<[string, any, string]> = [
    ['no idlePolicy', await sandbox({}), 'spec.operatingMode from Suspended to Running (it has no idlePolicy)'],
    ['resumeOnRequest false', await sandbox({ idlePolicy: { suspendAfterSeconds: 60, resumeOnRequest: false } }),
      'spec.operatingMode from Suspended to Running (its idlePolicy has resumeOnRequest: false)'],
  ];
  for (const [what, o, message] of cases) {
    const res = await patch(router, o.metadata.name, resumeOf(o));
    expect({ what, status: res.status, message: res.body.message }).toEqual({ what, status: 403, message: expect.stringContaining(`${MAY}${message}`) });
    expect((await admin.call('GET', path(o.metadata.name))).spec.operatingMode).toBe('Suspended');
    // Negative control: the admin may resume it.
    expect((await patch(admin, o.metadata.name, { spec: { operatingMode: 'Running' } })).status).toBe(200);
  }
  const running = await sandbox(IDLE, 'Running');
  const suspend = await patch(router, running.metadata.name, { spec: { operatingMode: 'Suspended' } });
  expect({ status: suspend.status, message: suspend.body.message }).toEqual({ status: 403, message: expect.stringContaining(`${MAY}spec.operatingMode from Running to Suspended`) });
});
