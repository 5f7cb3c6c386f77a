import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ApiObject, App, Chart, Testing, Yaml } from 'cdk8s';
import * as kplus from 'cdk8s-plus-30';
import { parseAllDocuments } from 'yaml';
import { SandboxCrds } from '../src/crds';
import { AgentSandboxSystem } from '../src/install';
import { Sandbox } from '../src/sandbox';
import { SandboxTemplate } from '../src/template';

const containers = [{ image: 'python:3.12-slim' }];
const parseYaml = (text: string): any[] => parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
const ids = (objs: any[]) => objs.map((o) => `${o.kind}/${o.metadata?.name}`);
const before = (order: string[], first: string, later: string) => {
  expect(order).toContain(first);
  expect(order).toContain(later);
  return order.indexOf(first) < order.indexOf(later);
};

describe('objects in a namespace come after the Namespace, whoever made them', () => {
  test('a cdk8s-plus Secret made before the system, in the same chart', () => {
    const chart = new Chart(Testing.app(), 'platform', { namespace: 'agent-sandbox-system' });
    new kplus.DockerConfigSecret(chart, 'pull', { metadata: { name: 'regcred' }, data: { auths: {} } });
    new kplus.ServiceAccount(chart, 'deployer', { metadata: { name: 'deployer' } });
    new AgentSandboxSystem(chart, 'system', { crds: false });
    const order = ids(Testing.synth(chart));
    expect(order[0]).toBe('Namespace/agent-sandbox-system');
    expect(before(order, 'Namespace/agent-sandbox-system', 'Secret/regcred')).toBe(true);
    expect(before(order, 'Namespace/agent-sandbox-system', 'ServiceAccount/deployer')).toBe(true);
  });

  test('control: without the library, cdk8s writes the Secret first', () => {
    const chart = new Chart(Testing.app(), 'plain', { namespace: 'team' });
    new kplus.DockerConfigSecret(chart, 'pull', { metadata: { name: 'regcred' }, data: { auths: {} } });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    expect(ids(Testing.synth(chart))).toEqual(['Secret/regcred', 'Namespace/team']);
  });

  test('a Namespace the user makes in a chart that uses the library orders everything in it too', () => {
    const chart = new Chart(Testing.app(), 'tenant', { namespace: 'team-a' });
    const template = new SandboxTemplate(chart, 'template', { metadata: { name: 'python' }, containers });
    new kplus.ConfigMap(chart, 'settings', { metadata: { name: 'settings' } });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } });
    const objs = Testing.synth(chart);
    expect(ids(objs)).toEqual(['Namespace/team-a', 'SandboxTemplate/python', 'ConfigMap/settings']);
    expect(template.apiObject.node.dependencies.map((d) => d.node.path)).toEqual(['tenant/ns']);
  });

  test('across charts: no dependency is added, so cdk8s keeps the file names; the user orders charts with addDependency', () => {
    const build = (ordered: boolean) => {
      const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'guards-')) });
      // Defined first, so cdk8s alone writes it first.
      const secrets = new Chart(app, 'secrets', { namespace: 'agent-sandbox-system' });
      new kplus.DockerConfigSecret(secrets, 'pull', { metadata: { name: 'regcred' }, data: { auths: {} } });
      const platform = new Chart(app, 'platform');
      new AgentSandboxSystem(platform, 'system', { crds: false });
      if (ordered) secrets.addDependency(platform);
      return app;
    };
    // A dependency across charts would make cdk8s number every file of the App (0000-platform.k8s.yaml):
    // the files GitOps tools point at keep their names instead.
    const plain = build(false);
    plain.synth();
    expect(fs.readdirSync(plain.outdir).sort()).toEqual(['platform.k8s.yaml', 'secrets.k8s.yaml']);
    expect(before(ids(parseYaml(build(false).synthYaml())), 'Secret/regcred', 'Namespace/agent-sandbox-system')).toBe(true);
    // The user's chart order is cdk8s's own: it holds, and the guard adds no cycle to it.
    const ordered = build(true);
    ordered.synth();
    const files = fs.readdirSync(ordered.outdir).sort();
    expect(files).toEqual(['0000-platform.k8s.yaml', '0001-secrets.k8s.yaml']);
    expect(ids(Yaml.load(path.join(ordered.outdir, files[1])))).toEqual(['Secret/regcred']);
    expect(before(ids(parseYaml(build(true).synthYaml())), 'Namespace/agent-sandbox-system', 'Secret/regcred')).toBe(true);
  });

  test('across charts without the library: the order cdk8s alone writes as well', () => {
    const app = Testing.app();
    const secrets = new Chart(app, 'secrets', { namespace: 'team' });
    new kplus.DockerConfigSecret(secrets, 'pull', { metadata: { name: 'regcred' }, data: { auths: {} } });
    const other = new Chart(app, 'other');
    new ApiObject(other, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    expect(ids(parseYaml(app.synthYaml()))).toEqual(['Secret/regcred', 'Namespace/team']);
  });

  test('charts that each carry the Namespace (alternative bundles) are not tied to each other', () => {
    const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'guards-')) });
    const bundle = (id: string) => {
      const chart = new Chart(app, id, { namespace: 'agent-sandbox-system' });
      new kplus.ConfigMap(chart, 'settings', { metadata: { name: `${id}-settings` } });
      new AgentSandboxSystem(chart, 'system', { crds: false });
    };
    bundle('plain');
    bundle('hardened');
    // A third chart without the Namespace: two charts have it, so neither is chosen.
    const extra = new Chart(app, 'extra', { namespace: 'agent-sandbox-system' });
    new kplus.ConfigMap(extra, 'settings', { metadata: { name: 'extra-settings' } });
    app.synth();
    expect(fs.readdirSync(app.outdir).sort()).toEqual(['extra.k8s.yaml', 'hardened.k8s.yaml', 'plain.k8s.yaml']);
    for (const id of ['plain', 'hardened']) {
      const order = ids(Yaml.load(path.join(app.outdir, `${id}.k8s.yaml`)));
      expect(before(order, 'Namespace/agent-sandbox-system', `ConfigMap/${id}-settings`)).toBe(true);
    }
  });

  test('an order the user gave the other way round wins (no cycle)', () => {
    const chart = new Chart(Testing.app(), 'odd', { namespace: 'team-a' });
    new SandboxTemplate(chart, 'template', { metadata: { name: 'python' }, containers });
    const cm = new kplus.ConfigMap(chart, 'settings', { metadata: { name: 'settings' } });
    const ns = new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } });
    ns.node.addDependency(cm);
    const order = ids(Testing.synth(chart));
    expect(before(order, 'ConfigMap/settings', 'Namespace/team-a')).toBe(true);
    expect(before(order, 'Namespace/team-a', 'SandboxTemplate/python')).toBe(true);
  });

  test('a cycle across charts is not made either', () => {
    const app = Testing.app();
    const a = new Chart(app, 'a', { namespace: 'team-b' });
    const b = new Chart(app, 'b', { namespace: 'team-b' });
    new SandboxTemplate(b, 'template', { metadata: { name: 'python' }, containers });
    new ApiObject(b, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b' } });
    new kplus.ConfigMap(a, 'settings', { metadata: { name: 'settings' } });
    b.addDependency(a); // b after a, as the user said: a's ConfigMap cannot also come after b's Namespace
    expect(ids(parseYaml(app.synthYaml()))).toEqual(['ConfigMap/settings', 'Namespace/team-b', 'SandboxTemplate/python']);
  });
});

