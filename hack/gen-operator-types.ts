/**
 * Generates operator/src/model/generated.ts: the TypeScript wire types of the four kinds and of
 * the core/v1 and networking/v1 pieces they embed, derived from the CRD schemas in src/api/schema.ts
 * (the one contract the CRDs, the constructs and the operator share).
 *
 * Every object schema becomes an interface; schemas with the same shape become one interface, so
 * e.g. the volume claim template of a Sandbox, a template and a claim is one type. Enum fields whose
 * values are one of src/api/enums.ts's enums become that enum's string-literal union, so a decision
 * that compares against `OperatingMode.SUSPENDED` and a literal `'Suspended'` from the wire agree.
 *
 * Usage: npx ts-node --transpile-only hack/gen-operator-types.ts [--check]
 * --check exits non-zero when the committed file differs from what would be generated.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as enums from '../src/api/enums';
import type { JSONSchemaProps } from '../src/api/generated/k8s-schemas';
import { SANDBOX_CLAIM_SCHEMA, SANDBOX_SCHEMA, SANDBOX_TEMPLATE_SCHEMA, SANDBOX_WARM_POOL_SCHEMA } from '../src/api/schema';

export const OUT_FILE = path.join(__dirname, '..', 'operator', 'src', 'model', 'generated.ts');

const ROOTS: ReadonlyArray<readonly [string, JSONSchemaProps]> = [
  ['Sandbox', SANDBOX_SCHEMA],
  ['SandboxTemplate', SANDBOX_TEMPLATE_SCHEMA],
  ['SandboxWarmPool', SANDBOX_WARM_POOL_SCHEMA],
  ['SandboxClaim', SANDBOX_CLAIM_SCHEMA],
];

/**
 * Names for shapes whose property name alone would be vague or wrong, keyed `<parent type>.<property>`
 * (array items use the array's property). These are the Kubernetes names of the embedded types.
 */
