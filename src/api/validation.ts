/**
 * Validators shared by the constructs (at synth) and the operator (at reconcile).
 * Each returns `undefined` when the value is fine, or a sentence saying what is wrong and
 * what would be right, so callers can prefix it with the construct path and field name.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
// RFC 3339 date-time as Kubernetes accepts it for metav1.Time (seconds required, zone required).
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * A message when `value` is not a string. jsii callers (Python, Java) can pass any value where a
 * string is declared; the checks below report it instead of testing its string form.
 */
export function checkString(value: unknown): string | undefined {
  if (typeof value === 'string') return undefined;
  const shown = value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
  return `must be a string, got ${shown}; give a string`;
}

/**
 * A message when `value` is not a map of strings (labels, annotations, selectors). jsii callers can
 * pass a list or a scalar where a map is declared, and a list would otherwise read as keys "0", "1".
 */
export function checkStringMap(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return `must be a map of strings such as { team: "ml" }, got ${Array.isArray(value) ? 'a list' : JSON.stringify(value) ?? typeof value}`;
  }
  const bad = Object.entries(value).find(([, v]) => typeof v !== 'string');
  return bad ? `the value of "${bad[0]}" must be a string, got ${JSON.stringify(bad[1]) ?? typeof bad[1]}; quote numbers and booleans` : undefined;
}

/** A DNS-1123 subdomain: most object names (Pods, Sandboxes, PVCs). */
export function checkDns1123Subdomain(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  if (value.length === 0) return 'must not be empty';
  if (value.length > 253) return `must be at most 253 characters (it has ${value.length})`;
  const bad = value.split('.').find((part) => !DNS1123_LABEL.test(part));
  if (bad !== undefined) {
    return `"${value}" must consist of lowercase letters, digits, '-' and '.', and start and end with a letter or digit`;
  }
  return undefined;
}

/** A DNS-1123 label: namespaces, container names, port-less names. */
export function checkDns1123Label(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  if (value.length > 63) return `"${value}" must be at most 63 characters (it has ${value.length})`;
  if (!DNS1123_LABEL.test(value)) {
    return `"${value}" must consist of lowercase letters, digits and '-', and start and end with a letter or digit`;
  }
  return undefined;
}

/** A DNS-1035 label: what a Service name must be. */
export function checkDns1035Label(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  if (value.length > 63) return `"${value}" must be at most 63 characters (it has ${value.length})`;
  if (!DNS1035_LABEL.test(value)) {
    return `"${value}" must consist of lowercase letters, digits and '-', start with a letter and end with a letter or digit`;
  }
  return undefined;
}

/** A qualified name (label and annotation keys): optional DNS-subdomain prefix, then a name. */
export function checkQualifiedName(key: string): string | undefined {
  if (typeof key !== 'string') return checkString(key);
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && checkDns1123Subdomain(prefix) !== undefined) {
    return `key "${key}" has an invalid prefix: it must be a DNS subdomain such as "example.com"`;
  }
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME_PART.test(name)) {
    return `key "${key}" must be a name of at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit, with an optional DNS-subdomain prefix and '/'`;
  }
  return undefined;
}

/** A label value: at most 63 characters of the label charset, may be empty. */
export function checkLabelValue(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  if (value.length > 63 || !LABEL_VALUE.test(value)) {
    return `value "${value}" must be at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

/** An RFC 3339 timestamp as `metav1.Time` accepts, such as `2026-12-01T18:00:00Z`. */
export function checkRfc3339(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  if (!RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    return `"${value}" is not an RFC 3339 timestamp; use a form like "2026-12-01T18:00:00Z"`;
  }
  return undefined;
}

/** Kubernetes resource quantity, such as `500m`, `2`, `1Gi`. */
export function checkQuantity(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  const quantity = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(\d+(\.\d*)?|\.\d+)))?$/;
  return quantity.test(value) ? undefined : `"${value}" is not a Kubernetes quantity; use a form like "500m", "2" or "1Gi"`;
}

/** An IPv4 or IPv6 CIDR block. */
export function checkCidr(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  const [address, bits, extra] = value.split('/');
  const v4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(address ?? '');
  const v6 = !v4 && /^[0-9a-fA-F:]+$/.test(address ?? '') && (address ?? '').includes(':');
  const max = v4 ? 32 : 128;
  const prefix = Number(bits);
  if (extra !== undefined || !(v4 || v6) || bits === undefined || !/^\d+$/.test(bits) || prefix > max) {
    return `"${value}" is not a CIDR block; use a form like "10.0.0.0/8" or "fc00::/7"`;
  }
  return undefined;
}

/** Collects errors as `field: message` lines for one construct. */
export class ErrorList {
  private readonly errors: string[] = [];

  /** Record `message` for `field` when it is defined. */
  public check(field: string, message: string | undefined): void {
    if (message !== undefined) this.errors.push(`${field}: ${message}`);
  }

  /** Throw one error naming the construct and every problem, if there are any. */
  public throwIfAny(construct: string): void {
    if (this.errors.length > 0) {
      throw new Error(`${construct}: invalid props:\n  - ${this.errors.join('\n  - ')}`);
    }
  }

  /** The recorded lines. */
  public get all(): string[] {
    return [...this.errors];
  }
}
