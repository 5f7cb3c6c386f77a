/**
 * The operator's command-line flags, defined once: the install bundle renders Deployment args from
 * this table and the operator's CLI parser reads the same table, so a flag's name, type, default and
 * rules cannot drift between the manifest and the binary. Names follow upstream's
 * `agent-sandbox-controller` where upstream has the flag (cmd/agent-sandbox-controller/main.go), so a tuning guide
 * written for upstream applies unchanged.
 *
 * Durations are milliseconds in typed values and Go-style strings (`5m`, `30s`) on the command line.
 */
import { parseCidr } from './network-policy-defaults';
import { checkDns1123Label, checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './validation';

/** How a flag's value is typed and spelled on the command line. */
export type ControllerFlagType = 'int' | 'float' | 'bool' | 'string' | 'duration';

/** A typed flag value: numbers for int, float and duration (milliseconds), booleans, strings. */
export type ControllerFlagValue = number | boolean | string;

/** One command-line flag of the operator. */
export interface ControllerFlag {
  /** Name without the leading `--`. */
  readonly flag: string;
  readonly type: ControllerFlagType;
  /** The value the binary uses when the flag is absent; args are rendered only for other values. */
  readonly default: ControllerFlagValue;
  readonly description: string;
  /** Rules beyond the type; returns a sentence saying what is wrong and what would be right. */
  readonly validate?: (value: never) => string | undefined;
}

/** Typed values keyed by flag name; absent means the default. */
export type ControllerFlagValues = { readonly [flag: string]: ControllerFlagValue | undefined };

/** A problem with one flag's value. */
export interface ControllerFlagProblem {
  readonly flag: string;
  readonly message: string;
}

const positive = (what: string) => (value: number) =>
  value > 0 ? undefined : `must be greater than 0 (it is ${value}); ${what}`;
const workers = positive('use at least 1 worker');
const atLeastZero = (value: number) =>
  value >= 0 ? undefined : `must not be negative (it is ${formatGoDuration(value)}); use 0s to disable`;
const positiveDuration = (value: number) =>
  value > 0 ? undefined : `must be greater than 0s (it is ${formatGoDuration(value)}); use a duration such as "30s" or "5m"`;
const hostPort = (value: string) =>
  portOfBindAddress(value) === undefined
    ? `"${value}" must be [host]:port with a port from 1 to 65535, such as ":8080"`
    : undefined;

const optionalNamespace = (value: string) => (value === '' ? undefined : checkDns1123Label(value));
/** Comma-separated network CIDRs (`198.18.0.0/15,fd00:10::/56`); empty text is none. */
const cidrList = (value: string) => {
  for (const cidr of value === '' ? [] : value.split(',').map((c) => c.trim())) {
    const parsed = parseCidr(cidr);
    if (!parsed) return `"${cidr}" is not a network CIDR; use forms like "198.18.0.0/15" or "fd00:10::/56", comma-separated`;
    if (parsed.prefix === 0) return `"${cidr}" is every address: the default policy would allow no egress at all; list only the cluster's own ranges`;
    if (parsed.address % 2n ** BigInt(parsed.bitsTotal - parsed.prefix) !== 0n) {
      return `"${cidr}" has host bits set; give the network address of the block (e.g. "198.18.0.0/15")`;
    }
  }
  return undefined;
};
const refillRate = (value: number) =>
  value >= 0 ? undefined : `must be 0 (unpaced) or a positive rate in sandboxes per second (it is ${value})`;

/**
 * Labels written `key=value,key2=value2` (the form of `--router-pod-labels`), or a sentence saying
 * what is wrong. Empty text is no labels.
 */
export function parseLabelList(text: string): { [key: string]: string } | string {
  const labels: { [key: string]: string } = {};
  if (text === '') return labels;
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    const key = pair.slice(0, eq);
    const problem = eq < 0 ? 'is not key=value' : checkQualifiedName(key) ?? checkLabelValue(pair.slice(eq + 1));
    if (problem !== undefined) return `"${pair}" ${problem}; write labels as key=value,key2=value2, such as "app=sandbox-router"`;
    labels[key] = pair.slice(eq + 1);
  }
  return labels;
}