describe('CRDs come before the custom resources of their kinds', () => {
  test('a Sandbox defined before the CRDs, in the same chart', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    new Sandbox(chart, 'sandbox', { metadata: { name: 'box' }, containers });
    new SandboxCrds(chart, 'crds', { extensions: false });
    expect(ids(Testing.synth(chart))).toEqual(['CustomResourceDefinition/sandboxes.agents.x-k8s.io', 'Sandbox/box']);
  });

  test('only within a chart: a CRD in another chart does not number the chart files', () => {
    const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'guards-')) });
    new Sandbox(new Chart(app, 'workloads', { namespace: 'agents' }), 'sandbox', { metadata: { name: 'box' }, containers });
    new SandboxCrds(new Chart(app, 'crds'), 'crds', { extensions: false });
    app.synth();
    expect(fs.readdirSync(app.outdir).sort()).toEqual(['crds.k8s.yaml', 'workloads.k8s.yaml']);
  });

  test('a custom resource of a CRD the user defines', () => {
    const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
    new Sandbox(chart, 'sandbox', { metadata: { name: 'box' }, containers });
    new ApiObject(chart, 'widget', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } });
    new ApiObject(chart, 'crd', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { kind: 'Widget', plural: 'widgets' }, versions: [] },
    });
    expect(ids(Testing.synth(chart))).toEqual(['Sandbox/box', 'CustomResourceDefinition/widgets.example.com', 'Widget/w']);
  });
});

