import { Testing } from 'cdk8s';
import { structuralErrors } from '../src/api/structural';
import { SandboxCrds } from '../src/crds';

/**
 * Every field upstream's v1beta1 CRDs declare for the four kinds, with the type, default,
 * enum and required-ness it documents. A CRD that drops or changes any of them would break
 * upstream clients and manifests.
 */
interface Field { path: string; type: string; default?: unknown; enum?: string[]; required?: boolean; format?: string; minimum?: number }

const BLUEPRINT: Field[] = [
  { path: 'spec.podTemplate', type: 'object', required: true },
  { path: 'spec.podTemplate.spec', type: 'object', required: true },
  { path: 'spec.podTemplate.spec.containers', type: 'array', required: true },
  { path: 'spec.podTemplate.metadata.labels', type: 'object' },
  { path: 'spec.podTemplate.metadata.annotations', type: 'object' },
  { path: 'spec.volumeClaimTemplates', type: 'array' },
  { path: 'spec.volumeClaimTemplates[].metadata.name', type: 'string' },
  { path: 'spec.volumeClaimTemplates[].metadata.labels', type: 'object' },
  { path: 'spec.volumeClaimTemplates[].spec', type: 'object', required: true },
  { path: 'spec.volumeClaimTemplates[].spec.resources.requests', type: 'object' },
  { path: 'spec.service', type: 'boolean' },
];

const CONDITIONS: Field[] = [
  { path: 'status.conditions', type: 'array' },
  { path: 'status.conditions[].type', type: 'string', required: true },
  { path: 'status.conditions[].status', type: 'string', required: true, enum: ['True', 'False', 'Unknown'] },
  { path: 'status.conditions[].reason', type: 'string', required: true },
  { path: 'status.conditions[].message', type: 'string', required: true },
  { path: 'status.conditions[].lastTransitionTime', type: 'string', required: true, format: 'date-time' },
  { path: 'status.conditions[].observedGeneration', type: 'integer', format: 'int64', minimum: 0 },
];

const FIELDS: { [kind: string]: Field[] } = {
  Sandbox: [
    ...BLUEPRINT,
    { path: 'spec.shutdownTime', type: 'string', format: 'date-time' },
    { path: 'spec.shutdownPolicy', type: 'string', default: 'Retain', enum: ['Delete', 'Retain'] },
    { path: 'spec.operatingMode', type: 'string', default: 'Running', enum: ['Running', 'Suspended'] },
    ...CONDITIONS,
    { path: 'status.service', type: 'string' },
    { path: 'status.serviceFQDN', type: 'string' },
    { path: 'status.selector', type: 'string' },
    { path: 'status.podIPs', type: 'array' },
    { path: 'status.podIPs[]', type: 'string' },
    { path: 'status.nodeName', type: 'string' },
  ],
  SandboxTemplate: [
    ...BLUEPRINT,
    { path: 'spec.networkPolicy', type: 'object' },
    { path: 'spec.networkPolicy.ingress', type: 'array' },
    { path: 'spec.networkPolicy.ingress[].from', type: 'array' },
    { path: 'spec.networkPolicy.ingress[].ports', type: 'array' },
    { path: 'spec.networkPolicy.egress', type: 'array' },
    { path: 'spec.networkPolicy.egress[].to', type: 'array' },
    { path: 'spec.networkPolicy.egress[].ports', type: 'array' },
    { path: 'spec.networkPolicyManagement', type: 'string', default: 'Managed', enum: ['Managed', 'Unmanaged'] },
    { path: 'spec.envVarsInjectionPolicy', type: 'string', default: 'Disallowed', enum: ['Allowed', 'Overrides', 'Disallowed'] },
    { path: 'spec.volumeClaimTemplatesPolicy', type: 'string', default: 'Disallowed', enum: ['Disallowed', 'Allowed', 'Overrides'] },
  ],
  SandboxWarmPool: [
    { path: 'spec.replicas', type: 'integer', default: 1, format: 'int32', minimum: 0 },
    { path: 'spec.sandboxTemplateRef', type: 'object', required: true },
    { path: 'spec.sandboxTemplateRef.name', type: 'string', required: true },
    { path: 'spec.updateStrategy.type', type: 'string', default: 'OnReplenish', enum: ['Recreate', 'OnReplenish'] },
    { path: 'status.replicas', type: 'integer', format: 'int32' },
    { path: 'status.readyReplicas', type: 'integer', format: 'int32' },
    { path: 'status.selector', type: 'string' },
    { path: 'status.observedGeneration', type: 'integer', format: 'int64', minimum: 0 },
  ],
  SandboxClaim: [
    { path: 'spec.warmPoolRef', type: 'object', required: true },
    { path: 'spec.warmPoolRef.name', type: 'string', required: true },
    { path: 'spec.lifecycle', type: 'object' },
    { path: 'spec.lifecycle.shutdownTime', type: 'string', format: 'date-time' },
    { path: 'spec.lifecycle.ttlSecondsAfterFinished', type: 'integer', format: 'int32', minimum: 0 },
    { path: 'spec.lifecycle.shutdownPolicy', type: 'string', default: 'Retain', enum: ['Delete', 'DeleteForeground', 'Retain'] },
    { path: 'spec.additionalPodMetadata.labels', type: 'object' },
    { path: 'spec.additionalPodMetadata.annotations', type: 'object' },
    { path: 'spec.env', type: 'array' },
    { path: 'spec.env[].name', type: 'string', required: true },
    { path: 'spec.env[].value', type: 'string', required: true },
    { path: 'spec.env[].containerName', type: 'string' },
    { path: 'spec.volumeClaimTemplates', type: 'array' },
    { path: 'spec.volumeClaimTemplates[].spec', type: 'object', required: true },
    ...CONDITIONS,
    { path: 'status.sandbox.name', type: 'string' },
    { path: 'status.sandbox.podIPs', type: 'array' },
    { path: 'status.sandbox.serviceFQDN', type: 'string' },
  ],
};