const NAMES: Record<string, string> = {
  'SandboxSpec.podTemplate': 'PodTemplate',
  'PodTemplate.metadata': 'PodMetadata',
  'PodTemplate.spec': 'PodSpec',
  'SandboxSpec.volumeClaimTemplates': 'VolumeClaimTemplate',
  'VolumeClaimTemplate.metadata': 'VolumeClaimTemplateMetadata',
  'VolumeClaimTemplate.spec': 'PersistentVolumeClaimSpec',
  'SandboxStatus.conditions': 'Condition',
  'NetworkPolicyRules.ingress': 'NetworkPolicyIngressRule',
  'NetworkPolicyRules.egress': 'NetworkPolicyEgressRule',
  'SandboxTemplateSpec.networkPolicy': 'NetworkPolicyRules',
  'SandboxWarmPoolSpec.sandboxTemplateRef': 'LocalObjectName',
  'SandboxWarmPoolSpec.updateStrategy': 'WarmPoolUpdateStrategy',
  'SandboxClaimSpec.warmPoolRef': 'LocalObjectName',
  'SandboxClaimSpec.lifecycle': 'ClaimLifecycle',
  'SandboxSpec.idlePolicy': 'IdlePolicy',
  'SandboxTemplateSpec.idlePolicy': 'IdlePolicy',
  'SandboxClaimSpec.idlePolicy': 'IdlePolicy',
  'SandboxClaimSpec.env': 'ClaimEnvVar',
  'SandboxClaimStatus.sandbox': 'ClaimSandboxStatus',
  'PodSpec.containers': 'Container',
  'PodSpec.volumes': 'Volume',
  'Container.env': 'EnvVar',
  'Container.ports': 'ContainerPort',
  'PodSpec.securityContext': 'PodSecurityContext',
  'Container.securityContext': 'SecurityContext',
  'Container.livenessProbe': 'Probe',
  'Container.lifecycle': 'Lifecycle',
  'Lifecycle.postStart': 'LifecycleHandler',
  'Container.resources': 'ResourceRequirements',
  'Container.envFrom': 'EnvFromSource',
  'Container.volumeMounts': 'VolumeMount',
  'EnvVar.valueFrom': 'EnvVarSource',
  'PodSpec.hostAliases': 'HostAlias',
  'PodSpec.affinity': 'Affinity',
  'PodSpec.tolerations': 'Toleration',
  'PodSpec.os': 'PodOS',
  'Volume.ephemeral': 'EphemeralVolumeSource',
  'PersistentVolumeClaimTemplate.spec': 'PersistentVolumeClaimSpec',
  'EphemeralVolumeSource.volumeClaimTemplate': 'PersistentVolumeClaimTemplate',
  'Volume.persistentVolumeClaim': 'PersistentVolumeClaimVolumeSource',
  'Volume.cephfs': 'CephFSVolumeSource',
  'Volume.glusterfs': 'GlusterfsVolumeSource',
  'Volume.nfs': 'NFSVolumeSource',
  'Volume.storageos': 'StorageOSVolumeSource',
  'ConfigMapVolumeSource.items': 'KeyToPath',
  'DownwardAPIVolumeSource.items': 'DownwardAPIVolumeFile',
  'NetworkPolicyIngressRule.from': 'NetworkPolicyPeer',
  'NetworkPolicyIngressRule.ports': 'NetworkPolicyPort',
  'NetworkPolicyPeer.ipBlock': 'IPBlock',
  'PodSpec.dnsConfig': 'PodDNSConfig',
  'PodDNSConfig.options': 'PodDNSConfigOption',
  'PodSpec.resourceClaims': 'PodResourceClaim',
  'ResourceRequirements.claims': 'ResourceClaim',
  'PersistentVolumeClaimSpec.resources': 'VolumeResourceRequirements',
  'Affinity.podAntiAffinity': 'PodAntiAffinity',
  'NodeAffinity.preferredDuringSchedulingIgnoredDuringExecution': 'PreferredSchedulingTerm',
  'NodeAffinity.requiredDuringSchedulingIgnoredDuringExecution': 'NodeSelector',
  'PreferredSchedulingTerm.preference': 'NodeSelectorTerm',
  'NodeSelectorTerm.matchExpressions': 'NodeSelectorRequirement',
  'LabelSelector.matchExpressions': 'LabelSelectorRequirement',
  'PodAffinity.preferredDuringSchedulingIgnoredDuringExecution': 'WeightedPodAffinityTerm',
  'Volume.secret': 'SecretVolumeSource',
  'Volume.configMap': 'ConfigMapVolumeSource',
  'Volume.downwardAPI': 'DownwardAPIVolumeSource',
  'Volume.projected': 'ProjectedVolumeSource',
  'ProjectedVolumeSource.sources': 'VolumeProjection',
  'Volume.emptyDir': 'EmptyDirVolumeSource',
  'Volume.hostPath': 'HostPathVolumeSource',
  'Volume.csi': 'CSIVolumeSource',
  'Volume.image': 'ImageVolumeSource',
  'VolumeProjection.configMap': 'ConfigMapProjection',
  'VolumeProjection.downwardAPI': 'DownwardAPIProjection',
  'VolumeProjection.secret': 'SecretProjection',
  'LifecycleHandler.exec': 'ExecAction',
  'LifecycleHandler.httpGet': 'HTTPGetAction',
  'LifecycleHandler.tcpSocket': 'TCPSocketAction',
  'LifecycleHandler.sleep': 'SleepAction',
  'Probe.grpc': 'GRPCAction',
  'Probe.exec': 'ExecAction',
  'EnvFromSource.configMapRef': 'ConfigMapEnvSource',
  'EnvFromSource.secretRef': 'SecretEnvSource',
  'EnvVarSource.configMapKeyRef': 'ConfigMapKeySelector',
  'EnvVarSource.secretKeyRef': 'SecretKeySelector',
  'EnvVarSource.fieldRef': 'ObjectFieldSelector',
  'EnvVarSource.resourceFieldRef': 'ResourceFieldSelector',
};

/** Names only NAMES may give, so a deeper shape that happens to want one gets a prefixed name. */
const RESERVED = new Set(Object.values(NAMES));