/** Labels as `--router-pod-labels` takes them: `key=value` pairs joined by commas, keys sorted. */
export function formatLabelList(labels: { readonly [key: string]: string }): string {
  return Object.keys(labels).sort().map((key) => `${key}=${labels[key]}`).join(',');
}

const labelList = (value: string) => {
  const parsed = parseLabelList(value);
  return typeof parsed === 'string' ? parsed : undefined;
};

/** Log levels the operator accepts for `--log-level`. */
export const CONTROLLER_LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error'];
const logLevel = (value: string) =>
  CONTROLLER_LOG_LEVELS.includes(value) ? undefined : `"${value}" is not a log level; use one of ${CONTROLLER_LOG_LEVELS.join(', ')}`;

/** Every flag, in the order args are rendered. */
export const CONTROLLER_FLAGS: readonly ControllerFlag[] = [
  { flag: 'metrics-bind-address', type: 'string', default: ':8080', description: 'Address of the Prometheus metrics endpoint (plain HTTP).', validate: hostPort },
  { flag: 'health-probe-bind-address', type: 'string', default: ':8081', description: 'Address serving /healthz and /readyz.', validate: hostPort },
  { flag: 'leader-elect', type: 'bool', default: true, description: 'Elect a leader through a coordination.k8s.io Lease so only one replica reconciles.' },
  { flag: 'leader-election-namespace', type: 'string', default: '', description: 'Namespace of the leader-election Lease; empty means the namespace the pod runs in.', validate: optionalNamespace },
  { flag: 'extensions', type: 'bool', default: false, description: 'Run the SandboxClaim, SandboxTemplate and SandboxWarmPool controllers.' },
  { flag: 'cluster-domain', type: 'string', default: 'cluster.local', description: 'Cluster DNS domain used in status.serviceFQDN.', validate: checkDns1123Subdomain },
  { flag: 'kube-api-qps', type: 'float', default: -1, description: 'Client-side QPS limit towards the API server; negative disables client-side throttling.' },
  { flag: 'kube-api-burst', type: 'int', default: 10, description: 'Client-side burst towards the API server (ignored while QPS is negative).', validate: positive('use a burst of at least 1') },
  { flag: 'kube-api-max-in-flight', type: 'int', default: 32, description: 'Most API requests (watches excluded) in flight at once; the rest wait in the operator, claim writes first, pool refill and Events last. 0 sends everything at once. Ours only.', validate: (value: number) => (Number.isInteger(value) && value >= 0 ? undefined : `must be 0 (no bound) or a positive whole number (it is ${value})`) },
  { flag: 'sandbox-concurrent-workers', type: 'int', default: 100, description: 'Sandbox reconcile parallelism.', validate: workers },
  { flag: 'sandbox-claim-concurrent-workers', type: 'int', default: 50, description: 'SandboxClaim reconcile parallelism.', validate: workers },
  { flag: 'sandbox-warm-pool-concurrent-workers', type: 'int', default: 1, description: 'SandboxWarmPool reconcile parallelism.', validate: workers },
  { flag: 'sandbox-template-concurrent-workers', type: 'int', default: 1, description: 'SandboxTemplate reconcile parallelism.', validate: workers },
  { flag: 'sandbox-progress-status-window', type: 'duration', default: 1000, description: 'How long a not-yet-Ready Sandbox status (DependenciesNotReady) may wait to be written, so a Sandbox Ready within it costs one status write; 0s writes every change at once. Ours only.', validate: atLeastZero },
  { flag: 'sandbox-warm-member-progress-window', type: 'duration', default: 10_000, description: 'The same window for an unclaimed warm pool member, which no client waits on (claims take Ready members only), so a member Ready within it costs one status write; an unschedulable Pod is written at once. 0s uses --sandbox-progress-status-window. Ours only.', validate: atLeastZero },
  { flag: 'claims-first-max-defer', type: 'duration', default: 5000, description: 'While claims wait for a Sandbox, how long work that does not serve them may wait: a claimed Pod\'s relabel, status rewrites that change only observedGeneration, claim observability annotations and Events, and pool refill while the pool\'s Ready members cover the claims waiting on it; 0s defers nothing. Ours only.', validate: atLeastZero },
  { flag: 'sandbox-warm-pool-max-batch-size', type: 'int', default: 300, description: 'Most Sandbox creates or deletes in one pool pass.', validate: positive('use a batch of at least 1') },
  { flag: 'sandbox-warm-pool-replenish-delay', type: 'duration', default: 0, description: 'Wait before replacing claimed pool members; 0s replenishes at once.', validate: atLeastZero },
  { flag: 'sandbox-warm-pool-max-refill-rate', type: 'float', default: 0, description: 'Most Sandboxes created per second per pool; 0 means unpaced.', validate: refillRate },
  { flag: 'sandbox-warm-pool-status-window', type: 'duration', default: 1000, description: 'A change of a pool\'s replica counts alone waits until this long after its previous status write and goes out as one write (a busy pool\'s counts change about three times per claim); conditions, the selector and observedGeneration are written at once; 0s writes every change at once. Ours only.', validate: atLeastZero },
  { flag: 'sandbox-warm-pool-readiness-grace-period', type: 'duration', default: 5 * 60_000, description: 'How long a pool member may stay not Ready before it is replaced.', validate: positiveDuration },
  { flag: 'sandbox-warm-pool-unschedulable-recheck-interval', type: 'duration', default: 60_000, description: 'How often a pool with unschedulable members is re-examined.', validate: positiveDuration },
  { flag: 'enable-warm-pool-eviction', type: 'bool', default: true, description: 'Mark unclaimed warm pods safe to evict for the cluster autoscaler.' },
  { flag: 'cache-label-selectors', type: 'bool', default: false, description: 'Cache only Pods and Services that carry the sandbox tracking label.' },
  { flag: 'disable-claim-events', type: 'bool', default: false, description: 'Emit no Events for SandboxClaims.' },
  { flag: 'disable-claim-observability-annotations', type: 'bool', default: false, description: 'Persist no first-observed or trace-context annotations on claims.' },
  { flag: 'router-namespace', type: 'string', default: '', description: 'Namespace of the sandbox router Pods, which the default per-template NetworkPolicy admits; empty means the namespace the operator runs in. Ours only.', validate: optionalNamespace },
  { flag: 'router-pod-labels', type: 'string', default: '', description: 'Labels of the sandbox router Pods as key=value,key2=value2, which the default per-template NetworkPolicy admits; empty means app=sandbox-router. Ours only.', validate: labelList },
  { flag: 'cluster-cidrs', type: 'string', default: '', description: 'The cluster\'s own address ranges (Pods, Services, nodes, the API server) that lie outside the private ranges, comma-separated; the default per-template NetworkPolicy\'s public-internet egress leaves them out too, so sandboxes cannot reach them. Ours only.', validate: cidrList },
  { flag: 'log-level', type: 'string', default: 'info', description: 'Least severe log level written.', validate: logLevel },
  { flag: 'kubeconfig', type: 'string', default: '', description: 'Path to a kubeconfig; empty means $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.' },
];

