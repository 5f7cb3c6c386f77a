/**
 * The `router` command line: its own small flag table, parsed with the controller's value rules
 * (Go-style durations, `--name=value` or `--name value`, bare booleans).
 */
import {
  type ControllerFlag, type ControllerFlagValue, formatGoDuration, parseControllerFlagValue,
} from '#api/controller-flags';
import { AUTH_MODES, ROUTER_AUDIENCE } from './auth';
import { DEFAULT_ALLOWED_POD_CIDRS, parseCidr } from './guard';
import { UsageError } from '../runtime/flags';

const bindAddress = (value: string) =>
  value === '0' || /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*):\d{1,5}$/.test(value) ? undefined : `"${value}" must be [host]:port, such as ":8080"`;
const positive = (value: number) => (value > 0 ? undefined : `must be greater than 0 (it is ${value})`);
const positiveDuration = (value: number) => (value > 0 ? undefined : `must be greater than 0s (it is ${formatGoDuration(value)})`);
const nonNegativeDuration = (value: number) => (value >= 0 ? undefined : `must be 0s or more (it is ${formatGoDuration(value)})`);

export const ROUTER_FLAGS: readonly ControllerFlag[] = [
  { flag: 'bind-address', type: 'string', default: ':8080', description: 'Address the proxy listens on: HTTP/1.1 (and WebSocket) and h2c with prior knowledge (gRPC).', validate: bindAddress },
  { flag: 'health-probe-bind-address', type: 'string', default: ':8081', description: 'Address of /healthz and /readyz ("0" disables).', validate: bindAddress },
  { flag: 'metrics-bind-address', type: 'string', default: ':9090', description: 'Address of /metrics ("0" disables).', validate: bindAddress },
  { flag: 'kubeconfig', type: 'string', default: '', description: 'Path to a kubeconfig; empty means $KUBECONFIG, then in-cluster credentials, then ~/.kube/config.' },
  { flag: 'namespace', type: 'string', default: '', description: 'Only route to sandboxes in this namespace; empty means all namespaces.' },
  {
    flag: 'auth',
    type: 'string',
    default: 'kubernetes',
    description: 'Who may use the router: kubernetes (bearer token, TokenReview + SubjectAccessReview create on sandboxclaims/connect of the claim that owns the sandbox, or sandboxes/connect), token (--auth-token-file), or none.',
    validate: (v: string) => (AUTH_MODES.includes(v as never) ? undefined : `"${v}" is not an auth mode; use one of ${AUTH_MODES.join(', ')}`),
  },
  { flag: 'auth-token-file', type: 'string', default: '', description: 'File holding the bearer token for --auth=token (trimmed).' },
  { flag: 'auth-cache-ttl', type: 'duration', default: 10_000, description: 'How long a kubernetes-mode decision is cached.', validate: positiveDuration },
  { flag: 'auth-cache-size', type: 'int', default: 4096, description: 'Most kubernetes-mode answers kept in each cache (authenticated tokens, refused tokens, authorization decisions).', validate: positive },
  { flag: 'auth-review-qps', type: 'int', default: 100, description: 'TokenReviews per second of tokens not seen within the last 5 minutes, in total; beyond it (and its burst, twice as many) a new token gets 429 without a review. Known tokens are reviewed again unthrottled.', validate: positive },
  {
    flag: 'auth-review-qps-per-client',
    type: 'int',
    default: 5,
    description: 'Refused tokens per second one client address (IPv6: its /64) may present, burst four times as many, which is also the most reviews of its new tokens under way; beyond it 429. Tokens that pass cost nothing here.',
    validate: positive,
  },
  { flag: 'auth-review-timeout', type: 'duration', default: 5_000, description: 'A TokenReview or SubjectAccessReview the API server has not answered by then fails the request with 503 (not cached).', validate: positiveDuration },
  {
    flag: 'auth-audience',
    type: 'string',
    default: ROUTER_AUDIENCE,
    description: 'Audience of tokens minted for the router (TokenRequest audiences): such a token is reviewed for this audience, and cannot be used against the API server.',
    validate: (v: string) => (v.trim() !== '' ? undefined : 'must not be empty; the default is "sandbox-router"'),
  },
  { flag: 'auth-api-tokens', type: 'bool', default: true, description: 'Also accept tokens for the API server itself (a ServiceAccount\'s own token, as upstream\'s SDKs send); false accepts only tokens for --auth-audience.' },
  { flag: 'max-connections-per-client', type: 'int', default: 512, description: 'Open connections from one client address, counted before any authentication; more are closed at once.', validate: positive },
  { flag: 'h2-idle-timeout', type: 'duration', default: 60_000, description: 'An HTTP/2 connection with no stream open this long is closed with a GOAWAY.', validate: positiveDuration },
  { flag: 'h2-max-resets-per-10s', type: 'int', default: 100, description: 'Streams an HTTP/2 client may reset before they are answered, per connection in 10 s; more close the connection (GOAWAY ENHANCE_YOUR_CALM).', validate: positive },
  {
    flag: 'allowed-pod-cidrs',
    type: 'string',
    default: DEFAULT_ALLOWED_POD_CIDRS.join(','),
    description: 'Comma-separated CIDRs pod IPs must fall in; link-local and the router\'s own addresses are refused regardless.',
    validate: (v: string) => {
      try {
        splitList(v).forEach(parseCidr);
        return splitList(v).length > 0 ? undefined : 'must list at least one CIDR';
      } catch (err) {
        return (err as Error).message;
      }
    },
  },
  {
    flag: 'path-routing-prefix',
    type: 'string',
    default: '',
    description: 'Also route <prefix>/<namespace>/<id>/<port>/... paths (the prefix and the three segments are removed); empty disables.',
    validate: (v: string) => (v === '' || (v.startsWith('/') && !v.endsWith('/')) ? undefined : `"${v}" must start with "/" and not end with "/"`),
  },
  { flag: 'proxy-timeout', type: 'duration', default: 180_000, description: 'Longest a plain request may take (X-Sandbox-Timeout may shorten it); not applied to upgraded connections or gRPC calls (their grpc-timeout bounds them).', validate: positiveDuration },
  {
    flag: 'ready-wait',
    type: 'duration',
    default: 2_000,
    description: 'How long a request for a sandbox the router\'s caches show absent, not ready or unclaimed waits for them to show it serving before 404, 503 or 409; covers a client that saw it Ready (or resumed it) first. A suspended sandbox is resumed (see --resume-wait) or, when its idle policy does not allow that, refused at once (409 SandboxSuspended). 0s answers at once.',
    validate: nonNegativeDuration,
  },
  {
    flag: 'resume-wait',
    type: 'duration',
    default: 60_000,
    description: 'A request for a suspended sandbox whose idlePolicy has resumeOnRequest (the default) resumes it (needs patch on sandboxes) and is held this long at most (and never past its X-Sandbox-Timeout) until it serves; beyond that 503 SandboxResuming with Retry-After. 0s disables resume on request: such a request gets 409 SandboxSuspended.',
    validate: nonNegativeDuration,
  },
  { flag: 'max-connections-per-sandbox', type: 'int', default: 256, description: 'Concurrent requests and upgraded connections per sandbox; more get 429.', validate: positive },
  { flag: 'max-connections', type: 'int', default: 8192, description: 'Concurrent requests and upgraded connections in total; more get 429.', validate: positive },
  {
    flag: 'workers',
    type: 'int',
    default: 1,
    description: 'Router processes sharing the ports, each a whole router as a replica is (its own caches and limits; --max-connections and the other limits apply to each); a primary process serves /metrics summed over them. 0 means one per core it may use (capped by its cgroup CPU limit, rounded up).',
    validate: (v: number) => (v >= 0 ? undefined : `must be 0 (one per core) or more (it is ${v})`),
  },
  { flag: 'access-log', type: 'bool', default: false, description: 'One info line per request, upgrade and HTTP/2 stream (method, namespace, status, duration); off, the hot path writes no log line. Failures are logged either way.' },
  {
    flag: 'log-level',
    type: 'string',
    default: 'info',
    description: 'debug, info, warn or error.',
    validate: (v: string) => (['debug', 'info', 'warn', 'error'].includes(v) ? undefined : `"${v}" is not a log level`),
  },
];

