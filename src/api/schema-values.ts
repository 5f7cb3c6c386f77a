/**
 * Checks a value against the OpenAPI v3 schemas of our CRDs the way the API server's structural
 * validation does (types, int32/int64 ranges, enums, patterns, lengths, minimum/maximum, required
 * fields, list-map key uniqueness) and reports fields the API server would prune as unknown.
 * CEL rules (x-kubernetes-validations) are not evaluated.
 *
 * The constructs run it on their rendered spec at synth, so a prop of the wrong type or outside
 * the allowed values fails with the manifest field named instead of being rejected at apply time
 * or, for unknown fields, silently dropped.
 *
 * Internal: not exported from index.ts.
 */

type Schema = { readonly [key: string]: any };

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A short, bounded rendering of a value for a message. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${String(value)}`;
  return typeof value;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * One `path: problem; fix` line per problem of `value` against `schema`; empty when the API server
 * would accept it (CEL rules aside) and prune nothing.
 */
export function schemaValueErrors(schema: Schema, value: unknown, path: string): string[] {
  const errors: string[] = [];
  check(schema, value, path, errors);
  return errors;
}

function check(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (value === undefined) return;
  if (value === null) {
    if (schema.nullable !== true) errors.push(`${path}: must not be null; leave it out or give a value`);
    return;
  }
  if (schema['x-kubernetes-int-or-string'] === true) {
    if (!(typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value)))) {
      errors.push(`${path}: must be a whole number or a string, got ${describeValue(value)}`);
    }
    return;
  }
  switch (schema.type) {
    case 'string': return checkString(schema, value, path, errors);
    case 'integer': return checkInteger(schema, value, path, errors);
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) errors.push(`${path}: must be a finite number, got ${describeValue(value)}`);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') errors.push(`${path}: must be true or false, got ${describeValue(value)}`);
      return;
    case 'array': return checkArray(schema, value, path, errors);
    case 'object': return checkObject(schema, value, path, errors);
    default: return;
  }
}

function checkString(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (typeof value !== 'string') {
    errors.push(`${path}: must be a string, got ${describeValue(value)}`);
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    errors.push(`${path}: ${describeValue(value)} is not allowed; use one of ${schema.enum.join(', ')}`);
  }
  if (typeof schema.maxLength === 'number' && [...value].length > schema.maxLength) {
    errors.push(`${path}: must be at most ${schema.maxLength} characters (it has ${[...value].length})`);
  }
  if (typeof schema.minLength === 'number' && [...value].length < schema.minLength) {
    errors.push(`${path}: must be at least ${schema.minLength} characters`);
  }
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) {
    errors.push(`${path}: ${describeValue(value)} does not match ${schema.pattern}`);
  }
  if (schema.format === 'date-time' && (!RFC3339.test(value) || Number.isNaN(Date.parse(value)))) {
    errors.push(`${path}: ${describeValue(value)} is not an RFC 3339 timestamp; use a form like "2026-12-01T18:00:00Z"`);
  }
}

function checkInteger(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    errors.push(`${path}: must be a whole number, got ${describeValue(value)}`);
    return;
  }
  if (schema.format === 'int32' && (value < INT32_MIN || value > INT32_MAX)) {
    errors.push(`${path}: ${value} is out of range; use a whole number from ${INT32_MIN} to ${INT32_MAX}`);
  } else if (!Number.isSafeInteger(value)) {
    errors.push(`${path}: ${value} is too large to be exact; use a whole number of at most ${Number.MAX_SAFE_INTEGER}`);
  }
  if (typeof schema.minimum === 'number' && value < schema.minimum) {
    errors.push(`${path}: ${value} is below the minimum; use ${schema.minimum} or more`);
  }
  if (typeof schema.maximum === 'number' && value > schema.maximum) {
    errors.push(`${path}: ${value} is above the maximum; use ${schema.maximum} or less`);
  }
}

function checkArray(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (!Array.isArray(value)) {
    errors.push(`${path}: must be a list, got ${describeValue(value)}`);
    return;
  }
  if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) {
    errors.push(`${path}: must have at most ${schema.maxItems} items (it has ${value.length})`);
  }
  value.forEach((item, i) => {
    if (item === undefined) errors.push(`${path}[${i}]: must not be undefined; remove the empty entry`);
    else if (schema.items) check(schema.items, item, `${path}[${i}]`, errors);
  });
  const listType = schema['x-kubernetes-list-type'];
  const keys: string[] | undefined = schema['x-kubernetes-list-map-keys'];
  if (listType === 'map' && keys) {
    const seen = new Set<string>();
    for (const item of value) {
      if (!isPlainObject(item)) continue;
      const key = JSON.stringify(keys.map((k) => item[k]));
      if (seen.has(key)) errors.push(`${path}: two items share ${keys.join(', ')} ${keys.map((k) => describeValue(item[k])).join(', ')}; make each unique`);
      seen.add(key);
    }
  } else if (listType === 'set') {
    const seen = new Set<string>();
    for (const item of value) {
      const key = JSON.stringify(item);
      if (seen.has(key)) errors.push(`${path}: ${describeValue(item)} is listed twice; list each value once`);
      seen.add(key);
    }
  }
}

function checkObject(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (!isPlainObject(value)) {
    errors.push(`${path}: must be an object, got ${describeValue(value)}`);
    return;
  }
  for (const field of schema.required ?? []) {
    if (value[field] === undefined) errors.push(`${path}.${field}: is required; give a value`);
  }
  const properties: Record<string, Schema> | undefined = schema.properties;
  const additional = schema.additionalProperties;
  for (const [key, sub] of Object.entries(value)) {
    const where = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
    if (properties) {
      if (key in properties) check(properties[key], sub, where, errors);
      else errors.push(`${where}: is not a field of this object and would be dropped by the API server; remove it`);
    } else if (isPlainObject(additional)) {
      check(additional, sub, where, errors);
    }
  }
}
