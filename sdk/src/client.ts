/**
 * SandboxClient: the SDK's entry point. It holds the Kubernetes credentials (kubeconfig, in-cluster
 * or an explicit KubeConfig), the way to the runtimes (see connection.ts) and the shared settings;
 * `claim()` creates a SandboxClaim from a warm pool, waits on a watch until it is Ready and returns
 * a Sandbox handle; `connect()` attaches to an existing claim.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ClaimObject, sandboxNameOf, waitForReady } from './claim-wait.js';
import { registerForCleanup } from './cleanup.js';
import { Connection, Connector } from './connection.js';
import { Duration, durationMs, rfc3339Seconds } from './duration.js';
import { SandboxApiError, SandboxConfigError, SandboxError, SandboxTimeoutError } from './errors.js';
import { KubeApi, type KubeConfigLike } from './kube.js';
import { ProcessClient } from './process-client.js';
import { RetryOptions } from './retry.js';
import { RouterTokens, type RouterTokenOptions } from './router-token.js';
import { RuntimeApi } from './runtime-api.js';
import { Sandbox } from './sandbox.js';
import { PropagatorLike, Tracing, TracerLike } from './tracing.js';
import { follow } from './watch-object.js';
import {
  CLAIMS, CLIENT_FIRST_REQUESTED_AT, CONDITION_READY, CREATED_BY_LABEL, CREATED_BY_VALUE, OperatingMode, RESERVED_PREFIXES, SANDBOXES,
} from './wire.js';

export interface SandboxClientOptions {
  /**
   * Kubernetes credentials: a kubeconfig file path or a loaded KubeConfig of @kubernetes/client-node.
   * Default: `$KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account.
   */
  readonly kubeconfig?: string | KubeConfigLike;
  /** The kubeconfig context to use. @default its current context */
  readonly context?: string;
  /** Use the Pod's service account (in-cluster config) even when a kubeconfig exists. @default false */
  readonly inCluster?: boolean;
  /** Namespace of claims when `claim()` names none. @default "default" */
  readonly namespace?: string;
  /** How requests reach the sandboxes. @default { mode: 'port-forward' } */
  readonly connection?: Connection;
  /**
   * Bearer token for the router (its `--auth=kubernetes` or `--auth=token`). Default: the token of
   * the kubeconfig's user, when it has one (exec plugins included); `null` sends none.
   */
  readonly token?: string | null | (() => Promise<string | undefined>);
  /**
   * Send the router short-lived tokens minted for it (TokenRequest, audience `sandbox-router`) instead
   * of the kubeconfig's own token, which would also work against the API server. Needs the kubeconfig
   * to be a ServiceAccount's, with `create` on its own `serviceaccounts/token` (SandboxAccess grants
   * it). `true` for the defaults. Not with `token`.
   * @default false
   */
  readonly routerToken?: boolean | RouterTokenOptions;
  /** Retries of idempotent requests. @default 4 attempts, 100 ms doubling, at most 2 s apart */
  readonly retry?: RetryOptions;
  /**
   * An explicit opt-in: run foreground commands over sandboxd's gRPC ProcessService on this port of
   * the sandbox (the runtime's `--grpc-port`; sandboxd uses 9090), which must then be open on the
   * template too. Not needed to stream: unset, `run` uses `/execute` on the legacy port, which
   * streams output to onStdout/onStderr as it is written with this project's runtime (and delivers
   * it when the command ends with upstream's). Background processes and files always use the
   * legacy port.
   */
  readonly grpcPort?: number;
  /**
   * Time limit of one file request, up to the answer's headers (a sandbox the router is waking from
   * an idle suspension counts against it); also how long `run` may wait for such a wake before its
   * command starts, on top of the command's own `timeoutMs`. @default 60000
   */
  readonly requestTimeoutMs?: number;
  /** Delete the claims this client makes when the process gets SIGINT or SIGTERM. @default true */
  readonly cleanupOnSignal?: boolean;
  /** An OpenTelemetry Tracer (`trace.getTracer(...)`): claims, runs and file calls become spans. */
  readonly tracer?: TracerLike;
  /** Writes trace context into request headers (`(h) => propagation.inject(context.active(), h)`). */
  readonly propagator?: PropagatorLike;
}

