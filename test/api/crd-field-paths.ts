/**
 * Field paths of a CRD version's schema, and the comparison of ours with upstream's that
 * test/api/upstream-crds.test.ts runs: every field upstream declares must be in ours with the same
 * shape, and every field only ours has must be on an allow-list that says why.
 *
 * A path names a schema node from the version's root: `spec.podTemplate.spec.containers[].name`;
 * `[]` steps into an array's items and `{}` into a map's values (additionalProperties).
 */

/** What of a node the comparison holds against upstream's. */
export interface FieldShape {
  /** The OpenAPI type; `int-or-string` for x-kubernetes-int-or-string, `any` for a node with neither. */
  readonly type: string;
  readonly format?: string;
  /** Sorted, so order alone is no difference. */
  readonly enum?: readonly unknown[];
  readonly default?: unknown;
  /** Of an object node: its required properties, sorted. */
  readonly required?: readonly string[];
}

export type FieldPaths = ReadonlyMap<string, FieldShape>;

/** The parts of a CRD version compared: the user's half and the controller's. */
export const COMPARED_ROOTS = ['spec', 'status'] as const;

function shapeOf(node: any): FieldShape {
  const type = node.type ?? (node['x-kubernetes-int-or-string'] ? 'int-or-string' : 'any');
  return {
    type,
    ...(node.format !== undefined ? { format: node.format } : {}),
    ...(node.enum !== undefined ? { enum: [...node.enum].sort() } : {}),
    ...(node.default !== undefined ? { default: node.default } : {}),
    ...(node.required !== undefined && node.required.length > 0 ? { required: [...node.required].sort() } : {}),
  };
}

/** Every node under `spec` and `status` of an openAPIV3Schema, by path. */
export function fieldPaths(openAPIV3Schema: any): FieldPaths {
  const out = new Map<string, FieldShape>();
  const visit = (node: any, path: string) => {
    if (!node || typeof node !== 'object') return;
    out.set(path, shapeOf(node));
    for (const [name, child] of Object.entries(node.properties ?? {})) visit(child, `${path}.${name}`);
    if (node.items) visit(node.items, `${path}[]`);
    if (node.additionalProperties && typeof node.additionalProperties === 'object') visit(node.additionalProperties, `${path}{}`);
  };
  for (const root of COMPARED_ROOTS) visit(openAPIV3Schema?.properties?.[root], root);
  return out;
}

/** The names of the versions a CRD serves. */
export function servedVersions(crd: any): string[] {
  return (crd?.spec?.versions ?? []).filter((v: any) => v.served).map((v: any) => v.name);
}

/** The openAPIV3Schema of one served version of a CRD. */
export function versionSchema(crd: any, version: string): any {
  const found = (crd?.spec?.versions ?? []).find((v: any) => v.name === version && v.served);
  if (!found?.schema?.openAPIV3Schema) throw new Error(`${crd?.spec?.names?.kind ?? 'CRD'} serves no version ${version} with a schema`);
  return found.schema.openAPIV3Schema;
}

/** Whether `path` is `entry` or lies beneath it. */
function isUnder(path: string, entry: string): boolean {
  return path === entry || path.startsWith(`${entry}.`) || path.startsWith(`${entry}[]`) || path.startsWith(`${entry}{}`);
}

const show = (v: unknown) => JSON.stringify(v);

/**
 * What differs between upstream's fields and ours, one line each, naming the path and the fix;
 * empty when they agree. `ourExtensions` maps a path (covering everything beneath it) that only
 * ours has to the reason it is there; an entry that covers nothing ours alone has is reported too,
 * so the list cannot hide a field once upstream adds it or ours drops it.
 */
export function compareFieldPaths(upstream: FieldPaths, ours: FieldPaths, ourExtensions: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const [path, want] of upstream) {
    const have = ours.get(path);
    if (!have) {
      problems.push(`${path}: upstream declares it (${want.type}), ours lacks it; add it to src/api/schema.ts`);
      continue;
    }
    for (const key of ['type', 'format', 'enum', 'default', 'required'] as const) {
      if (show(want[key]) !== show(have[key])) {
        problems.push(`${path}: ${key} is ${show(have[key]) ?? 'unset'} in ours, ${show(want[key]) ?? 'unset'} upstream; make src/api/schema.ts match`);
      }
    }
  }
  const oursOnly = [...ours.keys()].filter((path) => !upstream.has(path));
  const entries = Object.keys(ourExtensions);
  for (const path of oursOnly) {
    if (!entries.some((entry) => isUnder(path, entry))) {
      problems.push(`${path}: only ours has it and no allow-list entry covers it; add it, with its reason, to the allow-list or remove the field`);
    }
  }
  for (const entry of entries) {
    if (!ourExtensions[entry]?.trim()) problems.push(`${entry}: allow-list entry without a reason; say why ours has the field`);
    if (!oursOnly.some((path) => isUnder(path, entry))) {
      problems.push(`${entry}: allow-list entry covers no field only ours has (upstream has it now, or ours dropped it); remove the entry`);
    }
  }
  return problems;
}