/** Property names that say nothing on their own: the type is named `<parent><Property>`. */
const GENERIC = new Set(['spec', 'status', 'metadata', 'template', 'items', 'selector', 'source', 'ref']);

const ENUMS: Record<string, { [key: string]: string }> = {
  OperatingMode: enums.OperatingMode,
  SandboxShutdownPolicy: enums.SandboxShutdownPolicy,
  ClaimShutdownPolicy: enums.ClaimShutdownPolicy,
  NetworkPolicyManagement: enums.NetworkPolicyManagement,
  EnvVarsInjectionPolicy: enums.EnvVarsInjectionPolicy,
  VolumeClaimTemplatesPolicy: enums.VolumeClaimTemplatesPolicy,
  WarmPoolUpdateStrategyType: enums.WarmPoolUpdateStrategyType,
};

const pascal = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

function singular(s: string): string {
  if (/ies$/.test(s)) return s.slice(0, -3) + 'y';
  if (/(sses|xes)$/.test(s)) return s.slice(0, -2);
  if (/s$/.test(s) && !/ss$/.test(s)) return s.slice(0, -1);
  return s;
}

/** A canonical, description-free key for a schema's shape. */
function shapeKey(schema: JSONSchemaProps): string {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) {
        if (k === 'description' || k === 'default' || k.startsWith('x-kubernetes-validations')) continue;
        out[k] = strip((v as Record<string, unknown>)[k]);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(strip(schema));
}

const isIdentifier = (s: string): boolean => /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s);

function doc(description: string | undefined, indent: string): string {
  if (!description) return '';
  const text = description.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();
  return `${indent}/** ${text} */\n`;
}

export class TypeGenerator {
  private readonly byShape = new Map<string, Array<{ name: string; explicit: boolean }>>();
  private readonly taken = new Set<string>();
  private readonly declarations: string[] = [];
  private readonly usedEnums = new Set<string>();

  public generate(): string {
    for (const [name, schema] of ROOTS) this.root(name, schema);
    const enumImports = [...this.usedEnums].sort();
    return [
      '// Generated by hack/gen-operator-types.ts from the CRD schemas in src/api/schema.ts. Do not edit.',
      '// Regenerate: npx ts-node --transpile-only hack/gen-operator-types.ts',
      '/* eslint-disable */',
      `import type { ${enumImports.join(', ')} } from '#api/enums';`,
      "import type { KubeObject, ObjectMeta } from '../runtime/types';",
      '',
      ...this.declarations,
    ].join('\n');
  }

  private root(name: string, schema: JSONSchemaProps): void {
    const props = schema.properties ?? {};
    const spec = props.spec ? this.named(props.spec, `${name}Spec`) : undefined;
    const status = props.status ? this.named(props.status, `${name}Status`) : undefined;
    this.taken.add(name);
    const lines = [
      doc(schema.description, ''),
      `export interface ${name} extends KubeObject {\n`,
      '  metadata: ObjectMeta;\n',
      spec ? `  spec: ${spec};\n` : '',
      status ? `  status?: ${status};\n` : '',
      '}\n',
    ];
    this.declarations.push(lines.join(''));
  }