export interface ClaimOptions {
  /** The SandboxWarmPool to draw from (in `namespace`). */
  readonly pool: string;
  /** @default the client's namespace */
  readonly namespace?: string;
  /** The claim's lifetime: it (and its Sandbox) is deleted this long after it was made, even if this process dies. */
  readonly ttl?: Duration;
  /** Labels for the claim (keys under agents.x-k8s.io/ are reserved). */
  readonly labels?: Readonly<Record<string, string>>;
  /** The claim's name. @default sandbox-claim-<8 random hex> */
  readonly name?: string;
  /** Stops waiting (and deletes the claim). */
  readonly signal?: AbortSignal;
  /** How long to wait for Ready. @default 180000 */
  readonly timeoutMs?: number;
  /** `fail`: throw SandboxColdStartError instead of waiting when the pool has no warm sandbox. @default "wait" */
  readonly coldStart?: 'wait' | 'fail';
  /** Keep the claim when the process gets SIGINT/SIGTERM. @default !cleanupOnSignal */
  readonly keepOnExit?: boolean;
  /**
   * Let the sandbox sleep when nobody uses it: the operator suspends it after `suspendAfter` without
   * a request through the router, an open connection or stream, or a running process, and (with
   * `resumeOnRequest`, the default) the router wakes it on the next request, which waits for it.
   * Only files on the workspace volume survive a sleep (docs/what-survives-what.md). Unset: the
   * template's policy, if it has one.
   */
  readonly idlePolicy?: IdlePolicyOptions;
}

/** A claim's idle policy (its `spec.idlePolicy`, which overrides its template's). */
export interface IdlePolicyOptions {
  /** How long the sandbox may go unused before it is suspended: whole seconds, at least 1 s (`"10m"`, `"90s"`, `300`). */
  readonly suspendAfter: Duration;
  /**
   * `true`: a request for the suspended sandbox resumes it and is held until it is Ready (the SDK
   * waits; see README "Idle sandboxes sleep and wake"). `false`: such a request fails at once with
   * SandboxSuspendedError until someone calls `resume()`.
   * @default true
   */
  readonly resumeOnRequest?: boolean;
}

export interface ConnectOptions {
  /** The claim's name. */
  readonly claim: string;
  readonly namespace?: string;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * When the claim's Sandbox is suspended, set it Running first (as `resume()` does), then wait for
   * it to be Ready. Without it, connecting to a suspended claim waits until someone else resumes it.
   * It reads the claim first: a missing claim is a SandboxApiError 404 at once (without it, the wait
   * goes on until the claim appears or `timeoutMs` runs out).
   * @default false
   */
  readonly resume?: boolean;
}

export interface DeleteClaimOptions {
  /** The claim's name. */
  readonly claim: string;
  readonly namespace?: string;
}

const DEFAULT_CLAIM_TIMEOUT_MS = 180_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

export class SandboxClient implements AsyncDisposable {
  private readonly kube: KubeApi;
  private readonly connector: Connector;
  private readonly tracing: Tracing;
  private readonly namespace: string;
  private readonly requestTimeoutMs: number;
  private readonly token: () => Promise<string | undefined>;

  public constructor(private readonly options: SandboxClientOptions = {}) {
    this.kube = new KubeApi(loadKubeConfig(options));
    this.namespace = options.namespace ?? 'default';
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (options.grpcPort !== undefined && !(Number.isInteger(options.grpcPort) && options.grpcPort > 0 && options.grpcPort < 65536)) {
      throw new SandboxConfigError('grpcPort', `must be a port number (sandboxd uses 9090), got ${options.grpcPort}`);
    }
    if (!(this.requestTimeoutMs > 0)) throw new SandboxConfigError('requestTimeoutMs', `must be a positive number of milliseconds, got ${this.requestTimeoutMs}`);
    const token = options.token;
    if (options.routerToken && token !== undefined) {
      throw new SandboxConfigError('routerToken', 'cannot be combined with token: routerToken mints the router\'s token itself; drop one of them');
    }
    const minted = options.routerToken ? new RouterTokens(this.kube, options.routerToken === true ? {} : options.routerToken) : undefined;
    this.token = minted ? () => minted.token()
      : token === null ? async () => undefined
        : typeof token === 'string' ? async () => token
          : typeof token === 'function' ? token
            : () => this.kube.bearerToken();
    this.connector = new Connector(options.connection ?? { mode: 'port-forward' }, this.kube, this.token);
    this.tracing = new Tracing(options.tracer, options.propagator);
  }

