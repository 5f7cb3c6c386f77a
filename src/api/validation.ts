/**
 * Validators shared by the constructs (at synth) and the operator (at reconcile).
 * Each returns `undefined` when the value is fine, or a sentence saying what is wrong and
 * what would be right, so callers can prefix it with the construct path and field name.
 */

import { propName } from './spelling';

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

// <sign>? <digits>[.<digits>] and at most one suffix: binary SI (Ki ... Ei), decimal SI (n u m k M G T P E)
// or a decimal exponent (e3, E-2; the exponent is a whole number), as resource.ParseQuantity reads it.
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([KMGTPE])i|([numkMGTPE])|[eE]([+-]?\d{1,10}))?$/;
const DECIMAL_SI: { readonly [suffix: string]: number } = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SI: { readonly [prefix: string]: number } = { K: 10, M: 20, G: 30, T: 40, P: 50, E: 60 };
const TEN = BigInt(10);
const NANOS_PER_UNIT = TEN ** BigInt(9);
// The API server caps a quantity at 2^63-1 and rounds a non-zero one up to a whole number of nano-units.
const MAX_NANOS = (BigInt(2) ** BigInt(63) - BigInt(1)) * NANOS_PER_UNIT;

/**
 * A quantity as the API server holds it, in nano-units (`1` is 10^9, `1Ki` is 1024 * 10^9, `1n` is 1):
 * exact, rounded up to a whole nano-unit and capped at 2^63-1 units as `resource.ParseQuantity` does,
 * so comparisons agree with the API server's. `undefined` when `value` is not a quantity.
 */
export function parseQuantity(value: string): bigint | undefined {
  const match = typeof value === 'string' ? QUANTITY.exec(value) : null;
  if (!match) return undefined;
  const [, sign, number, binary, decimal, exponent] = match;
  const [whole, fraction = ''] = number.split('.');
  const digits = BigInt(`0${whole}${fraction}`);
  if (digits === BigInt(0)) return BigInt(0);
  // value = digits * 10^power10 * 2^power2 units; in nano-units the power of ten gains 9.
  const power10 = (decimal ? DECIMAL_SI[decimal] : Number(exponent ?? 0)) - fraction.length + 9;
  const power2 = binary ? BINARY_SI[binary] : 0;
  const significant = digits.toString().length;
  let nanos: bigint;
  if (significant + power10 + power2 * Math.log10(2) > 30) {
    nanos = MAX_NANOS; // far above the cap (2^63 units are 28 digits of nano-units): skip the huge power
  } else if (power10 >= 0) {
    nanos = digits * TEN ** BigInt(power10) * BigInt(2) ** BigInt(power2);
  } else if (-power10 > significant + power2) {
    nanos = BigInt(1); // below one nano-unit, rounded up
  } else {
    const numerator = digits * BigInt(2) ** BigInt(power2);
    const divisor = TEN ** BigInt(-power10);
    nanos = (numerator + divisor - BigInt(1)) / divisor;
  }
  if (nanos > MAX_NANOS) nanos = MAX_NANOS;
  return sign === '-' ? -nanos : nanos;
}

/**
 * A Kubernetes quantity, such as `500m`, `2`, `1Gi`, `1.5e3`: its form only, where a sign is allowed,
 * as in the API's Quantity type. Amounts of a resource cannot be negative: check those with
 * {@link checkNonNegativeQuantity} or {@link checkPositiveQuantity}.
 */
export function checkQuantity(value: string): string | undefined {
  if (typeof value !== 'string') return checkString(value);
  return parseQuantity(value) === undefined ? `"${value}" is not a Kubernetes quantity; use a form like "500m", "2" or "1Gi"` : undefined;
}

/** A quantity of 0 or more: what the API server accepts for resource requests and limits, overhead and sizes. */
export function checkNonNegativeQuantity(value: string): string | undefined {
  const form = checkQuantity(value);
  if (form !== undefined) return form;
  return parseQuantity(value)! < BigInt(0) ? `"${value}" is negative; a resource amount must be 0 or more, such as "${value.slice(1)}"` : undefined;
}

