/**
 * Generates src/api/generated/k8s-schemas.ts: structural CRD schemas
 * (apiextensions.k8s.io/v1 JSONSchemaProps) for the core Kubernetes types our CRDs embed,
 * shaped the way controller-gen v0.21 renders a Go struct that embeds them.
 *
 * Source of truth is the OpenAPI v3 spec checked into k8s.io/kubernetes (api/openapi-spec/v3),
 * fetched through the Go module proxy, so the result is reproducible and needs no cluster.
 *
 * Usage:
 *   npx ts-node --transpile-only hack/gen-k8s-schemas.ts [--descriptions=auto|keep|drop] [--out=FILE]
 *
 * --descriptions=auto (the default) keeps descriptions unless PodSpec + PersistentVolumeClaimSpec
 * together exceed DESCRIPTION_BUDGET_BYTES of JSON: a CRD is applied with kubectl, and client-side
 * apply copies the whole object into the kubectl.kubernetes.io/last-applied-configuration
 * annotation, which is capped at 256 KiB.
 *
 * Descriptions are the spec's, which equal controller-gen's up to whitespace (openapi-gen joins
 * comment lines, controller-gen keeps the line breaks).
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const K8S_MODULE = 'k8s.io/kubernetes';
const K8S_VERSION = 'v1.36.3';
const SPEC_DIR = 'api/openapi-spec/v3';
const OUT_FILE = path.join(__dirname, '..', 'src', 'api', 'generated', 'k8s-schemas.ts');
/** ~200 KB leaves headroom under the 256 KiB annotation for the rest of the CRD. */
const DESCRIPTION_BUDGET_BYTES = 200_000;

interface Root {
  /** Name of the exported const in the generated module. */
  readonly exportName: string;
  /** File under api/openapi-spec/v3 holding the definition. */
  readonly specFile: string;
  /** Key under components.schemas. */
  readonly definition: string;
}

const CORE = 'api__v1_openapi.json';
const NETWORKING = 'apis__networking.k8s.io__v1_openapi.json';
const ROOTS: readonly Root[] = [
  { exportName: 'POD_SPEC_SCHEMA', specFile: CORE, definition: 'io.k8s.api.core.v1.PodSpec' },
  { exportName: 'PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA', specFile: CORE, definition: 'io.k8s.api.core.v1.PersistentVolumeClaimSpec' },
  { exportName: 'NETWORK_POLICY_INGRESS_RULE_SCHEMA', specFile: NETWORKING, definition: 'io.k8s.api.networking.v1.NetworkPolicyIngressRule' },
  { exportName: 'NETWORK_POLICY_EGRESS_RULE_SCHEMA', specFile: NETWORKING, definition: 'io.k8s.api.networking.v1.NetworkPolicyEgressRule' },
];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Node = { [key: string]: Json };

// The two apimachinery types that are not plain objects. controller-gen knows them by Go type
// and emits fixed schemas; the OpenAPI spec has `oneOf`, which is not allowed in a structural
// schema, so we recognise them by definition name instead.
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
/** The regular expression controller-gen attaches to every resource.Quantity. */
const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
/** controller-gen does not descend into an embedded ObjectMeta; the apiserver handles metadata itself. */
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

// Two controller-gen behaviours the OpenAPI spec cannot show. Found, and the whole output
// checked, by diffing against controller-gen v0.21.0 run on a Go struct that embeds these
// types from k8s.io/api v0.36.3: without descriptions the schemas are identical.
/**
 * These Go structs embed LocalObjectReference (`+structType=atomic`) inline. controller-gen
 * merges the embedded struct's schema, extension included; openapi-gen flattens its fields and
 * loses the extension.
 */
const EMBEDS_ATOMIC_LOCAL_OBJECT_REFERENCE = new Set([
  'io.k8s.api.core.v1.ConfigMapEnvSource', 'io.k8s.api.core.v1.SecretEnvSource',
  'io.k8s.api.core.v1.ConfigMapVolumeSource', 'io.k8s.api.core.v1.ConfigMapProjection',
  'io.k8s.api.core.v1.SecretProjection',
]);
/** `+default=ref(GoConstant)` markers: openapi-gen resolves the constant, controller-gen emits no default. */
const DEFAULTS_FROM_GO_CONSTANTS: { readonly [definition: string]: readonly string[] } = {
  'io.k8s.api.core.v1.AzureDiskVolumeSource': ['cachingMode', 'kind'],
};