  /** The type of `schema`, found under property `property` of type `parent` (in an array if `inArray`). */
  private typeOf(schema: JSONSchemaProps, parent: string, property: string, inArray = false): string {
    if (schema['x-kubernetes-int-or-string']) return 'number | string';
    if (schema.enum) return this.enumType(schema.enum as unknown[], property);
    switch (schema.type) {
      case 'string': return 'string';
      case 'integer':
      case 'number': return 'number';
      case 'boolean': return 'boolean';
      case 'array': {
        const item = this.typeOf(schema.items ?? {}, parent, property, true);
        return item.includes(' ') ? `Array<${item}>` : `${item}[]`;
      }
      case 'object': {
        if (schema.properties && Object.keys(schema.properties).length > 0) {
          const explicit = NAMES[`${parent}.${property}`] !== undefined;
          return this.named(schema, this.nameFor(parent, property, inArray), parent, explicit);
        }
        if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
          return `{ [key: string]: ${this.typeOf(schema.additionalProperties, parent, property)} }`;
        }
        return '{ [key: string]: unknown }';
      }
      default: return 'unknown';
    }
  }

  /**
   * The enum of src/api/enums.ts with exactly these values; when several have them (the two
   * injection policies), the one named after the property.
   */
  private enumType(values: unknown[], property: string): string {
    const sorted = JSON.stringify([...values].sort());
    const matches = Object.keys(ENUMS).filter((name) => JSON.stringify(Object.values(ENUMS[name]).sort()) === sorted);
    const name = matches.length === 1 ? matches[0] : matches.find((m) => m === pascal(property));
    if (matches.length > 1 && !name) throw new Error(`enum of ${property} matches ${matches.join(', ')}: name the property after one`);
    if (!name) return values.map((v) => JSON.stringify(v)).join(' | ');
    this.usedEnums.add(name);
    return `\`\${${name}}\``;
  }

  private nameFor(parent: string, property: string, isArray: boolean): string {
    const explicit = NAMES[`${parent}.${property}`];
    if (explicit) return explicit;
    if (GENERIC.has(property)) return `${parent}${pascal(property)}`;
    return pascal(isArray ? singular(property) : property);
  }

  /** An interface for an object schema, shared by every schema of the same shape. */
  private named(schema: JSONSchemaProps, wanted: string, parent = '', explicit = true): string {
    const key = shapeKey(schema);
    const size = Object.keys(schema.properties ?? {}).length;
    // Same shape, same type, when the names agree or when this place was not named on purpose and
    // the shape is distinctive enough ({ name } alone is a Pod's OS and a template reference).
    const same = this.byShape.get(key)?.find((t) => t.name === wanted || (!explicit && size >= 2));
    if (same) return same.name;
    const name = this.freeName(wanted, parent, explicit);
    this.byShape.set(key, [...(this.byShape.get(key) ?? []), { name, explicit }]);
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {}).map(([prop, sub]) => {
      const optional = required.has(prop) ? '' : '?';
      const field = isIdentifier(prop) ? prop : JSON.stringify(prop);
      const type = prop === 'metadata' && !sub.properties ? 'ObjectMeta' : this.typeOf(sub, name, prop);
      return `${doc(sub.description, '  ')}  ${field}${optional}: ${type};\n`;
    });
    this.declarations.push(`${doc(schema.description, '')}export interface ${name} {\n${fields.join('')}}\n`);
    return name;
  }

  /**
   * `wanted` unless another shape has it (or NAMES reserves it for another place); then the parent's
   * name in front, as Kubernetes names such types (a Pod's `securityContext` vs a container's).
   */
  private freeName(wanted: string, parent: string, explicit: boolean): string {
    if (!this.taken.has(wanted) && (explicit || !RESERVED.has(wanted))) {
      this.taken.add(wanted);
      return wanted;
    }
    const prefixed = wanted.startsWith(parent) ? wanted : `${parent}${wanted}`;
    for (let i = 1; ; i++) {
      const candidate = i === 1 ? prefixed : `${prefixed}${i}`;
      if (!this.taken.has(candidate)) {
        this.taken.add(candidate);
        return candidate;
      }
    }
  }
}

export function generateOperatorTypes(): string {
  return new TypeGenerator().generate();
}

if (require.main === module) {
  const text = generateOperatorTypes();
  if (process.argv.includes('--check')) {
    const current = fs.existsSync(OUT_FILE) ? fs.readFileSync(OUT_FILE, 'utf8') : '';
    if (current !== text) {
      process.stderr.write(`${path.relative(process.cwd(), OUT_FILE)} is stale: run npx ts-node --transpile-only hack/gen-operator-types.ts\n`);
      process.exit(1);
    }
  } else {
    fs.mkdirSync(path.dirname(OUT_FILE), { recursive: true });
    fs.writeFileSync(OUT_FILE, text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), OUT_FILE)} (${text.split('\n').length} lines)\n`);
  }
}