const BY_NAME = new Map(CONTROLLER_FLAGS.map((f) => [f.flag, f]));

/** The flag called `name`, if there is one. */
export function controllerFlag(name: string): ControllerFlag | undefined {
  return BY_NAME.get(name);
}

/** The camelCase property name of a flag (`kube-api-qps` → `kubeApiQps`), as construct props spell it. */
export function flagPropertyName(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** The port of a `[host]:port` bind address, or undefined when it has none. */
export function portOfBindAddress(address: string): number | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*):(\d{1,5})$/.exec(address);
  const port = match ? Number(match[2]) : NaN;
  return port >= 1 && port <= 65535 ? port : undefined;
}

/** Problems of one typed value: its type first, then the flag's own rule. */
export function checkControllerFlag(flag: ControllerFlag, value: ControllerFlagValue): string | undefined {
  switch (flag.type) {
    case 'bool':
      return typeof value === 'boolean' ? undefined : `must be true or false (it is ${JSON.stringify(value)})`;
    case 'string':
      if (typeof value !== 'string') return `must be a string (it is ${JSON.stringify(value)})`;
      break;
    case 'int':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) return `must be a whole number (it is ${JSON.stringify(value)})`;
      break;
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) return `must be a finite number (it is ${JSON.stringify(value)})`;
      break;
    case 'duration':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        return `must be a whole number of milliseconds (it is ${JSON.stringify(value)}); use a duration such as "30s" or "5m"`;
      }
      break;
  }
  return flag.validate?.(value as never);
}