/** Walk a dotted path (`a.b[].c`) through an OpenAPI schema; returns the node and its parent. */
function lookup(schema: any, path: string): { node: any; parent: any; name: string } | undefined {
  let node = schema;
  let parent: any;
  let name = '';
  for (const part of path.split('.')) {
    const isItems = part.endsWith('[]');
    name = isItems ? part.slice(0, -2) : part;
    parent = node;
    node = node?.properties?.[name];
    if (node && isItems) {
      parent = node;
      node = node.items;
      name = '[]';
    }
    if (!node) return undefined;
  }
  return { node, parent, name };
}

const synthCrds = () => {
  const chart = Testing.chart();
  new SandboxCrds(chart, 'crds');
  return Testing.synth(chart);
};

const crds = synthCrds();
const byKind = Object.fromEntries(crds.map((c) => [c.spec.names.kind, c]));
const schemaOf = (kind: string) => byKind[kind].spec.versions[0].schema.openAPIV3Schema;

/** Count every property node in a schema (nested), the "number of CRD schema fields". */
function countFields(schema: any): number {
  let n = 0;
  const visit = (s: any) => {
    if (!s || typeof s !== 'object') return;
    for (const child of Object.values(s.properties ?? {})) { n++; visit(child); }
    visit(s.items);
    if (typeof s.additionalProperties === 'object') visit(s.additionalProperties);
  };
  visit(schema);
  return n;
}