/** Keys copied verbatim: value validations and the structural-merge extensions a CRD understands. */
const COPIED_KEYS = new Set([
  'type', 'format', 'description', 'enum', 'required', 'pattern', 'nullable',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties',
  'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource',
]);
/** Keys that only matter to strategic-merge-patch, discovery or client generators; CRDs reject or ignore them. */
const DROPPED_KEYS = new Set([
  'x-kubernetes-patch-merge-key', 'x-kubernetes-patch-strategy',
  'x-kubernetes-group-version-kind', 'x-kubernetes-unions', 'example', 'externalDocs',
]);
/** Handled explicitly by the converter. */
const STRUCTURE_KEYS = new Set(['$ref', 'allOf', 'oneOf', 'properties', 'items', 'additionalProperties', 'default']);

export interface ConvertOptions {
  readonly descriptions: boolean;
}

/** Where a node sits, which decides whether its `default` is one controller-gen would emit. */
interface Position {
  /** Definition whose `properties` hold this node, for fields. */
  readonly owner?: string;
  readonly field?: string;
  /** Listed in the owner's `required`. */
  readonly required: boolean;
  /** `items` or `additionalProperties`: a slice element or map value. */
  readonly element: boolean;
}
const ROOT: Position = { required: false, element: false };
const ELEMENT: Position = { required: false, element: true };

/** Inlines references and rewrites one OpenAPI definition into a structural CRD schema. */
export class SchemaConverter {
  constructor(private readonly definitions: { [name: string]: Node }, private readonly options: ConvertOptions) {}

  public convertDefinition(name: string): Node {
    return this.convertRef(name, {}, [], ROOT, name);
  }

  private convert(node: Node, stack: string[], pos: Position, where: string): Node {
    const ref = referenceOf(node, where);
    if (ref !== undefined) return this.convertRef(ref, node, stack, pos, where);
    if (node.format === 'int-or-string') return this.withFieldDescription(intOrString(), node);
    if (node.oneOf !== undefined) throw new Error(`${where}: oneOf outside Quantity/IntOrString cannot be made structural`);

    const out: Node = {};
    for (const [key, value] of Object.entries(node)) {
      if (COPIED_KEYS.has(key)) {
        if (key !== 'description' || this.options.descriptions) out[key] = value;
      } else if (!DROPPED_KEYS.has(key) && !STRUCTURE_KEYS.has(key)) {
        // Fail on anything new upstream so that someone decides whether a CRD may carry it.
        throw new Error(`${where}: unknown schema key ${JSON.stringify(key)}`);
      }
    }
    // controller-gen lists required fields alphabetically; the spec keeps Go field order.
    if (Array.isArray(node.required)) out.required = [...node.required].sort();

    if (node.properties !== undefined) {
      const owner = stack[stack.length - 1];
      const required = Array.isArray(node.required) ? node.required : [];
      const props: Node = {};
      for (const [field, sub] of Object.entries(asNode(node.properties, where))) {
        const fieldPos: Position = { owner, field, required: required.includes(field), element: false };
        props[field] = this.convert(asNode(sub, `${where}.${field}`), stack, fieldPos, `${where}.${field}`);
      }
      out.properties = props;
    }
    if (node.items !== undefined) out.items = this.convert(asNode(node.items, where), stack, ELEMENT, `${where}[]`);
    if (node.additionalProperties !== undefined) {
      out.additionalProperties = this.convert(asNode(node.additionalProperties, where), stack, ELEMENT, `${where}{}`);
    }
    if (node.default !== undefined && isMarkerDefault(node.default, pos)) out.default = node.default;

    if (typeof out.type !== 'string') throw new Error(`${where}: no type; a structural schema needs one on every node`);
    return out;
  }

  /**
   * Inlines definition `name`. `field` is the referencing node: its description, default and
   * list/map extensions describe the field, so they win over the referenced type's (this is
   * also what controller-gen does with a field's doc comment).
   */
  private convertRef(name: string, field: Node, stack: string[], pos: Position, where: string): Node {
    if (stack.includes(name)) {
      throw new Error(`${where}: recursive reference ${[...stack, name].join(' -> ')}; structural schemas cannot express recursion`);
    }
    if (name === QUANTITY) return this.withFieldDescription({ ...intOrString(), pattern: QUANTITY_PATTERN }, field);
    if (name === INT_OR_STRING) return this.withFieldDescription(intOrString(), field);
    if (name === OBJECT_META) return this.withFieldDescription({ type: 'object' }, field);

    const target = this.definitions[name];
    if (target === undefined) throw new Error(`${where}: dangling reference to ${name}`);
    const merged: Node = { ...target };
    if (EMBEDS_ATOMIC_LOCAL_OBJECT_REFERENCE.has(name)) merged['x-kubernetes-map-type'] = 'atomic';
    for (const [key, value] of Object.entries(field)) {
      if (key !== '$ref' && key !== 'allOf') merged[key] = value;
    }
    return this.convert(merged, [...stack, name], pos, where);
  }

