/**
 * A checker for the rules the apiserver enforces on apiextensions.k8s.io/v1 CRD schemas
 * ("structural schemas", https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema),
 * plus the neighbouring v1 restrictions that a hand-written or generated schema most easily
 * breaks. A CRD that fails them is rejected on create, which in a cdk8s library only shows up
 * when someone applies the manifest, so tests run this instead.
 *
 * Internal: not exported from index.ts.
 */

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);
const TYPES = new Set([...SCALAR_TYPES, 'object', 'array']);
const JUNCTORS = ['allOf', 'anyOf', 'oneOf'] as const;
/** Structural rule 3: value validations only inside junctors, never these. */
const FORBIDDEN_IN_JUNCTORS = ['type', 'description', 'default', 'additionalProperties', 'nullable'];
/** JSON-Schema keywords that apiextensions.k8s.io/v1 rejects outright. */
const FORBIDDEN_KEYS = ['$ref', '$schema', 'id', 'definitions', 'dependencies', 'patternProperties', 'additionalItems'];

type Schema = { readonly [key: string]: unknown };

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Returns one message per violation, each prefixed with the JSON path of the offending node
 * (`path` names the root). An empty array means the apiserver's structural checks would pass.
 * `schema` is `unknown` so that any schema-shaped value can be checked, typed or not.
 */
export function structuralErrors(schema: unknown, path = '<root>'): string[] {
  const errors: string[] = [];
  checkNode(schema, path, false, errors);
  return errors;
}

/** `inJunctor`: the node is (inside) an allOf/anyOf/oneOf/not branch, where only value validations may appear. */
function checkNode(node: unknown, path: string, inJunctor: boolean, errors: string[]): void {
  if (!isSchema(node)) {
    errors.push(`${path}: schema must be an object, got ${JSON.stringify(node)}`);
    return;
  }
  for (const key of FORBIDDEN_KEYS) {
    if (key in node) errors.push(`${path}: ${key} is not allowed in a CRD schema`);
  }
  if (node.uniqueItems === true) errors.push(`${path}: uniqueItems cannot be true (quadratic validation cost)`);

  const intOrString = node['x-kubernetes-int-or-string'] === true;
  const preserveUnknown = node['x-kubernetes-preserve-unknown-fields'] === true;
  if ('x-kubernetes-preserve-unknown-fields' in node && !preserveUnknown) {
    errors.push(`${path}: x-kubernetes-preserve-unknown-fields must be true if set`);
  }

  if (inJunctor) {
    for (const key of FORBIDDEN_IN_JUNCTORS) {
      if (key in node) errors.push(`${path}: ${key} is not allowed inside allOf/anyOf/oneOf/not`);
    }
  } else {
    checkType(node, path, intOrString, preserveUnknown, errors);
  }
  if (intOrString) checkIntOrString(node, path, errors);

  checkChildren(node, path, inJunctor, errors);
  checkJunctors(node, path, intOrString, errors);
  if (!inJunctor) {
    checkListType(node, path, errors);
    checkMapType(node, path, errors);
  }
}

/** Structural rule 1: every node outside junctors has a type, except int-or-string and preserve-unknown-fields nodes. */
function checkType(node: Schema, path: string, intOrString: boolean, preserveUnknown: boolean, errors: string[]): void {
  const type = node.type;
  if (type === undefined) {
    if (!intOrString && !preserveUnknown) errors.push(`${path}: type is required in a structural schema`);
    return;
  }
  if (typeof type !== 'string' || !TYPES.has(type)) {
    errors.push(`${path}: type must be one of ${[...TYPES].join(', ')}, got ${JSON.stringify(type)}`);
    return;
  }
  if (intOrString) errors.push(`${path}: an x-kubernetes-int-or-string node must not set type`);
  if (type === 'array' && node.items === undefined) errors.push(`${path}: items must be set for type array`);
  if (type !== 'array' && node.items !== undefined) errors.push(`${path}: items is only allowed for type array`);
  if (type !== 'object' && (node.properties !== undefined || node.additionalProperties !== undefined)) {
    errors.push(`${path}: properties/additionalProperties are only allowed for type object`);
  }
}

function checkIntOrString(node: Schema, path: string, errors: string[]): void {
  // The only junctor content accepted next to the int-or-string extension. (The apiserver also
  // accepts it wrapped in allOf; controller-gen never emits that, so neither do we.)
  const expected = JSON.stringify([{ type: 'integer' }, { type: 'string' }]);
  if (node.anyOf !== undefined && JSON.stringify(node.anyOf) !== expected) {
    errors.push(`${path}: x-kubernetes-int-or-string allows only anyOf: [{type: integer}, {type: string}]`);
  }
  if (node.allOf !== undefined || node.oneOf !== undefined || node.not !== undefined) {
    errors.push(`${path}: x-kubernetes-int-or-string allows no junctor but anyOf`);
  }
}