export function splitList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

export class RouterFlags {
  private readonly values: Map<string, ControllerFlagValue>;

  public constructor(given: Record<string, ControllerFlagValue> = {}) {
    this.values = new Map(ROUTER_FLAGS.map((f) => [f.flag, given[f.flag] ?? f.default]));
  }

  public string(flag: string): string {
    return this.get(flag) as string;
  }

  public number(flag: string): number {
    return this.get(flag) as number;
  }

  public bool(flag: string): boolean {
    return this.get(flag) as boolean;
  }

  public nonDefaults(): Record<string, ControllerFlagValue> {
    const out: Record<string, ControllerFlagValue> = {};
    for (const f of ROUTER_FLAGS) if (this.values.get(f.flag) !== f.default) out[f.flag] = this.values.get(f.flag)!;
    return out;
  }

  private get(flag: string): ControllerFlagValue {
    const v = this.values.get(flag);
    if (v === undefined) throw new Error(`--${flag} is not a flag of the router`);
    return v;
  }
}

export interface ParsedRouterArgs {
  readonly flags: RouterFlags;
  readonly help: boolean;
}

/** Parse the args after `router`; throws UsageError naming the bad flag. */
export function parseRouterArgs(args: readonly string[]): ParsedRouterArgs {
  const given: Record<string, ControllerFlagValue> = {};
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const match = /^--?([^=]+)(?:=([\s\S]*))?$/.exec(args[i]);
    if (!match || args[i] === '--') throw new UsageError(`unexpected argument "${args[i]}": the router command takes only flags (--name=value)`);
    const [, name, inline] = match;
    if (name === 'help' || name === 'h') { help = true; continue; }
    const flag = ROUTER_FLAGS.find((f) => f.flag === name);
    if (!flag) throw new UsageError(`unknown flag --${name}; valid flags are ${[...ROUTER_FLAGS.map((f) => `--${f.flag}`), '--help'].join(', ')}`);
    let raw = inline;
    if (raw === undefined) {
      if (flag.type === 'bool') raw = 'true';
      else if (i + 1 < args.length) raw = args[++i];
      else throw new UsageError(`flag --${name} needs a value (--${name}=<${flag.type}>)`);
    }
    const { value, error } = parseControllerFlagValue(flag, raw);
    if (error !== undefined) throw new UsageError(error);
    given[name] = value!;
  }
  const flags = new RouterFlags(given);
  if (flags.string('auth') === 'token' && flags.string('auth-token-file') === '') {
    throw new UsageError('--auth=token needs --auth-token-file=<file holding the token>');
  }
  return { flags, help };
}

export function routerUsage(): string {
  const lines = ['Usage: agent-sandbox-operator router [flags]', '', 'Flags:'];
  for (const f of ROUTER_FLAGS) {
    const shown = f.default === '' ? '' : ` (default ${f.type === 'duration' ? formatGoDuration(f.default as number) : JSON.stringify(f.default)})`;
    lines.push(`  --${f.flag} ${f.type}`, `      ${f.description}${shown}`);
  }
  return lines.join('\n');
}
