import * as fs from 'fs';
import * as path from 'path';
import {
  JSONSchemaProps,
  KUBERNETES_SCHEMA_SOURCE,
  NETWORK_POLICY_EGRESS_RULE_SCHEMA,
  NETWORK_POLICY_INGRESS_RULE_SCHEMA,
  PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA,
  POD_SPEC_SCHEMA,
} from '../../src/api/generated/k8s-schemas';
import { structuralErrors } from '../../src/api/structural';

const GENERATED_SOURCE = fs.readFileSync(path.join(__dirname, '..', '..', 'src', 'api', 'generated', 'k8s-schemas.ts'), 'utf8');

const SCHEMAS: Array<[string, JSONSchemaProps]> = [
  ['POD_SPEC_SCHEMA', POD_SPEC_SCHEMA],
  ['PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA', PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA],
  ['NETWORK_POLICY_INGRESS_RULE_SCHEMA', NETWORK_POLICY_INGRESS_RULE_SCHEMA],
  ['NETWORK_POLICY_EGRESS_RULE_SCHEMA', NETWORK_POLICY_EGRESS_RULE_SCHEMA],
];

/**
 * The schema at a dotted path of property names (`[]` steps into items, `{}` into
 * additionalProperties), with descriptions removed so that shape assertions hold whether the
 * generator kept descriptions or not.
 */
function at(schema: JSONSchemaProps, dotted: string): JSONSchemaProps {
  let node = schema;
  for (const step of dotted.split('.')) {
    const next = step === '[]' ? node.items : step === '{}' ? node.additionalProperties : node.properties?.[step];
    if (next === undefined || typeof next === 'boolean') throw new Error(`no schema at ${dotted} (missing ${step})`);
    node = next;
  }
  return withoutDescriptions(node);
}

function withoutDescriptions(schema: JSONSchemaProps): JSONSchemaProps {
  return JSON.parse(JSON.stringify(schema, (key, value) => (key === 'description' && typeof value === 'string' ? undefined : value)));
}