describe('SandboxCrds', () => {
  test('four CRDs with upstream names, scope and short names, serving v1beta1 only', () => {
    expect(crds.map((c) => c.metadata.name)).toEqual([
      'sandboxes.agents.x-k8s.io',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
      'sandboxclaims.extensions.agents.x-k8s.io',
    ]);
    for (const crd of crds) {
      expect(crd.spec.scope).toBe('Namespaced');
      expect(crd.spec.versions.map((v: any) => [v.name, v.served, v.storage])).toEqual([['v1beta1', true, true], ['v1alpha1', false, false]]);
      expect(crd.spec.conversion).toEqual({ strategy: 'None' });
    }
    expect(byKind.SandboxWarmPool.spec.names).toEqual({ kind: 'SandboxWarmPool', listKind: 'SandboxWarmPoolList', plural: 'sandboxwarmpools', singular: 'sandboxwarmpool', shortNames: ['swp'] });
    expect(byKind.Sandbox.spec.names.shortNames).toEqual(['sandbox']);
  });

  test('subresources: status everywhere (templates too: ours, for their NetworkPolicy condition), scale on pools only', () => {
    expect(byKind.Sandbox.spec.versions[0].subresources).toEqual({ status: {} });
    expect(byKind.SandboxClaim.spec.versions[0].subresources).toEqual({ status: {} });
    expect(byKind.SandboxTemplate.spec.versions[0].subresources).toEqual({ status: {} });
    expect(Object.keys(byKind.SandboxTemplate.spec.versions[0].schema.openAPIV3Schema.properties.status.properties)).toEqual(['conditions']);
    expect(byKind.SandboxWarmPool.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions.items.required)
      .toEqual(['lastTransitionTime', 'message', 'reason', 'status', 'type']);
    expect(byKind.SandboxWarmPool.spec.versions[0].subresources.scale).toEqual({
      specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector',
    });
  });

  test('printer columns as upstream', () => {
    const columns = (kind: string) => (byKind[kind].spec.versions[0].additionalPrinterColumns ?? []).map((c: any) => `${c.name}:${c.jsonPath}`);
    expect(columns('Sandbox')).toEqual([
      "Ready:.status.conditions[?(@.type=='Ready')].status", "Reason:.status.conditions[?(@.type=='Ready')].reason", 'Age:.metadata.creationTimestamp',
    ]);
    expect(columns('SandboxClaim')).toEqual([
      "Ready:.status.conditions[?(@.type=='Ready')].status", 'Sandbox:.status.sandbox.name', "Reason:.status.conditions[?(@.type=='Ready')].reason", 'Age:.metadata.creationTimestamp',
    ]);
    expect(columns('SandboxWarmPool')).toEqual(['Ready:.status.readyReplicas', 'Desired:.spec.replicas', 'Age:.metadata.creationTimestamp']);
    expect(columns('SandboxTemplate')).toEqual([]);
  });

  test.each(Object.keys(FIELDS))('%s schema is structural', (kind) => {
    expect(structuralErrors(schemaOf(kind), kind)).toEqual([]);
  });

  test.each(Object.keys(FIELDS))('%s schema has no preserve-unknown-fields anywhere', (kind) => {
    expect(JSON.stringify(schemaOf(kind))).not.toContain('x-kubernetes-preserve-unknown-fields');
  });

  describe.each(Object.entries(FIELDS))('%s has every upstream field', (kind, fields) => {
    test.each(fields.map((f) => [f.path, f]))('%s', (_path, field) => {
      const found = lookup(schemaOf(kind), (field as Field).path);
      expect(found).toBeDefined();
      const { node, parent, name } = found!;
      const f = field as Field;
      expect(node.type).toBe(f.type);
      if (f.default !== undefined) expect(node.default).toEqual(f.default);
      else expect(node.default).toBeUndefined();
      if (f.enum) expect(node.enum).toEqual(f.enum);
      if (f.format) expect(node.format).toBe(f.format);
      if (f.minimum !== undefined) expect(node.minimum).toBe(f.minimum);
      if (name !== '[]') expect((parent.required ?? []).includes(name)).toBe(f.required ?? false);
    });
  });

  test('spec is required at the root of every kind', () => {
    for (const kind of Object.keys(FIELDS)) expect(schemaOf(kind).required).toEqual(['spec']);
  });

  test('list types as upstream: atomic VCTs and env', () => {
    expect(lookup(schemaOf('Sandbox'), 'spec.volumeClaimTemplates')!.node['x-kubernetes-list-type']).toBe('atomic');
    expect(lookup(schemaOf('SandboxClaim'), 'spec.env')!.node['x-kubernetes-list-type']).toBe('atomic');
    expect(lookup(schemaOf('Sandbox'), 'spec.podTemplate.spec.containers')!.node['x-kubernetes-list-map-keys']).toEqual(['name']);
  });

  test('CEL: upstream\'s immutable volumeClaimTemplates, plus our Service-name rule', () => {
    const spec = lookup(schemaOf('Sandbox'), 'spec')!.node;
    expect(spec['x-kubernetes-validations']).toEqual([expect.objectContaining({ message: 'volumeClaimTemplates is immutable' })]);
    expect(spec['x-kubernetes-validations'][0].rule).toContain('oldSelf.volumeClaimTemplates');
    expect(schemaOf('Sandbox')['x-kubernetes-validations']).toEqual([expect.objectContaining({ message: expect.stringMatching(/DNS-1035 label/) })]);
  });

  test('the embedded PodSpec is the full core/v1 type, not a stub', () => {
    const pod = lookup(schemaOf('Sandbox'), 'spec.podTemplate.spec')!.node;
    for (const field of ['containers', 'initContainers', 'ephemeralContainers', 'volumes', 'runtimeClassName', 'securityContext', 'affinity', 'tolerations', 'dnsConfig', 'hostnameOverride']) {
      expect(pod.properties).toHaveProperty(field);
    }
    expect(pod.properties.containers.items.properties.ports.items.properties.protocol.default).toBe('TCP');
    // A field count well above a hand-typed stub: the full PodSpec has hundreds of nested fields.
    expect(countFields(pod)).toBeGreaterThan(500);
  });

  test('the CRDs fit the 256 KiB last-applied annotation of client-side apply', () => {
    for (const crd of crds) expect(JSON.stringify(crd).length).toBeLessThan(256 * 1024);
  });

  test('the CRDs match their snapshot (embedded Kubernetes types elided; test/api/k8s-schemas.test.ts covers them)', () => {
    const elide = (key: string, value: any) => {
      if (key === 'spec' && value?.properties?.containers) return '<core/v1 PodSpec>';
      if (key === 'spec' && value?.properties?.accessModes) return '<core/v1 PersistentVolumeClaimSpec>';
      if ((key === 'ingress' || key === 'egress') && value?.items?.properties) return `<networking/v1 NetworkPolicy${key === 'ingress' ? 'Ingress' : 'Egress'}Rule[]>`;
      return value;
    };
    expect(JSON.parse(JSON.stringify(crds, elide))).toMatchSnapshot();
  });

  test('field counts (reported in the release notes)', () => {
    const counts = Object.fromEntries(Object.keys(FIELDS).map((k) => [k, countFields(schemaOf(k))]));
    expect(counts).toMatchSnapshot();
  });

  test('core-only and extensions-only subsets', () => {
    const chart = Testing.chart();
    new SandboxCrds(chart, 'core', { extensions: false });
    new SandboxCrds(chart, 'ext', { core: false });
    expect(Testing.synth(chart).map((c) => c.spec.names.kind)).toEqual(['Sandbox', 'SandboxTemplate', 'SandboxWarmPool', 'SandboxClaim']);
  });
});