/** Every problem in `values`: unknown flags and invalid values. Empty means valid. */
export function validateControllerFlagValues(values: ControllerFlagValues): ControllerFlagProblem[] {
  const problems: ControllerFlagProblem[] = [];
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const flag = BY_NAME.get(name);
    const message = flag
      ? checkControllerFlag(flag, value)
      : `is not a flag of the operator; known flags are ${CONTROLLER_FLAGS.map((f) => f.flag).join(', ')}`;
    if (message !== undefined) problems.push({ flag: name, message });
  }
  return problems;
}

/**
 * `--flag=value` args for the values that differ from the defaults, in table order, so the same
 * values always give the same args (stable manifests, clean GitOps diffs). Throws on invalid values.
 */
export function renderControllerArgs(values: ControllerFlagValues): string[] {
  const problems = validateControllerFlagValues(values);
  if (problems.length > 0) {
    throw new Error(`invalid controller flags: ${problems.map((p) => `--${p.flag} ${p.message}`).join('; ')}`);
  }
  const args: string[] = [];
  for (const flag of CONTROLLER_FLAGS) {
    const value = values[flag.flag];
    if (value === undefined || value === flag.default) continue;
    args.push(`--${flag.flag}=${flag.type === 'duration' ? formatGoDuration(value as number) : String(value)}`);
  }
  return args;
}

/** Parse one command-line value of `flag`; the result is typed and validated. */
export function parseControllerFlagValue(flag: ControllerFlag, raw: string): { value?: ControllerFlagValue; error?: string } {
  let value: ControllerFlagValue | undefined;
  switch (flag.type) {
    case 'bool':
      // The spellings Go's strconv.ParseBool accepts, so upstream-style args keep working.
      value = ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw) ? true
        : ['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw) ? false : undefined;
      if (value === undefined) return { error: `--${flag.flag}: "${raw}" is not a boolean; use true or false` };
      break;
    case 'int':
      value = /^[+-]?\d+$/.test(raw) ? Number(raw) : NaN;
      break;
    case 'float':
      value = raw.trim() === '' ? NaN : Number(raw);
      break;
    case 'duration': {
      const ms = parseGoDuration(raw);
      if (ms === undefined) return { error: `--${flag.flag}: "${raw}" is not a duration; use a Go-style duration such as "30s", "5m" or "1h30m"` };
      value = ms;
      break;
    }
    case 'string':
      value = raw;
      break;
  }
  const error = checkControllerFlag(flag, value);
  return error === undefined ? { value } : { error: `--${flag.flag}: ${error}` };
}

const UNIT_MS: { readonly [unit: string]: number } = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a Go `time.ParseDuration` string (`1h30m`, `250ms`, `0`), or undefined if malformed. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0' || text === '+0' || text === '-0') return 0;
  const match = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (!match) return undefined;
  let total = 0;
  for (const [, amount, unit] of match[2].matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(amount) * UNIT_MS[unit];
  }
  return match[1] === '-' ? -total : total;
}

/** A compact Go-style duration (`5m`, `1h30m`, `1s500ms`, `0s`) that `time.ParseDuration` reads back. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  let out = '';
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) out += `${count}${unit}`;
    rest -= count * size;
  }
  if (rest > 0) out += `${rest}ms`;
  return sign + out;
}