describe('cluster-scoped objects carry no metadata.namespace', () => {
  const tenant = () => {
    const chart = new Chart(Testing.app(), 'tenant', { namespace: 'team-a' });
    new SandboxTemplate(chart, 'template', { metadata: { name: 'python' }, containers });
    return chart;
  };

  test('the Chart\'s default namespace is dropped from cluster-scoped kinds, kept on namespaced ones', () => {
    const chart = tenant();
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } });
    new kplus.ClusterRole(chart, 'reader', { metadata: { name: 'reader' } });
    new ApiObject(chart, 'sc', { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast' }, provisioner: 'x' });
    new kplus.ConfigMap(chart, 'settings', { metadata: { name: 'settings' } });
    const objs = Testing.synth(chart);
    const meta = (id: string) => objs.find((o) => `${o.kind}/${o.metadata.name}` === id).metadata;
    for (const id of ['Namespace/team-a', 'ClusterRole/reader', 'StorageClass/fast']) expect(meta(id)).not.toHaveProperty('namespace');
    expect(meta('ConfigMap/settings').namespace).toBe('team-a');
    expect(meta('SandboxTemplate/python').namespace).toBe('team-a');
    expect(Testing.synth(chart)).toEqual(objs); // a second synth is the same (the patch is added once)
  });

  test('the kinds of a cluster-scoped CRD in the App count too', () => {
    const chart = tenant();
    new ApiObject(chart, 'crd', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.example.com' },
      spec: { group: 'example.com', scope: 'Cluster', names: { kind: 'Gadget', plural: 'gadgets' }, versions: [] },
    });
    new ApiObject(chart, 'gadget', { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g' } });
    new ApiObject(chart, 'widget', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } });
    const objs = Testing.synth(chart);
    expect(objs.find((o) => o.kind === 'Gadget').metadata).toEqual({ name: 'g' });
    expect(objs.find((o) => o.kind === 'Widget').metadata).toEqual({ name: 'w', namespace: 'team-a' });
  });

  test('an explicit other namespace on a cluster-scoped object fails, naming it and the fix', () => {
    const chart = tenant();
    new kplus.ClusterRole(chart, 'reader', { metadata: { name: 'reader', namespace: 'team-b' } });
    expect(() => Testing.synth(chart)).toThrow(
      /\[tenant\] ClusterRole "reader" \(tenant\/reader\/Resource\): metadata.namespace "team-b" is set, but a ClusterRole is cluster-scoped and has no namespace; remove metadata.namespace/);
  });

  test('control: a chart without the library keeps what cdk8s writes', () => {
    const chart = new Chart(Testing.app(), 'plain', { namespace: 'team-a' });
    new ApiObject(chart, 'ns', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } });
    new kplus.ClusterRole(chart, 'reader', { metadata: { name: 'reader', namespace: 'team-b' } });
    const objs = Testing.synth(chart);
    expect(objs.map((o) => o.metadata.namespace)).toEqual(['team-a', 'team-b']);
  });
});

describe('namespaces must be DNS-1123 labels', () => {
  test('a Chart namespace such as Bad_NS fails at synth, naming the Chart\'s namespace and the fix', () => {
    const chart = new Chart(Testing.app(), 'x', { namespace: 'Bad_NS' });
    new SandboxTemplate(chart, 'template', { metadata: { name: 'python' }, containers });
    expect(() => Testing.synth(chart)).toThrow(
      /\[x\] namespace: the Chart's namespace "Bad_NS" must consist of lowercase letters, digits and '-', and start and end with a letter or digit; .*so give the Chart a namespace that is a DNS-1123 label, such as "team-a"/);
  });

  test('valid neighbours: a label-shaped Chart namespace, and no namespace at all', () => {
    const ok = new Chart(Testing.app(), 'x', { namespace: 'bad-ns' });
    new SandboxTemplate(ok, 'template', { metadata: { name: 'python' }, containers });
    expect(Testing.synth(ok)[0].metadata.namespace).toBe('bad-ns');
    const none = new Chart(Testing.app(), 'y');
    new SandboxTemplate(none, 'template', { metadata: { name: 'python' }, containers });
    expect(Testing.synth(none)[0].metadata).not.toHaveProperty('namespace');
  });

  test('an explicit metadata.namespace that is not a label fails for any object of the chart', () => {
    const chart = new Chart(Testing.app(), 'x', { namespace: 'team-a' });
    new SandboxTemplate(chart, 'template', { metadata: { name: 'python', namespace: 'Team.A' }, containers });
    new kplus.ConfigMap(chart, 'settings', { metadata: { name: 'settings', namespace: 'x'.repeat(64) } });
    new kplus.ConfigMap(chart, 'fine', { metadata: { name: 'fine', namespace: 'team-b' } });
    const run = () => Testing.synth(chart);
    expect(run).toThrow(/SandboxTemplate "python" \(x\/template\/Resource\): metadata.namespace "Team.A" must consist of lowercase letters/);
    expect(run).toThrow(/ConfigMap "settings" \(x\/settings\/Resource\): metadata.namespace "x{64}" must be at most 63 characters/);
    expect(run).not.toThrow(/"fine"/);
  });
});
