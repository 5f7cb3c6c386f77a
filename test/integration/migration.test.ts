/**
 * Moving a cluster from upstream's release manifests (kubernetes-sigs/agent-sandbox, k8s/ rendered
 * with its kustomization, as the release's sandbox-with-extensions.yaml is) to this library's
 * bundle with `kubectl apply`: every object both install has keeps its UID (updated in place, not
 * pruned and recreated), the CRDs go on even where `status.storedVersions` still lists v1alpha1,
 * the webhook conversion is replaced, and custom resources created under upstream stay readable.
 *
 * This file starts its own control plane: it replaces the CRDs with upstream's, which the shared
 * one's other tests must not see.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Testing } from 'cdk8s';
import { AgentSandboxSystem } from '../../src';
import { ControlPlane, startControlPlane } from '../../tools/control-plane/control-plane';
import { ENV, Kube } from '../../tools/control-plane/kube';

/** The upstream release the migration starts from; the benchmark builds the same version's controller. */
const UPSTREAM = 'sigs.k8s.io/agent-sandbox@v0.5.6';
/** What upstream's release has and this bundle deliberately does not (no conversion webhook). */
const UPSTREAM_ONLY = ['Service/agent-sandbox-system/agent-sandbox-webhook-service'];

let cp: ControlPlane;
let kube: Kube;
let work: string;

beforeAll(async () => {
  cp = await startControlPlane({ nodes: 1, podRunner: false, binDir: process.env[ENV.binDir] });
  kube = new Kube({ kubeconfig: cp.kubeconfig, binDir: cp.binDir });
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'migration-'));
}, 180_000);

afterAll(async () => {
  await cp?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The upstream module's directory in the Go module cache (downloaded from the module proxy when absent). */
function upstreamModuleDir(): string {
  const out = execFileSync('go', ['mod', 'download', '-json', UPSTREAM], { cwd: os.tmpdir(), encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=mod' } });
  return JSON.parse(out).Dir;
}

const idOf = (o: any) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

function writeList(file: string, items: object[]): string {
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return file;
}

async function uidOf(o: any): Promise<string | undefined> {
  const args = [`${o.kind.toLowerCase()}.${o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : ''}`.replace(/\.$/, ''), o.metadata.name];
  if (o.metadata.namespace) args.push('-n', o.metadata.namespace);
  return (await kube.tryGetJson(args))?.metadata.uid;
}

test('upstream release manifests, then ours: nothing recreated, CRDs accepted with v1alpha1 stored, objects kept', async () => {
  // 1. Upstream's install, as its release renders it (kustomize), applied the way its README says.
  const rendered = await kube.kubectl(['kustomize', path.join(upstreamModuleDir(), 'k8s')]);
  const upstreamFile = path.join(work, 'upstream.yaml');
  // The image is a ko:// placeholder that upstream's release tooling replaces; any name does here.
  fs.writeFileSync(upstreamFile, rendered.replace(/ko:\/\/\S+/g, 'registry.example/agent-sandbox-controller:v0.5.6'));
  await kube.kubectl(['apply', '-f', upstreamFile]);
  const upstream: any[] = (await kube.getJson(['-f', upstreamFile])).items;
  for (const crd of upstream.filter((o) => o.kind === 'CustomResourceDefinition')) {
    await kube.wait([`crd/${crd.metadata.name}`, '--for=condition=Established']);
  }

  // A cluster that once stored v1alpha1 still lists it in storedVersions (upstream's storage version
  // was v1alpha1 before v1beta1 existed).
  await kube.kubectl(['patch', 'crd', 'sandboxes.agents.x-k8s.io', '--subresource=status', '--type=merge',
    '-p', JSON.stringify({ status: { storedVersions: ['v1alpha1', 'v1beta1'] } })]);

  // Custom resources created while upstream was installed.
  await kube.kubectl(['create', 'namespace', 'team-a']);
  const sandbox = await kube.create({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name: 'kept', namespace: 'team-a' },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.12-slim' }] } } },
  });
  const template = await kube.create({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: 'python', namespace: 'team-a' },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.12-slim' }] } } },
  });
  const before = new Map<string, string | undefined>();
  for (const o of upstream) before.set(idOf(o), await uidOf(o));

  // 2. Ours over it, the same way.
  const chart = Testing.chart();
  new AgentSandboxSystem(chart, 'system');
  const ours = Testing.synth(chart);
  await kube.kubectl(['apply', '-f', writeList(path.join(work, 'ours.json'), ours)]);

  // Every object both installs name is the same object, updated in place.
  const ourIds = new Set(ours.map(idOf));
  const shared = upstream.filter((o) => ourIds.has(idOf(o)));
  expect(upstream.filter((o) => !ourIds.has(idOf(o))).map(idOf)).toEqual(UPSTREAM_ONLY);
  for (const o of shared) {
    expect({ id: idOf(o), uid: await uidOf(o) }).toEqual({ id: idOf(o), uid: before.get(idOf(o)) });
  }

  // The CRDs are ours now: v1beta1 served and stored, v1alpha1 listed only, no webhook conversion.
  const crd = await kube.getJson(['crd', 'sandboxes.agents.x-k8s.io']);
  expect(crd.spec.versions.map((v: any) => [v.name, v.served, v.storage])).toEqual([['v1beta1', true, true], ['v1alpha1', false, false]]);
  expect(crd.spec.conversion).toEqual({ strategy: 'None' });
  expect(crd.status.storedVersions).toEqual(['v1alpha1', 'v1beta1']);

  // The Deployment's selector (immutable) matched, so it was updated, not refused.
  const deployment = await kube.getJson(['deployment', 'agent-sandbox-controller', '-n', 'agent-sandbox-system']);
  expect(deployment.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['agent-sandbox-controller']);
  expect(deployment.spec.template.spec.containers[0].args[0]).toBe('controller');

  // The custom resources are untouched and still served at v1beta1.
  expect((await kube.getJson(['sandbox', 'kept', '-n', 'team-a'])).metadata.uid).toBe(sandbox.metadata.uid);
  expect((await kube.getJson(['sandboxtemplate', 'python', '-n', 'team-a'])).metadata.uid).toBe(template.metadata.uid);
}, 300_000);