  /** Creates a SandboxClaim from `pool`, waits until it is Ready, and returns its handle. */
  public async claim(options: ClaimOptions): Promise<Sandbox> {
    const namespace = options.namespace ?? this.namespace;
    const claim = buildClaim(options, namespace);
    const timeoutMs = options.timeoutMs ?? DEFAULT_CLAIM_TIMEOUT_MS;
    return this.tracing.span('sandbox.claim', { 'sandbox.pool': options.pool, 'sandbox.namespace': namespace }, async () => {
      options.signal?.throwIfAborted();
      const claimPath = KubeApi.path(CLAIMS, namespace, claim.metadata.name);
      const keep = options.keepOnExit ?? this.options.cleanupOnSignal === false;
      // Registered before the create, so a Ctrl-C during it or the wait deletes the claim too: by
      // name until the create answers, then only the claim it made (its uid).
      let uid: string | undefined;
      const remove = () => this.kube.delete(claimPath, uid).then(() => undefined, () => undefined);
      const unregister = keep ? () => undefined : registerForCleanup({ remove });
      let created: ClaimObject;
      try {
        created = await this.kube.create(KubeApi.path(CLAIMS, namespace), claim, options.signal);
      } catch (err) {
        unregister();
        // No answer (connection lost, aborted): the claim may exist. A name the SDK made up is
        // nobody else's, so delete it by name, best effort.
        const unanswered = !(err instanceof SandboxApiError && err.status !== undefined);
        if (unanswered && options.name === undefined) await this.kube.delete(claimPath).catch(() => undefined);
        throw err;
      }
      uid = created.metadata.uid;
      try {
        const ready = await waitForReady(this.kube, {
          name: created.metadata.name, namespace, uid: created.metadata.uid, failOnColdStart: options.coldStart === 'fail', timeoutMs, signal: options.signal,
        });
        return this.handle(ready.claim, ready.sandbox, unregister);
      } catch (err) {
        unregister();
        await this.kube.delete(claimPath, created.metadata.uid).catch(() => undefined);
        throw err;
      }
    });
  }

  /** Attaches to an existing claim (made by `claim()` and let go with `disconnect()`, or by anyone). Never deletes it on a signal. */
  public async connect(options: ConnectOptions): Promise<Sandbox> {
    const namespace = options.namespace ?? this.namespace;
    const timeoutMs = options.timeoutMs ?? DEFAULT_CLAIM_TIMEOUT_MS;
    if (options.resume === true) await this.resumeIfSuspended(namespace, options.claim, timeoutMs, options.signal);
    const ready = await waitForReady(this.kube, {
      name: options.claim, namespace, failOnColdStart: false, timeoutMs, signal: options.signal,
    });
    return this.handle(ready.claim, ready.sandbox, () => undefined);
  }

  /**
   * Deletes a claim by name (its Sandbox goes with it), without connecting to it: for a claim kept
   * with `disconnect()`, or made by anyone. Resolves false when there was no such claim.
   */
  public async deleteClaim(options: DeleteClaimOptions): Promise<boolean> {
    const namespace = options.namespace ?? this.namespace;
    if (typeof options?.claim !== 'string' || !DNS1123_SUBDOMAIN.test(options.claim)) {
      throw new SandboxConfigError('claim', `must name a SandboxClaim (a DNS-1123 name), got ${JSON.stringify(options?.claim)}`);
    }
    return this.tracing.span('sandbox.close', { 'sandbox.claim': options.claim }, () => this.kube.delete(KubeApi.path(CLAIMS, namespace, options.claim)));
  }

  /** Stops the port-forward (if any). Handles stay valid only for what needs no connection. Claims are kept. */
  public async close(): Promise<void> {
    await this.connector.close();
  }

  public async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * connect({ resume: true }): a claim whose Sandbox is suspended has it set Running, and the wait
   * is for the Sandbox to be Ready (as `resume()` waits), so the claim's status names the new Pod by
   * the time the claim is waited for. A missing claim is an error at once (SandboxApiError 404).
   */
  private async resumeIfSuspended(namespace: string, name: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const claim: ClaimObject = await this.kube.get(KubeApi.path(CLAIMS, namespace, name));
    const sandbox = sandboxNameOf(claim);
    if (!sandbox) return;
    const sandboxPath = KubeApi.path(SANDBOXES, namespace, sandbox);
    const current = await this.kube.get(sandboxPath);
    if (current?.spec?.operatingMode !== OperatingMode.SUSPENDED) return;
    await this.tracing.span('sandbox.resume', { 'sandbox.name': sandbox }, async () => {
      await this.kube.mergePatch(sandboxPath, { spec: { operatingMode: OperatingMode.RUNNING } });
      await follow(this.kube, SANDBOXES, namespace, sandbox, (object: any, deleted) => {
        if (deleted) throw new SandboxError(`sandbox ${namespace}/${sandbox} was deleted while waiting for it to resume`, { sandbox });
        return (object?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === CONDITION_READY && c.status === 'True') ? true : undefined;
      }, {
        timeoutMs,
        signal,
        onTimeout: () => new SandboxTimeoutError(`sandbox ${namespace}/${sandbox} was not Ready within ${timeoutMs} ms of resuming`, { sandbox }),
      });
    });
  }