  /** Types with a fixed schema keep only the documentation of the field that uses them. */
  private withFieldDescription(schema: Node, field: Node): Node {
    const out: Node = { ...schema };
    if (this.options.descriptions && typeof field.description === 'string') out.description = field.description;
    return out;
  }
}

function intOrString(): Node {
  return { 'anyOf': [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true };
}

/** `{$ref}` or the `{allOf: [{$ref}]}` wrapper the v3 spec uses when a field adds a description or default. */
function referenceOf(node: Node, where: string): string | undefined {
  let ref: Json | undefined = node.$ref;
  if (node.allOf !== undefined) {
    const all = node.allOf;
    if (ref !== undefined || !Array.isArray(all) || all.length !== 1) {
      throw new Error(`${where}: only a single-element allOf wrapping a $ref is supported`);
    }
    const inner = asNode(all[0], where);
    if (Object.keys(inner).length !== 1 || typeof inner.$ref !== 'string') {
      throw new Error(`${where}: allOf element is not a bare $ref`);
    }
    ref = inner.$ref;
  }
  if (ref === undefined) return undefined;
  const prefix = '#/components/schemas/';
  if (typeof ref !== 'string' || !ref.startsWith(prefix)) throw new Error(`${where}: unsupported $ref ${JSON.stringify(ref)}`);
  return ref.slice(prefix.length);
}

const ZERO_SCALARS = new Set(['""', '0', 'false']);

/**
 * Tells `+default=` markers (which controller-gen renders too) from the defaults openapi-gen
 * invents: `{}` on every non-pointer struct field and slice element, and the Go zero value on
 * non-pointer scalars without omitempty and on scalar slice elements / map values. Those must
 * go, and not only for fidelity: the apiserver validates a CRD's defaults against its schema,
 * and `{}` as a container lacks the required `name`. A scalar field without omitempty is
 * required in the spec, so a zero default on a required field or an element is invented; one
 * on an optional field is a marker (LocalObjectReference.name and GRPCAction.service carry
 * `+default=""`). No type here has a `+default={}` marker.
 */
function isMarkerDefault(value: Json, pos: Position): boolean {
  const json = JSON.stringify(value);
  if (json === '{}' || (ZERO_SCALARS.has(json) && (pos.required || pos.element))) return false;
  const fromConstants = pos.owner !== undefined ? DEFAULTS_FROM_GO_CONSTANTS[pos.owner] : undefined;
  return !(fromConstants !== undefined && pos.field !== undefined && fromConstants.includes(pos.field));
}

function asNode(value: Json | undefined, where: string): Node {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${where}: expected a schema object, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Recursively sorts object keys so the output is stable across spec re-orderings. */
export function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key]);
  return out;
}