/** Every value stored under `key` anywhere in the tree, with its path. */
function collect(value: unknown, key: string, where = '', out: Array<[string, unknown]> = []): Array<[string, unknown]> {
  if (Array.isArray(value)) {
    value.forEach((v, i) => collect(v, key, `${where}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === key) out.push([where, v]);
      // Never look inside data (defaults, enums): their keys are not schema keywords.
      if (k !== 'default' && k !== 'enum') collect(v, key, `${where}.${k}`, out);
    }
  }
  return out;
}

const INT_OR_STRING = { 'anyOf': [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true };
const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

describe('structuralErrors', () => {
  // Each rule must be able to fire, or a passing schema proves nothing.
  test.each<[string, unknown, string]>([
    ['missing type', { properties: { a: { type: 'string' } } }, 'type is required'],
    ['missing nested type', { type: 'object', properties: { a: {} } }, '<root>.a: type is required'],
    ['unknown type', { type: 'map' }, 'type must be one of'],
    ['$ref', { type: 'object', $ref: '#/x' }, '$ref is not allowed'],
    ['array without items', { type: 'array' }, 'items must be set'],
    ['tuple items', { type: 'array', items: [{ type: 'string' }] }, 'items must be a single schema'],
    ['properties and additionalProperties', { type: 'object', properties: {}, additionalProperties: { type: 'string' } }, 'mutually exclusive'],
    ['additionalProperties false', { type: 'object', additionalProperties: false }, 'cannot be false'],
    ['properties on a string', { type: 'string', properties: {} }, 'only allowed for type object'],
    ['type in anyOf', { type: 'string', anyOf: [{ type: 'string' }] }, 'type is not allowed inside'],
    ['description in allOf', { type: 'string', allOf: [{ description: 'x' }] }, 'description is not allowed inside'],
    ['default in oneOf', { type: 'string', oneOf: [{ default: 'a' }] }, 'default is not allowed inside'],
    ['nullable in not', { type: 'string', not: { nullable: true } }, 'nullable is not allowed inside'],
    ['field only in junctor', { type: 'object', anyOf: [{ properties: { a: { minLength: 1 } } }] }, 'specified only inside a junctor'],
    ['int-or-string with type', { ...INT_OR_STRING, type: 'string' }, 'must not set type'],
    ['int-or-string with other alternatives', { 'x-kubernetes-int-or-string': true, 'anyOf': [{ type: 'number' }] }, 'allows only anyOf'],
    ['uniqueItems', { type: 'array', items: { type: 'string' }, uniqueItems: true }, 'uniqueItems'],
    ['list-type on object', { 'type': 'object', 'x-kubernetes-list-type': 'atomic' }, 'only allowed on arrays'],
    ['bad list-type', { 'type': 'array', 'items': { type: 'string' }, 'x-kubernetes-list-type': 'bag' }, 'must be atomic, set or map'],
    ['map list without keys', { 'type': 'array', 'items': { type: 'object' }, 'x-kubernetes-list-type': 'map' }, 'needs non-empty'],
    ['map list key neither required nor defaulted', {
      'type': 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      'items': { type: 'object', properties: { name: { type: 'string' } } },
    }, 'must be required or have a default'],
    ['map list key that is not a field', {
      'type': 'array',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['id'],
      'items': { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    }, 'is not a property'],
    ['set of objects', { 'type': 'array', 'items': { type: 'object' }, 'x-kubernetes-list-type': 'set' }, 'scalar or atomic items'],
    ['list-map-keys without map', { 'type': 'array', 'items': { type: 'string' }, 'x-kubernetes-list-map-keys': ['a'] }, 'requires x-kubernetes-list-type map'],
    ['bad map-type', { 'type': 'object', 'x-kubernetes-map-type': 'merge' }, 'must be atomic or granular'],
  ])('rejects %s', (_name, schema, message) => {
    expect(structuralErrors(schema).join('\n')).toContain(message);
  });

  test('accepts int-or-string, preserve-unknown-fields and a well-formed map list', () => {
    expect(structuralErrors({
      type: 'object',
      properties: {
        port: INT_OR_STRING,
        raw: { 'x-kubernetes-preserve-unknown-fields': true },
        ports: {
          'type': 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['port', 'protocol'],
          'items': {
            type: 'object',
            required: ['port'],
            properties: { port: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' } },
          },
        },
      },
    })).toEqual([]);
  });

  test('prefixes errors with the given path', () => {
    expect(structuralErrors({ type: 'array' }, 'spec.podTemplate')).toEqual(['spec.podTemplate: items must be set for type array']);
  });
});

describe.each(SCHEMAS)('%s', (name, schema) => {
  test('is a structural schema', () => {
    expect(structuralErrors(schema, name)).toEqual([]);
  });

  test('is a plain object type with no leftover OpenAPI-only keys', () => {
    expect(schema.type).toBe('object');
    for (const key of ['$ref', 'allOf', 'oneOf', 'x-kubernetes-patch-strategy', 'x-kubernetes-patch-merge-key', 'x-kubernetes-unions', 'x-kubernetes-group-version-kind']) {
      expect(collect(schema, key)).toEqual([]);
    }
  });

  test('lists required fields alphabetically, like controller-gen', () => {
    for (const [where, required] of collect(schema, 'required')) {
      expect([where, required]).toEqual([where, [...(required as string[])].sort()]);
    }
  });

  test('has descriptions exactly when the generated header says they were kept', () => {
    const kept = /^\/\/ Descriptions: kept/m.test(GENERATED_SOURCE);
    expect(/^\/\/ Descriptions: (kept|dropped)/m.test(GENERATED_SOURCE)).toBe(true);
    expect(collect(schema, 'description').length > 0).toBe(kept);
  });
});

describe('generated module', () => {
  test('records its source', () => {
    expect(KUBERNETES_SCHEMA_SOURCE).toBe('k8s.io/kubernetes v1.36.3');
    expect(GENERATED_SOURCE.split('\n')[0]).toBe('// Generated by hack/gen-k8s-schemas.ts from k8s.io/kubernetes v1.36.3 api/openapi-spec. Do not edit.');
  });

  test('PodSpec and PVC spec fit the last-applied-configuration budget together', () => {
    const bytes = JSON.stringify(POD_SPEC_SCHEMA).length + JSON.stringify(PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA).length;
    expect(bytes).toBeLessThan(200_000);
  });
});

// core/v1 PodSpec JSON field names in Kubernetes 1.36.
const POD_SPEC_FIELDS = [
  'activeDeadlineSeconds', 'affinity', 'automountServiceAccountToken', 'containers', 'dnsConfig', 'dnsPolicy',
  'enableServiceLinks', 'ephemeralContainers', 'hostAliases', 'hostIPC', 'hostNetwork', 'hostPID', 'hostUsers',
  'hostname', 'hostnameOverride', 'imagePullSecrets', 'initContainers', 'nodeName', 'nodeSelector', 'os', 'overhead',
  'preemptionPolicy', 'priority', 'priorityClassName', 'readinessGates', 'resourceClaims', 'resources', 'restartPolicy',
  'runtimeClassName', 'schedulerName', 'schedulingGates', 'schedulingGroup', 'securityContext', 'serviceAccount',
  'serviceAccountName', 'setHostnameAsFQDN', 'shareProcessNamespace', 'subdomain', 'terminationGracePeriodSeconds',
  'tolerations', 'topologySpreadConstraints', 'volumes',
];

describe('POD_SPEC_SCHEMA', () => {
  test.each(POD_SPEC_FIELDS)('has field %s', (field) => {
    expect(POD_SPEC_SCHEMA.properties).toHaveProperty([field]);
  });

  test('has no fields beyond the 1.36 list (a new one needs a look when regenerating)', () => {
    expect(Object.keys(POD_SPEC_SCHEMA.properties ?? {}).sort()).toEqual([...POD_SPEC_FIELDS].sort());
  });

  test('requires containers only', () => {
    expect(POD_SPEC_SCHEMA.required).toEqual(['containers']);
  });

  test.each(['containers', 'initContainers', 'ephemeralContainers'])('%s is a list map keyed by name', (field) => {
    const list = at(POD_SPEC_SCHEMA, field);
    expect(list.type).toBe('array');
    expect(list['x-kubernetes-list-type']).toBe('map');
    expect(list['x-kubernetes-list-map-keys']).toEqual(['name']);
    expect(at(list, '[]').required).toContain('name');
  });

  test('container ports are keyed by containerPort and protocol, protocol defaulting to TCP', () => {
    const ports = at(POD_SPEC_SCHEMA, 'containers.[].ports');
    expect(ports['x-kubernetes-list-type']).toBe('map');
    expect(ports['x-kubernetes-list-map-keys']).toEqual(['containerPort', 'protocol']);
    expect(at(ports, '[].protocol')).toEqual({ type: 'string', default: 'TCP' });
    expect(at(ports, '[].containerPort')).toEqual({ type: 'integer', format: 'int32' });
    expect(at(ports, '[]').required).toEqual(['containerPort']);
  });

  test('keeps only the defaults controller-gen emits', () => {
    // openapi-gen's invented zero values are gone ...
    expect(at(POD_SPEC_SCHEMA, 'containers.[]').default).toBeUndefined();
    expect(at(POD_SPEC_SCHEMA, 'containers.[].name').default).toBeUndefined();
    expect(at(POD_SPEC_SCHEMA, 'containers.[].resources').default).toBeUndefined();
    expect(at(POD_SPEC_SCHEMA, 'nodeSelector.{}').default).toBeUndefined();
    // ... `+default=` markers stay ...
    expect(at(POD_SPEC_SCHEMA, 'imagePullSecrets.[].name').default).toBe('');
    expect(at(POD_SPEC_SCHEMA, 'containers.[].livenessProbe.grpc.service').default).toBe('');
    expect(at(POD_SPEC_SCHEMA, 'volumes.[].rbd.pool').default).toBe('rbd');
    // ... except `+default=ref(Constant)`, which controller-gen does not render.
    expect(at(POD_SPEC_SCHEMA, 'volumes.[].azureDisk.cachingMode').default).toBeUndefined();
    expect(at(POD_SPEC_SCHEMA, 'volumes.[].azureDisk.fsType').default).toBe('ext4');
    const defaults = collect(POD_SPEC_SCHEMA, 'default').map(([, value]) => JSON.stringify(value)).sort();
    expect(defaults).not.toContain('{}');
    expect(defaults).not.toContain('0');
  });

  test('resource quantities are int-or-string with the controller-gen pattern', () => {
    const quantity = at(POD_SPEC_SCHEMA, 'containers.[].resources.limits.{}');
    expect(quantity).toEqual({ ...INT_OR_STRING, pattern: QUANTITY_PATTERN });
    expect(at(POD_SPEC_SCHEMA, 'resources.requests.{}')).toEqual(quantity);
    expect(at(POD_SPEC_SCHEMA, 'overhead.{}')).toEqual(quantity);
    const re = new RegExp(QUANTITY_PATTERN);
    for (const ok of ['1', '500m', '1.5Gi', '2e3', '+.5']) expect(re.test(ok)).toBe(true);
    for (const bad of ['1GB', 'one', '1.5.0']) expect(re.test(bad)).toBe(false);
  });

  test('IntOrString fields carry no pattern', () => {
    expect(at(POD_SPEC_SCHEMA, 'containers.[].livenessProbe.httpGet.port')).toEqual(INT_OR_STRING);
  });

  test('pod-level resources, scheduling group, hostname override and runtime class have their 1.36 shapes', () => {
    expect(Object.keys(at(POD_SPEC_SCHEMA, 'resources').properties ?? {}).sort()).toEqual(['claims', 'limits', 'requests']);
    expect(at(POD_SPEC_SCHEMA, 'schedulingGroup')).toEqual({ type: 'object', properties: { podGroupName: { type: 'string' } } });
    expect(at(POD_SPEC_SCHEMA, 'hostnameOverride')).toEqual({ type: 'string' });
    expect(at(POD_SPEC_SCHEMA, 'runtimeClassName')).toEqual({ type: 'string' });
  });

  test('maps are objects with additionalProperties, and atomic structs keep their map type', () => {
    expect(at(POD_SPEC_SCHEMA, 'nodeSelector')).toEqual({ 'type': 'object', 'additionalProperties': { type: 'string' }, 'x-kubernetes-map-type': 'atomic' });
    // Inherited from the embedded LocalObjectReference, as controller-gen renders it.
    expect(at(POD_SPEC_SCHEMA, 'containers.[].envFrom.[].configMapRef')['x-kubernetes-map-type']).toBe('atomic');
  });

  test('an ephemeral volume claim template has opaque ObjectMeta, as controller-gen renders it', () => {
    expect(at(POD_SPEC_SCHEMA, 'volumes.[].ephemeral.volumeClaimTemplate.metadata')).toEqual({ type: 'object' });
  });
});

describe('PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA', () => {
  test.each([
    'accessModes', 'resources', 'storageClassName', 'volumeMode', 'dataSource', 'dataSourceRef', 'volumeAttributesClassName', 'selector', 'volumeName',
  ])('has field %s', (field) => {
    expect(PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA.properties).toHaveProperty([field]);
  });

  test('field shapes', () => {
    const pvc = PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA;
    expect(at(pvc, 'accessModes')).toEqual({ 'type': 'array', 'items': { type: 'string' }, 'x-kubernetes-list-type': 'atomic' });
    expect(at(pvc, 'resources.requests.{}')).toEqual({ ...INT_OR_STRING, pattern: QUANTITY_PATTERN });
    expect(at(pvc, 'storageClassName')).toEqual({ type: 'string' });
    expect(at(pvc, 'volumeMode')).toEqual({ type: 'string' });
    expect(at(pvc, 'volumeAttributesClassName')).toEqual({ type: 'string' });
    expect(at(pvc, 'dataSource').required).toEqual(['kind', 'name']);
    expect(Object.keys(at(pvc, 'dataSourceRef').properties ?? {}).sort()).toEqual(['apiGroup', 'kind', 'name', 'namespace']);
    expect(pvc.required).toBeUndefined();
  });
});

describe.each([
  ['NETWORK_POLICY_INGRESS_RULE_SCHEMA', NETWORK_POLICY_INGRESS_RULE_SCHEMA, 'from'],
  ['NETWORK_POLICY_EGRESS_RULE_SCHEMA', NETWORK_POLICY_EGRESS_RULE_SCHEMA, 'to'],
])('%s', (_name, rule, peers) => {
  test('has ports and peers', () => {
    expect(Object.keys(rule.properties ?? {}).sort()).toEqual([peers, 'ports'].sort());
    expect(Object.keys(at(rule, `${peers}.[]`).properties ?? {}).sort()).toEqual(['ipBlock', 'namespaceSelector', 'podSelector']);
    expect(at(rule, `${peers}.[].ipBlock`).required).toEqual(['cidr']);
  });

  test('ports: IntOrString port, int32 endPort, protocol without a schema default', () => {
    expect(at(rule, 'ports.[].port')).toEqual(INT_OR_STRING);
    expect(at(rule, 'ports.[].endPort')).toEqual({ type: 'integer', format: 'int32' });
    expect(at(rule, 'ports.[].protocol')).toEqual({ type: 'string' });
  });
});