  private handle(claim: ClaimObject, sandbox: string, release: () => void): Sandbox {
    const namespace = claim.metadata.namespace ?? this.namespace;
    const address = { name: sandbox, namespace, podIPs: claim.status?.sandbox?.podIPs };
    const runtime = new RuntimeApi(() => this.connector.endpoint(address), sandbox, this.options.retry ?? {}, this.tracing);
    const grpcPort = this.options.grpcPort;
    // A Start may wait for a sleeping sandbox as long as any request waits for an answer.
    const wakeMs = this.requestTimeoutMs;
    const processes = grpcPort === undefined ? undefined
      : new ProcessClient(() => this.connector.endpoint(address, grpcPort), sandbox, undefined, undefined, wakeMs);
    const pty = {
      grpcPort,
      runtime: () => this.connector.endpoint(address),
      processes: (port: number, hint: string) => new ProcessClient(() => this.connector.endpoint(address, port), sandbox, undefined, hint, wakeMs),
      requestTimeoutMs: this.requestTimeoutMs,
    };
    return new Sandbox({
      claim, sandbox, kube: this.kube, runtime, processes, pty, tracing: this.tracing, requestTimeoutMs: this.requestTimeoutMs, release,
    });
  }
}

function loadKubeConfig(options: SandboxClientOptions): KubeConfigLike {
  const given = options.kubeconfig;
  // By its methods rather than instanceof: the caller's client-node may be another copy than the SDK's.
  if (typeof given === 'object' && given !== null) {
    if (typeof given.getCurrentCluster !== 'function' || typeof given.applyToHTTPSOptions !== 'function' || typeof given.applyToFetchOptions !== 'function') {
      throw new SandboxConfigError('kubeconfig', 'must be a kubeconfig file path or a loaded KubeConfig of @kubernetes/client-node');
    }
    return given;
  }
  const kc = new KubeConfig();
  if (options.inCluster) kc.loadFromCluster();
  else if (typeof options.kubeconfig === 'string') loadFile(kc, options.kubeconfig);
  else if (defaultCredentialsExist()) kc.loadFromDefault();
  else throw new SandboxConfigError('kubeconfig', 'no Kubernetes credentials found ($KUBECONFIG unset, no ~/.kube/config, not in a Pod): pass kubeconfig, or set $KUBECONFIG');
  if (options.context !== undefined) {
    if (!kc.getContextObject(options.context)) throw new SandboxConfigError('context', `the kubeconfig has no context "${options.context}"; it has: ${kc.getContexts().map((c) => c.name).join(', ') || 'none'}`);
    kc.setCurrentContext(options.context);
  }
  if (!kc.getCurrentCluster()) throw new SandboxConfigError('kubeconfig', 'no cluster found: pass kubeconfig (a file or a KubeConfig), set $KUBECONFIG, or run in a Pod with inCluster: true');
  return kc;
}

function loadFile(kc: KubeConfig, file: string): void {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new SandboxConfigError('kubeconfig', `cannot load ${file}: ${(err as Error).message}`);
  }
}

/** Whether client-node's default loading would find real credentials (and not fall back to localhost:8080). */
function defaultCredentialsExist(): boolean {
  if (process.env.KUBECONFIG) return true;
  if (process.env.KUBERNETES_SERVICE_HOST && fs.existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) return true;
  return fs.existsSync(path.join(os.homedir(), '.kube', 'config'));
}

