/**
 * The chart guards against a real kube-apiserver: one client-side `kubectl apply -f` of a chart's
 * output, document by document in file order, on a cluster that does not have the namespace yet.
 */
import { ApiObject, Chart, Testing } from 'cdk8s';
import * as kplus from 'cdk8s-plus-30';
import { SandboxTemplate } from '../../src';
import { Kube, KubectlError } from '../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const made: string[] = [];

afterAll(async () => {
  for (const ns of made) await kube.deleteNamespace(ns);
});

/** A tenant chart: a cdk8s-plus Secret and ServiceAccount made before the Namespace they live in. */
function tenant(withLibrary: boolean): { ns: string; objects: any[] } {
  const ns = `order-${Math.random().toString(36).slice(2, 8)}`;
  made.push(ns);
  const chart = new Chart(Testing.app(), 'tenant', { namespace: ns });
  new kplus.DockerConfigSecret(chart, 'pull', { metadata: { name: 'regcred' }, data: { auths: {} } });
  new kplus.ServiceAccount(chart, 'agent', { metadata: { name: 'agent' } });
  new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  if (withLibrary) new SandboxTemplate(chart, 'template', { metadata: { name: 'python' }, containers: [{ image: 'python:3.12-slim' }] });
  return { ns, objects: Testing.synth(chart) };
}

/** What `kubectl apply -f out.yaml` does with the chart's file: one document after the other. */
const applyFile = (objects: any[]) => kube.kubectl(['apply', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n---\n') });

test('with the library in the chart, the first apply creates everything', async () => {
  const { ns, objects } = tenant(true);
  expect(objects.map((o) => o.kind)).toEqual(['Namespace', 'Secret', 'ServiceAccount', 'SandboxTemplate']);
  expect(objects[0].metadata).not.toHaveProperty('namespace');
  await applyFile(objects);
  expect((await kube.getJson(['secret', 'regcred', '-n', ns])).type).toBe('kubernetes.io/dockerconfigjson');
  expect(await kube.getJson(['serviceaccount', 'agent', '-n', ns])).toBeDefined();
  expect(await kube.getJson(['sandboxtemplate', 'python', '-n', ns])).toBeDefined();
});

test('control: the same objects in the order cdk8s alone writes them fail on a fresh cluster', async () => {
  const { ns, objects } = tenant(false);
  expect(objects.map((o) => o.kind)).toEqual(['Secret', 'ServiceAccount', 'Namespace']);
  const failure = await applyFile(objects).then(() => undefined, (e) => e);
  expect(failure).toBeInstanceOf(KubectlError);
  expect(failure.stderr).toMatch(new RegExp(`namespaces "${ns}" not found`));
});