/** A quantity above 0: what the API server accepts for a metric target or a volume claim's storage. */
export function checkPositiveQuantity(value: string): string | undefined {
  const form = checkQuantity(value);
  if (form !== undefined) return form;
  return parseQuantity(value)! <= BigInt(0) ? `"${value}" must be more than 0, such as "1", "500m" or "1Gi"` : undefined;
}

/** `a` compared with `b` (both quantities): negative when less, 0 when equal, positive when more. */
export function compareQuantities(a: string, b: string): number {
  const [x, y] = [parseQuantity(a), parseQuantity(b)];
  if (x === undefined || y === undefined) throw new Error(`compareQuantities: "${x === undefined ? a : b}" is not a quantity`);
  return x < y ? -1 : x > y ? 1 : 0;
}

const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];
const HUGEPAGES = 'hugepages-';

/**
 * A resource name a container may request or limit, as the API server's validateContainerResourceName
 * decides: `cpu`, `memory`, `ephemeral-storage`, `hugepages-<page size>`, a name in a `kubernetes.io`
 * domain, or an extended resource: a domain-prefixed name such as `nvidia.com/gpu` (not `requests.`-prefixed,
 * which is the quota spelling). Anything else without a `/`, such as `gpu` or `requests.cpu`, is refused.
 */
export function checkContainerResourceName(name: string): string | undefined {
  if (typeof name !== 'string') return checkString(name);
  const examples = 'use cpu, memory, ephemeral-storage, hugepages-<size> such as hugepages-2Mi, or a domain-prefixed extended resource such as nvidia.com/gpu';
  if (checkQualifiedName(name) !== undefined) return `"${name}" is not a resource name; ${examples}`;
  if (!name.includes('/')) {
    if (STANDARD_CONTAINER_RESOURCES.includes(name)) return undefined;
    if (name.startsWith(HUGEPAGES)) {
      const size = parseQuantity(name.slice(HUGEPAGES.length));
      return size !== undefined && size > BigInt(0) ? undefined : `"${name}" needs a page size after "hugepages-", such as hugepages-2Mi or hugepages-1Gi`;
    }
    return `"${name}" is not a container resource: an extended resource must be fully qualified with a domain, such as "example.com/${name}"; otherwise ${examples}`;
  }
  if (name.includes('kubernetes.io/')) return undefined; // a native resource
  if (name.startsWith('requests.') || checkQualifiedName(`requests.${name}`) !== undefined) {
    return `"${name}" does not follow the extended resource name standard; use a domain and a name such as "nvidia.com/gpu" (no "requests." prefix)`;
  }
  return undefined;
}

/** Whether a container resource is an extended one (domain-prefixed, outside kubernetes.io): counted in whole units, never overcommitted. */
function isExtendedResource(name: string): boolean {
  return name.includes('/') && !name.includes('kubernetes.io/');
}

/** Requests and limits of a container, by resource name (the shape of `ContainerResources`). */
interface ResourceLists {
  readonly requests?: { readonly [name: string]: string };
  readonly limits?: { readonly [name: string]: string };
}

/**
 * A container's `resources` as the API server validates them (ValidateContainerResourceRequirements):
 * names (see {@link checkContainerResourceName}), amounts of 0 or more, whole numbers for extended
 * resources, requests at most the limits, requests equal to the limits and a limit given for extended
 * resources and huge pages, huge pages in whole pages and only together with cpu or memory.
 * `field` names the resources prop, such as `containers[0].resources`.
 */