function checkChildren(node: Schema, path: string, inJunctor: boolean, errors: string[]): void {
  if (node.properties !== undefined) {
    if (!isSchema(node.properties)) {
      errors.push(`${path}: properties must be an object`);
    } else {
      for (const [name, sub] of Object.entries(node.properties)) checkNode(sub, `${path}.${name}`, inJunctor, errors);
    }
  }
  if (node.properties !== undefined && node.additionalProperties !== undefined) {
    errors.push(`${path}: properties and additionalProperties are mutually exclusive`);
  }
  if (node.additionalProperties === false) {
    errors.push(`${path}: additionalProperties cannot be false (unknown fields are pruned instead)`);
  } else if (node.additionalProperties !== undefined && node.additionalProperties !== true) {
    checkNode(node.additionalProperties, `${path}{}`, inJunctor, errors);
  }
  if (node.items !== undefined) {
    if (Array.isArray(node.items)) errors.push(`${path}: items must be a single schema, not a tuple`);
    else checkNode(node.items, `${path}[]`, inJunctor, errors);
  }
  if (node.required !== undefined && !(Array.isArray(node.required) && node.required.every((r) => typeof r === 'string'))) {
    errors.push(`${path}: required must be a list of field names`);
  }
}

/**
 * Structural rules 2 and 3: junctor branches may only repeat, never introduce, fields and
 * items, and may only carry value validations.
 */
function checkJunctors(node: Schema, path: string, intOrString: boolean, errors: string[]): void {
  const branches: Array<[string, unknown]> = [];
  for (const junctor of JUNCTORS) {
    const value = node[junctor];
    if (value === undefined) continue;
    if (!Array.isArray(value)) {
      errors.push(`${path}: ${junctor} must be a list of schemas`);
      continue;
    }
    value.forEach((branch, i) => branches.push([`${path}.${junctor}[${i}]`, branch]));
  }
  if (node.not !== undefined) branches.push([`${path}.not`, node.not]);

  for (const [branchPath, branch] of branches) {
    // The int-or-string alternatives are the one place `type` may appear in a junctor.
    if (intOrString && isSchema(branch) && Object.keys(branch).length === 1 && (branch.type === 'integer' || branch.type === 'string')) continue;
    checkNode(branch, branchPath, true, errors);
    checkSpecifiedOutside(node, branch, branchPath, errors);
  }
}

/** Every property and items schema used in a junctor branch must also exist outside the junctors. */
function checkSpecifiedOutside(outside: Schema, branch: unknown, path: string, errors: string[]): void {
  if (!isSchema(branch)) return;
  const outsideProps = isSchema(outside.properties) ? outside.properties : {};
  if (isSchema(branch.properties)) {
    for (const [name, sub] of Object.entries(branch.properties)) {
      if (!(name in outsideProps)) errors.push(`${path}.${name}: field is specified only inside a junctor`);
      else checkSpecifiedOutside(outsideProps[name] as Schema, sub, `${path}.${name}`, errors);
    }
  }
  if (branch.items !== undefined) {
    if (outside.items === undefined) errors.push(`${path}[]: items are specified only inside a junctor`);
    else if (isSchema(outside.items)) checkSpecifiedOutside(outside.items, branch.items, `${path}[]`, errors);
  }
}

/** Server-side-apply list semantics: validated by the apiserver at CRD creation. */
function checkListType(node: Schema, path: string, errors: string[]): void {
  const listType = node['x-kubernetes-list-type'];
  const keys = node['x-kubernetes-list-map-keys'];
  if (keys !== undefined && listType !== 'map') errors.push(`${path}: x-kubernetes-list-map-keys requires x-kubernetes-list-type map`);
  if (listType === undefined) return;
  if (node.type !== 'array') errors.push(`${path}: x-kubernetes-list-type is only allowed on arrays`);
  const items = isSchema(node.items) ? node.items : {};
  if (listType === 'set') {
    if (items.type !== undefined && !SCALAR_TYPES.has(items.type as string) && items['x-kubernetes-map-type'] !== 'atomic') {
      errors.push(`${path}: x-kubernetes-list-type set needs scalar or atomic items`);
    }
  } else if (listType === 'map') {
    checkListMapKeys(items, keys, path, errors);
  } else if (listType !== 'atomic') {
    errors.push(`${path}: x-kubernetes-list-type must be atomic, set or map, got ${JSON.stringify(listType)}`);
  }
}

function checkListMapKeys(items: Schema, keys: unknown, path: string, errors: string[]): void {
  if (items.type !== 'object') errors.push(`${path}: x-kubernetes-list-type map needs object items`);
  if (!Array.isArray(keys) || keys.length === 0) {
    errors.push(`${path}: x-kubernetes-list-type map needs non-empty x-kubernetes-list-map-keys`);
    return;
  }
  const props = isSchema(items.properties) ? items.properties : {};
  const required = Array.isArray(items.required) ? items.required : [];
  for (const key of keys) {
    const prop = props[key as string];
    if (!isSchema(prop)) {
      errors.push(`${path}: list map key ${JSON.stringify(key)} is not a property of the items`);
      continue;
    }
    if (!SCALAR_TYPES.has(prop.type as string)) errors.push(`${path}: list map key ${key} must be a scalar`);
    // A key absent from an item would make the item unaddressable by server-side apply.
    if (!required.includes(key) && prop.default === undefined) {
      errors.push(`${path}: list map key ${key} must be required or have a default`);
    }
  }
}

function checkMapType(node: Schema, path: string, errors: string[]): void {
  const mapType = node['x-kubernetes-map-type'];
  if (mapType === undefined) return;
  if (mapType !== 'atomic' && mapType !== 'granular') errors.push(`${path}: x-kubernetes-map-type must be atomic or granular`);
  if (node.type !== 'object') errors.push(`${path}: x-kubernetes-map-type is only allowed on objects`);
}