/** The SandboxClaim object for `options`, validated. */
export function buildClaim(options: ClaimOptions, namespace: string, now = Date.now()): ClaimObject & { apiVersion: string; kind: string } {
  if (typeof options?.pool !== 'string' || !DNS1123_SUBDOMAIN.test(options.pool)) {
    throw new SandboxConfigError('pool', `must name a SandboxWarmPool (a DNS-1123 name like "python-pool"), got ${JSON.stringify(options?.pool)}`);
  }
  if (!DNS1123_SUBDOMAIN.test(namespace) || namespace.length > 63) throw new SandboxConfigError('namespace', `must be a namespace name, got ${JSON.stringify(namespace)}`);
  const name = options.name ?? `sandbox-claim-${randomBytes(4).toString('hex')}`;
  if (!DNS1123_SUBDOMAIN.test(name)) throw new SandboxConfigError('name', `must be a DNS-1123 subdomain (lowercase letters, digits, "-" and "."), got ${JSON.stringify(name)}`);
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.labels ?? {})) {
    if (!LABEL_KEY.test(key)) throw new SandboxConfigError(`labels.${key}`, 'is not a valid label key (an optional DNS prefix and "/", then at most 63 letters, digits, "-", "_" or ".")');
    if (RESERVED_PREFIXES.some((p) => key.startsWith(p))) throw new SandboxConfigError(`labels.${key}`, `keys under ${RESERVED_PREFIXES.join(' and ')} are reserved for the system; use your own prefix`);
    if (typeof value !== 'string' || !LABEL_VALUE.test(value)) throw new SandboxConfigError(`labels.${key}`, `value must be at most 63 letters, digits, "-", "_" or ".", got ${JSON.stringify(value)}`);
    labels[key] = value;
  }
  labels[CREATED_BY_LABEL] = CREATED_BY_VALUE;
  const ttlMs = options.ttl === undefined ? undefined : durationMs(options.ttl, 'ttl');
  const idlePolicy = options.idlePolicy === undefined ? undefined : idlePolicyOf(options.idlePolicy);
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw new SandboxConfigError('timeoutMs', `must be a positive number of milliseconds, got ${options.timeoutMs}`);
  if (options.coldStart !== undefined && options.coldStart !== 'wait' && options.coldStart !== 'fail') {
    throw new SandboxConfigError('coldStart', `must be "wait" or "fail", got ${JSON.stringify(options.coldStart)}`);
  }
  return {
    apiVersion: `${CLAIMS.group}/${CLAIMS.version}`,
    kind: CLAIMS.kind,
    metadata: { name, namespace, labels, annotations: { [CLIENT_FIRST_REQUESTED_AT]: new Date(now).toISOString() } } as ClaimObject['metadata'],
    spec: {
      warmPoolRef: { name: options.pool },
      ...(ttlMs === undefined ? {} : { lifecycle: { shutdownTime: rfc3339Seconds(now + ttlMs), shutdownPolicy: 'Delete' } }),
      ...(idlePolicy === undefined ? {} : { idlePolicy }),
    },
  };
}

/** The API's int32 bound on `suspendAfterSeconds`. */
const MAX_INT32 = 2_147_483_647;

/** `spec.idlePolicy` for the claim, validated: the API counts whole seconds (an int32, at least 1). */
function idlePolicyOf(policy: IdlePolicyOptions): { suspendAfterSeconds: number; resumeOnRequest: boolean } {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw new SandboxConfigError('idlePolicy', `must be an object like { suspendAfter: "10m" }, got ${JSON.stringify(policy)}`);
  }
  for (const key of Object.keys(policy)) {
    if (key !== 'suspendAfter' && key !== 'resumeOnRequest') {
      const hint = key === 'suspendAfterSeconds' ? ' (the API\'s name; the SDK takes suspendAfter, a duration like "10m" or a number of seconds)' : '';
      throw new SandboxConfigError(`idlePolicy.${key}`, `is not an idle policy option${hint}; the options are suspendAfter and resumeOnRequest`);
    }
  }
  if (policy.suspendAfter === undefined) throw new SandboxConfigError('idlePolicy.suspendAfter', 'is required: how long the sandbox may go unused before it is suspended, e.g. "10m"');
  const ms = durationMs(policy.suspendAfter, 'idlePolicy.suspendAfter');
  if (ms % 1000 !== 0 || ms < 1000 || ms / 1000 > MAX_INT32) {
    throw new SandboxConfigError('idlePolicy.suspendAfter',
      `must be whole seconds from 1s to ${MAX_INT32}s (the API stores suspendAfterSeconds), got ${JSON.stringify(policy.suspendAfter)}; e.g. "90s", "10m" or 300`);
  }
  if (policy.resumeOnRequest !== undefined && typeof policy.resumeOnRequest !== 'boolean') {
    throw new SandboxConfigError('idlePolicy.resumeOnRequest', `must be true or false, got ${JSON.stringify(policy.resumeOnRequest)}`);
  }
  return { suspendAfterSeconds: ms / 1000, resumeOnRequest: policy.resumeOnRequest ?? true };
}
