/**
 * The router in a namespace of its own, end to end: the install bundle (namespace and router labels
 * changed) is synthesized, its router ServiceAccount and Deployment are applied, so
 * kube-controller-manager makes real router Pods, and the real operator runs with the controller
 * args the bundle rendered. The NetworkPolicy it writes for a template must select exactly those
 * Pods in that namespace, judged against the objects as the API server holds them (the Namespace's
 * `kubernetes.io/metadata.name` label is the API server's). The control plane enforces no policy,
 * so admission is decided here by label selection, as a CNI would decide it.
 */
import { Chart, Testing } from 'cdk8s';
import { BundleRbac } from './bundle-rbac';
import { ExtensionsApi, templateManifest } from './extensions-api';
import { AgentSandboxSystem } from '../../../src/install';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const ROUTER_LABELS = { 'app.kubernetes.io/name': 'sandbox-router', 'tier': 'edge' };
let routerNs: string;
let ns: string;
let rbac: BundleRbac;
let op: OperatorProcess;
let bundle: any[];

beforeAll(async () => {
  await ensureOperatorBundle();
  routerNs = await kube.createNamespace('edge');
  ns = await kube.createNamespace('router-policy');
  const chart = new Chart(Testing.app(), 'bundle');
  new AgentSandboxSystem(chart, 'system', { namespace: routerNs, createNamespace: false, router: { podLabels: ROUTER_LABELS, replicas: 2 } });
  bundle = Testing.synth(chart);
  rbac = await BundleRbac.apply(kube, api, { namespace: routerNs, extensions: true });
  const controller = bundle.find((o) => o.kind === 'Deployment' && o.metadata.name === 'agent-sandbox-controller');
  const [, ...args] = controller.spec.template.spec.containers[0].args as string[];
  op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args });
}, 240_000);

afterAll(async () => {
  const code = await op?.stop();
  // eslint-disable-next-line no-console
  console.log(`operator log: ${op?.logFile} (exit ${code}, ${op?.errors().length} error lines)`);
  for (const name of [ns, routerNs]) if (name) await kube.deleteNamespace(name);
  await rbac?.remove();
}, 120_000);

const matches = (selector: { matchLabels?: Record<string, string> }, labels: Record<string, string> | undefined) =>
  Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);

/** Whether one NetworkPolicy peer admits `pod`, living in `namespace` (an object as the API server returns it). */
const admits = (peer: any, pod: any, namespace: any) => peer.namespaceSelector !== undefined
  && matches(peer.namespaceSelector, namespace.metadata.labels) && matches(peer.podSelector ?? {}, pod.metadata.labels);

test('the operator run with the bundle\'s args admits the bundle\'s router Pods in their namespace, and nothing else', async () => {
  const routerObjects = bundle.filter((o) => ['ServiceAccount', 'Deployment'].includes(o.kind) && o.metadata.name === 'sandbox-router');
  expect(routerObjects).toHaveLength(2);
  await kube.applyServerSide(routerObjects, 'integration-test-router-policy');
  const selector = Object.entries(ROUTER_LABELS).map(([k, v]) => `${k}=${v}`).join(',');
  const routerPods = await waitFor(async () => {
    const pods = (await api.call('GET', `/api/v1/namespaces/${routerNs}/pods?labelSelector=${encodeURIComponent(selector)}`)).items;
    return pods.length === 2 ? pods : undefined;
  }, 60_000, 'the router Deployment\'s two Pods');

  const ext = new ExtensionsApi(api, ns);
  await ext.create('sandboxtemplates', templateManifest('edge-routed'));
  const policy = await waitFor(() => ext.networkPolicy('edge-routed-network-policy'), 30_000, 'the template\'s NetworkPolicy');
  const peers = policy.spec.ingress.flatMap((rule: any) => rule.from);
  const routerNamespace = await api.call('GET', `/api/v1/namespaces/${routerNs}`);
  for (const pod of routerPods) expect(peers.some((peer: any) => admits(peer, pod, routerNamespace))).toBe(true);

  // The same labels in the sandboxes' namespace, and an app=sandbox-router Pod beside the router: not admitted.
  const sandboxNamespace = await api.call('GET', `/api/v1/namespaces/${ns}`);
  const impostor = { metadata: { labels: { ...ROUTER_LABELS } } };
  const upstreamLabelled = { metadata: { labels: { app: 'sandbox-router' } } };
  expect(peers.some((peer: any) => admits(peer, impostor, sandboxNamespace))).toBe(false);
  expect(peers.some((peer: any) => admits(peer, upstreamLabelled, routerNamespace))).toBe(false);
});