function downloadSpecDir(): string {
  // Run outside any Go module so a go.mod elsewhere in the repo cannot affect resolution.
  const stdout = execFileSync('go', ['mod', 'download', '-json', `${K8S_MODULE}@${K8S_VERSION}`], {
    cwd: os.tmpdir(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (info.Error !== undefined || info.Dir === undefined) {
    throw new Error(`go mod download ${K8S_MODULE}@${K8S_VERSION} failed: ${info.Error ?? 'no Dir'}`);
  }
  return path.join(info.Dir, SPEC_DIR);
}

function loadDefinitions(specDir: string, file: string): { [name: string]: Node } {
  const doc = JSON.parse(fs.readFileSync(path.join(specDir, file), 'utf8')) as { components?: { schemas?: { [name: string]: Node } } };
  const schemas = doc.components?.schemas;
  if (schemas === undefined) throw new Error(`${file}: no components.schemas`);
  return schemas;
}

/** Number of property nodes anywhere in the tree (fields of fields count too). */
export function countProperties(node: Json): number {
  if (Array.isArray(node)) return node.reduce<number>((n, x) => n + countProperties(x), 0);
  if (node === null || typeof node !== 'object') return 0;
  let n = 0;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      n += Object.keys(value).length;
    }
    if (key !== 'default' && key !== 'enum') n += countProperties(value);
  }
  return n;
}

function generate(specDir: string, descriptions: boolean): { [exportName: string]: Json } {
  const cache = new Map<string, { [name: string]: Node }>();
  const result: { [exportName: string]: Json } = {};
  for (const root of ROOTS) {
    if (!cache.has(root.specFile)) cache.set(root.specFile, loadDefinitions(specDir, root.specFile));
    const converter = new SchemaConverter(cache.get(root.specFile)!, { descriptions });
    result[root.exportName] = sortKeys(converter.convertDefinition(root.definition));
  }
  return result;
}

const size = (value: Json): number => Buffer.byteLength(JSON.stringify(value), 'utf8');

const TYPES = `/** JSON value as it may appear in \`default\` or \`enum\`. */
export type JSONValue = string | number | boolean | null | readonly JSONValue[] | { readonly [key: string]: JSONValue };

/** apiextensions.k8s.io/v1 JSONSchemaProps: the keys we use are typed, anything else is allowed. */
export interface JSONSchemaProps {
  readonly type?: string;
  readonly format?: string;
  readonly description?: string;
  readonly properties?: { readonly [name: string]: JSONSchemaProps };
  readonly additionalProperties?: JSONSchemaProps | boolean;
  readonly items?: JSONSchemaProps;
  readonly required?: readonly string[];
  readonly anyOf?: readonly JSONSchemaProps[];
  readonly allOf?: readonly JSONSchemaProps[];
  readonly oneOf?: readonly JSONSchemaProps[];
  readonly not?: JSONSchemaProps;
  readonly enum?: readonly JSONValue[];
  readonly default?: JSONValue;
  readonly pattern?: string;
  readonly nullable?: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-embedded-resource'?: boolean;
  readonly 'x-kubernetes-list-type'?: string;
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-map-type'?: string;
  readonly [key: string]: unknown;
}
`;

function render(schemas: { [exportName: string]: Json }, notes: string[]): string {
  const lines = [
    `// Generated by hack/gen-k8s-schemas.ts from ${K8S_MODULE} ${K8S_VERSION} api/openapi-spec. Do not edit.`,
    ...notes.map((n) => `// ${n}`),
    '// Regenerate: npx ts-node --transpile-only hack/gen-k8s-schemas.ts',
    '/* eslint-disable */',
    '',
    TYPES,
    `export const KUBERNETES_SCHEMA_SOURCE = '${K8S_MODULE} ${K8S_VERSION}';`,
  ];
  for (const [name, schema] of Object.entries(schemas)) {
    lines.push('', `export const ${name}: JSONSchemaProps = ${JSON.stringify(schema)};`);
  }
  return lines.join('\n') + '\n';
}

function main(argv: string[]): void {
  const flag = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const mode = flag('descriptions') ?? 'auto';
  if (!['auto', 'keep', 'drop'].includes(mode)) throw new Error(`--descriptions must be auto, keep or drop, not ${mode}`);
  const outFile = flag('out') ?? OUT_FILE;

  const specDir = downloadSpecDir();
  const withDocs = generate(specDir, true);
  const withoutDocs = generate(specDir, false);

  const pairBytes = size(withDocs.POD_SPEC_SCHEMA) + size(withDocs.PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA);
  const keep = mode === 'keep' || (mode === 'auto' && pairBytes <= DESCRIPTION_BUDGET_BYTES);
  const chosen = keep ? withDocs : withoutDocs;

  const notes = [
    `Descriptions: ${keep ? 'kept' : 'dropped'} (--descriptions=${mode}). With descriptions, PodSpec + PersistentVolumeClaimSpec`,
    `alone are ${pairBytes} bytes of JSON against a budget of ${DESCRIPTION_BUDGET_BYTES}: kubectl client-side apply copies the`,
    'whole CRD into the kubectl.kubernetes.io/last-applied-configuration annotation, which is capped at 256 KiB.',
    'Compact JSON bytes with / without descriptions, and property nodes (nested ones included):',
    ...ROOTS.map((r) => `  ${r.exportName}: ${size(withDocs[r.exportName])} / ${size(withoutDocs[r.exportName])}, ${countProperties(chosen[r.exportName])} properties`),
  ];
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, render(chosen, notes));
  for (const note of notes) console.error(note);
  console.error(`wrote ${path.relative(process.cwd(), outFile)}`);
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`gen-k8s-schemas: ${(err as Error).message}`);
    process.exit(1);
  }
}
