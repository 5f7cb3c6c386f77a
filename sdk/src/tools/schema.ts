/**
 * The JSON Schema subset the sandbox tools describe their inputs with (what every framework and
 * MCP accept), and the check of an input against it: the model's arguments are untrusted, so each
 * tool checks them before anything is sent, and an error names the field and what it must be.
 */
import { SandboxConfigError } from '../errors.js';

/** One property of a tool's input. */
export type JsonSchemaProperty =
  | { readonly type: 'string'; readonly description: string; readonly enum?: readonly string[]; readonly minLength?: number; readonly default?: string }
  | { readonly type: 'integer' | 'number'; readonly description: string; readonly minimum?: number; readonly maximum?: number; readonly default?: number }
  | { readonly type: 'boolean'; readonly description: string; readonly default?: boolean };

/** A tool's input: a JSON object with these properties and no others. */
export interface ToolInputSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, JsonSchemaProperty>>;
  readonly required: readonly string[];
  readonly additionalProperties: false;
}

/**
 * Checks `input` against `schema` and returns it as a record. Throws a SandboxConfigError whose
 * `field` is the first offending property (`input` when the input is not an object).
 */
export function validateToolInput(schema: ToolInputSchema, input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new SandboxConfigError('input', `must be a JSON object, got ${describe(input)}`);
  }
  const record = input as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!Object.prototype.hasOwnProperty.call(schema.properties, key)) {
      const known = Object.keys(schema.properties);
      throw new SandboxConfigError(key, `is not a parameter of this tool (its parameters: ${known.join(', ') || 'none'})`);
    }
  }
  for (const key of schema.required) {
    if (record[key] === undefined || record[key] === null) throw new SandboxConfigError(key, 'is required');
  }
  for (const [key, property] of Object.entries(schema.properties)) {
    const value = record[key];
    // null stands for "not given": some models send it for optional parameters.
    if (value === undefined || value === null) continue;
    checkProperty(key, property, value);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (value !== null && value !== undefined) out[key] = value;
  return out;
}

function checkProperty(key: string, property: JsonSchemaProperty, value: unknown): void {
  switch (property.type) {
    case 'string':
      if (typeof value !== 'string') throw new SandboxConfigError(key, `must be a string, got ${describe(value)}`);
      if (property.enum && !property.enum.includes(value)) throw new SandboxConfigError(key, `must be one of ${property.enum.map((e) => `"${e}"`).join(', ')}, got "${value}"`);
      if (property.minLength !== undefined && value.length < property.minLength) throw new SandboxConfigError(key, property.minLength === 1 ? 'must not be empty' : `must be at least ${property.minLength} characters`);
      return;
    case 'integer':
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new SandboxConfigError(key, `must be a number, got ${describe(value)}`);
      if (property.type === 'integer' && !Number.isInteger(value)) throw new SandboxConfigError(key, `must be a whole number, got ${value}`);
      const { minimum, maximum } = property;
      if ((minimum !== undefined && value < minimum) || (maximum !== undefined && value > maximum)) {
        throw new SandboxConfigError(key, `must be between ${minimum ?? '-∞'} and ${maximum ?? '∞'}, got ${value}`);
      }
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw new SandboxConfigError(key, `must be true or false, got ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
