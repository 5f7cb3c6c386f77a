/**
 * The command line: `agent-sandbox-mcp stdio|http --pool NAME [options]`. Every value is checked
 * before anything starts; an error names the flag and what it must be.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { parseDuration } from '@cdk8s-agent-sandbox/sdk/tools';

export const USAGE = `agent-sandbox-mcp: an MCP server giving each MCP session one agent sandbox, claimed from a warm pool

Usage:
  agent-sandbox-mcp stdio --pool NAME [options]
  agent-sandbox-mcp http  --pool NAME [--listen 127.0.0.1:8765] [options]

Sandboxes:
  --pool NAME                 The SandboxWarmPool to claim from (required)
  --namespace NS              Namespace of the pool and the claims (default "default")
  --ttl DURATION              Each claim's lifetime, e.g. 30m or 2h (default 30m); extend_ttl moves it
  --idle-timeout DURATION     Release a session's sandbox after this long without a tool call (default 10m; 0 never)
  --suspend-after DURATION    Let a session's sandbox sleep (suspended) after this long unused, e.g. 2m; the next
                              tool call wakes it. Whole seconds, shorter than --idle-timeout (default: never)
  --max-concurrent-calls N    Tool calls one session may run at once (default 4)
  --max-output-bytes N        The most text one tool result holds (default 16384)
  --max-ttl DURATION          The longest ttl create_sandbox and extend_ttl accept (default 24h)

Kubernetes and the router:
  --kubeconfig PATH           Credentials (default $KUBECONFIG, then ~/.kube/config, then in-cluster)
  --context NAME              The kubeconfig context (default its current context)
  --router-url URL            Reach the sandbox router at this URL (default: port-forward to its Service)
  --router-token              Send the router short-lived tokens for its audience (TokenRequest) instead of
                              the kubeconfig's own token
  --token-file PATH           Send the router the token in this file (e.g. a projected serviceAccountToken
                              with audience sandbox-router), read again for each request
  --grpc-port N               Run commands over sandboxd's gRPC ProcessService on this port (9090 for
                              sandboxd) instead of the runtime's /execute (both stream the output)

HTTP (streamable HTTP transport, endpoint /mcp):
  --listen HOST:PORT          Address to listen on (default 127.0.0.1:8765); loopback only unless --allow-remote
  --allow-remote              Allow a non-loopback --listen address (needs --auth-token-file)
  --auth-token-file PATH      Require "Authorization: Bearer <the file's token>" on every request
  --allowed-host HOST         Also accept this Host header (repeatable; loopback names are always accepted)
  --allowed-origin ORIGIN     Also accept this Origin header (repeatable), e.g. https://app.example.com
  --max-sessions N            Open MCP sessions at once (default 16)

  -h, --help                  This help
`;

/** A bad command line; the message names the flag. */
export class FlagError extends Error {
  public override readonly name = 'FlagError';
}

export interface CommonConfig {
  readonly pool: string;
  readonly namespace: string;
  readonly ttl: string;
  /** 0: never. */
  readonly idleTimeoutMs: number;
  /** The claims' idle policy: suspended after this many seconds unused, resumed on the next request; undefined: none. */
  readonly suspendAfterSeconds?: number;
  readonly maxConcurrentCalls: number;
  readonly maxOutputBytes: number;
  readonly maxTtl: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly routerUrl?: string;
  readonly routerToken: boolean;
  readonly tokenFile?: string;
  readonly grpcPort?: number;
}

export interface HttpConfig {
  readonly host: string;
  readonly port: number;
  readonly allowRemote: boolean;
  readonly authTokenFile?: string;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly maxSessions: number;
}

export type Config =
  | { readonly mode: 'help' }
  | { readonly mode: 'stdio'; readonly common: CommonConfig }
  | { readonly mode: 'http'; readonly common: CommonConfig; readonly http: HttpConfig };

const OPTIONS = {
  'pool': { type: 'string' },
  'namespace': { type: 'string' },
  'ttl': { type: 'string' },
  'idle-timeout': { type: 'string' },
  'suspend-after': { type: 'string' },
  'max-concurrent-calls': { type: 'string' },
  'max-output-bytes': { type: 'string' },
  'max-ttl': { type: 'string' },
  'kubeconfig': { type: 'string' },
  'context': { type: 'string' },
  'router-url': { type: 'string' },
  'router-token': { type: 'boolean' },
  'token-file': { type: 'string' },
  'grpc-port': { type: 'string' },
  'listen': { type: 'string' },
  'allow-remote': { type: 'boolean' },
  'auth-token-file': { type: 'string' },
  'allowed-host': { type: 'string', multiple: true },
  'allowed-origin': { type: 'string', multiple: true },
  'max-sessions': { type: 'string' },
  'help': { type: 'boolean', short: 'h' },
} as const;