export function checkContainerResources(
  errors: ErrorList, field: string, resources: ResourceLists | undefined, listFields?: { readonly requests?: string; readonly limits?: string },
): void {
  if (resources === undefined) return;
  // Where a list is, as the prop spells it: `<field>.limits` unless the caller names it (a RuntimeClass's overhead is one list).
  const at = (kind: 'requests' | 'limits') => listFields?.[kind] ?? `${field}.${kind}`;
  if (resources === null || typeof resources !== 'object' || Array.isArray(resources)) {
    errors.prop(field, `must be an object with ${propName('requests')} and/or ${propName('limits')}, each a map from resource name to quantity, such as cpu: "500m"`);
    return;
  }
  const valid: { requests: Map<string, bigint>; limits: Map<string, bigint> } = { requests: new Map(), limits: new Map() };
  for (const kind of ['requests', 'limits'] as const) {
    const list = resources[kind];
    if (list === undefined) continue;
    const form = checkStringMap(list);
    if (form !== undefined) {
      errors.prop(at(kind), form);
      continue;
    }
    for (const [name, quantity] of Object.entries(list)) {
      const where = `${at(kind)}["${name}"]`;
      const nameError = checkContainerResourceName(name);
      const amountError = checkNonNegativeQuantity(quantity);
      errors.prop(where, nameError);
      errors.prop(where, amountError);
      if (nameError !== undefined || amountError !== undefined) continue;
      const nanos = parseQuantity(quantity)!;
      if (isExtendedResource(name) && nanos % NANOS_PER_UNIT !== BigInt(0)) {
        errors.prop(where, `"${quantity}" must be a whole number: an extended resource is counted in whole units`);
        continue;
      }
      if (name.startsWith(HUGEPAGES)) {
        const page = parseQuantity(name.slice(HUGEPAGES.length))!;
        if (nanos % page !== BigInt(0)) {
          errors.prop(where, `"${quantity}" is not a whole number of ${name.slice(HUGEPAGES.length)} pages; use a multiple of the page size`);
          continue;
        }
      }
      valid[kind].set(name, nanos);
    }
  }
  for (const [name, request] of valid.requests) {
    const limit = valid.limits.get(name);
    const overcommit = !isExtendedResource(name) && !name.startsWith(HUGEPAGES);
    const requested = resources.requests![name];
    if (limit === undefined) {
      if (!overcommit) errors.prop(`${at('limits')}["${name}"]`, `is required when ${name} is requested: give a limit equal to the request ("${requested}")`);
    } else if (!overcommit && request !== limit) {
      errors.prop(`${at('requests')}["${name}"]`, `"${requested}" must equal the ${name} limit ("${resources.limits![name]}"): ${name} cannot be overcommitted; give both the same amount`);
    } else if (request > limit) {
      errors.prop(`${at('requests')}["${name}"]`, `"${requested}" is more than the ${name} limit ("${resources.limits![name]}"); lower the request or raise the limit`);
    }
  }
  const names = [...valid.requests.keys(), ...valid.limits.keys()];
  if (names.some((n) => n.startsWith(HUGEPAGES)) && !names.some((n) => n === 'cpu' || n === 'memory')) {
    errors.prop(field, 'huge pages need a cpu or memory request or limit as well; add one, such as a memory limit of "1Gi"');
  }
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

/**
 * Collects errors as `name: message` lines for one construct. A line names either a prop of the
 * construct ({@link ErrorList.prop}: `idlePolicy.suspendAfter`, spelled as the caller's language
 * spells it, so `idle_policy.suspend_after` from Python) or a field of the rendered manifest
 * ({@link ErrorList.field}: `spec.podTemplate.spec.serviceAccountName`, YAML, spelled as is).
 */
export class ErrorList {
  private readonly errors: string[] = [];

  /** Record `message` for the prop path `path` (see `propName`) when it is defined. */
  public prop(path: string, message: string | undefined): void {
    if (message !== undefined) this.errors.push(`${propName(path)}: ${message}`);
  }

  /** Record `message` for the manifest field `path`, spelled as in the YAML, when it is defined. */
  public field(path: string, message: string | undefined): void {
    if (message !== undefined) this.errors.push(`${path}: ${message}`);
  }

  /** The same as {@link ErrorList.prop}: `path` is a prop path. */
  public check(path: string, message: string | undefined): void {
    this.prop(path, message);
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

/** An Error for one bad prop, `path: message`, with the prop spelled as the caller's language spells it. */
export function propError(path: string, message: string): Error {
  return new Error(`${propName(path)}: ${message}`);
}