const HTTP_ONLY = ['listen', 'allow-remote', 'auth-token-file', 'allowed-host', 'allowed-origin', 'max-sessions'] as const;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Parses and checks `argv` (without node and the script). Throws FlagError. */
export function parseFlags(argv: readonly string[]): Config {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new FlagError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const { values, positionals } = parsed;
  if (values.help) return { mode: 'help' };
  const mode = positionals[0];
  if (mode !== 'stdio' && mode !== 'http') throw new FlagError(mode === undefined ? 'name a transport: "stdio" or "http"' : `unknown transport "${mode}": use "stdio" or "http"`);
  if (positionals.length > 1) throw new FlagError(`unexpected argument "${positionals[1]}"`);
  if (mode === 'stdio') {
    const stray = HTTP_ONLY.find((name) => values[name] !== undefined);
    if (stray) throw new FlagError(`--${stray}: only for the http transport`);
  }

  if (values.pool === undefined) throw new FlagError('--pool: required (the SandboxWarmPool to claim sandboxes from)');
  if (!DNS_SUBDOMAIN.test(values.pool)) throw new FlagError(`--pool: "${values.pool}" is not a Kubernetes object name (lower case letters, digits, "-" and ".")`);
  const namespace = values.namespace ?? 'default';
  if (!DNS_LABEL.test(namespace)) throw new FlagError(`--namespace: "${namespace}" is not a namespace name (lower case letters, digits and "-", at most 63)`);
  const ttl = values.ttl ?? '30m';
  const maxTtl = values['max-ttl'] ?? '24h';
  const ttlMs = duration('ttl', ttl);
  if (ttlMs > duration('max-ttl', maxTtl)) throw new FlagError(`--ttl: ${ttl} is longer than --max-ttl (${maxTtl})`);
  const idle = values['idle-timeout'] ?? '10m';
  const idleTimeoutMs = idle.trim() === '0' ? 0 : duration('idle-timeout', idle);
  const suspendAfter = values['suspend-after'];
  let suspendAfterSeconds: number | undefined;
  if (suspendAfter !== undefined) {
    const ms = duration('suspend-after', suspendAfter);
    // The API counts whole seconds (the SDK would refuse the claim later, at the first tool call).
    if (ms % 1000 !== 0) throw new FlagError(`--suspend-after: must be whole seconds, e.g. 90s or 2m, got "${suspendAfter}"`);
    if (idleTimeoutMs > 0 && ms >= idleTimeoutMs) {
      throw new FlagError(`--suspend-after: ${suspendAfter} is not shorter than --idle-timeout (${idle}): the sandbox would be released before it ever sleeps; `
        + 'raise --idle-timeout (0: never) to keep a sleeping sandbox longer');
    }
    suspendAfterSeconds = ms / 1000;
  }
  if (values['router-token'] && values['token-file'] !== undefined) throw new FlagError('--router-token and --token-file: give one of them (both set the router\'s token)');
  if (values['router-url'] !== undefined) url('router-url', values['router-url'], ['http:', 'https:']);
  const common: CommonConfig = {
    pool: values.pool,
    namespace,
    ttl,
    idleTimeoutMs,
    ...(suspendAfterSeconds === undefined ? {} : { suspendAfterSeconds }),
    maxConcurrentCalls: integer('max-concurrent-calls', values['max-concurrent-calls'], 4, 1, 64),
    maxOutputBytes: integer('max-output-bytes', values['max-output-bytes'], 16_384, 256, 1_048_576),
    maxTtl,
    kubeconfig: values.kubeconfig,
    context: values.context,
    routerUrl: values['router-url'],
    routerToken: values['router-token'] === true,
    tokenFile: values['token-file'],
    grpcPort: values['grpc-port'] === undefined ? undefined : integer('grpc-port', values['grpc-port'], 0, 1, 65_535),
  };
  if (mode === 'stdio') return { mode, common };

  const { host, port } = listenAddress(values.listen ?? '127.0.0.1:8765');
  const allowRemote = values['allow-remote'] === true;
  if (!isLoopback(host) && !allowRemote) {
    throw new FlagError(`--listen: ${host} is not a loopback address; anyone who reaches it could run commands in your sandboxes. Pass --allow-remote (with --auth-token-file) to listen there anyway`);
  }
  if (allowRemote && values['auth-token-file'] === undefined) throw new FlagError('--allow-remote: needs --auth-token-file (the server has no other authentication)');
  for (const origin of values['allowed-origin'] ?? []) url('allowed-origin', origin, ['http:', 'https:'], true);
  for (const h of values['allowed-host'] ?? []) if (!/^[A-Za-z0-9.\-:[\]]+$/.test(h)) throw new FlagError(`--allowed-host: "${h}" is not a host name, an address, or either with :PORT`);
  return {
    mode,
    common,
    http: {
      host,
      port,
      allowRemote,
      authTokenFile: values['auth-token-file'],
      allowedHosts: values['allowed-host'] ?? [],
      allowedOrigins: values['allowed-origin'] ?? [],
      maxSessions: integer('max-sessions', values['max-sessions'], 16, 1, 1024),
    },
  };
}

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

function listenAddress(text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (!match) throw new FlagError(`--listen: "${text}" is not HOST:PORT (an IPv6 address in brackets: [::1]:8765)`);
  const host = match[1] ?? match[2];
  if (match[1] !== undefined && isIP(host) !== 6) throw new FlagError(`--listen: "${host}" in brackets is not an IPv6 address`);
  if (match[2] !== undefined && isIP(host) === 0 && host !== 'localhost') throw new FlagError(`--listen: "${host}" is not an IP address or localhost`);
  const port = Number(match[3]);
  if (port > 65_535) throw new FlagError(`--listen: port ${port} is over 65535`);
  return { host, port };
}

function duration(flag: string, text: string): number {
  try {
    return parseDuration(text, flag);
  } catch (err) {
    throw new FlagError(`--${(err as Error).message}`);
  }
}

function integer(flag: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < min || n > max) throw new FlagError(`--${flag}: must be a whole number from ${min} to ${max}, got "${text}"`);
  return n;
}

function url(flag: string, text: string, protocols: readonly string[], originOnly = false): void {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new FlagError(`--${flag}: "${text}" is not a URL`);
  }
  if (!protocols.includes(parsed.protocol)) throw new FlagError(`--${flag}: "${text}" must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  if (originOnly && parsed.origin !== text) throw new FlagError(`--${flag}: "${text}" is not an origin (scheme://host[:port], no path): ${parsed.origin}?`);
}
