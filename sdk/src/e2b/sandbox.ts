/**
 * E2B's `Sandbox` class on Kubernetes sandboxes: `Sandbox.create(template)` claims from the
 * SandboxWarmPool of that name (a SandboxClaim with `ttl` = `timeoutMs`), `sandboxId` is the
 * claim's name, `Sandbox.connect(sandboxId)` attaches to the claim (resuming a suspended Sandbox,
 * as E2B's connect resumes a paused one), `kill()` deletes the claim, `setTimeout(ms)` extends it,
 * `pause()` suspends it. The client comes from the SDK's own options (kubeconfig, connection,
 * namespace, ...) given with E2B's, or is passed as `client`. What has no honest counterpart
 * (public hostnames, listing, metrics, templates built from code) throws a NotSupportedError
 * naming what to use instead.
 */
import { SandboxClient, type ClaimOptions, type ConnectOptions, type DeleteClaimOptions, type SandboxClientOptions } from '../client.js';
import { SandboxConnectionError, SandboxHttpError, SandboxSuspendedError } from '../errors.js';
import type { SandboxHandle } from '../sandbox.js';
import { Commands, FacadeContext } from './commands.js';
import { InvalidArgumentError, NotSupportedError, e2bCall, translate } from './errors.js';
import { Filesystem } from './filesystem.js';
import { Pty } from './pty.js';
import { Workspace } from './workspace.js';

/** What the facade needs of a SandboxClient (a SandboxClient is one; tests may pass another). */
export interface SandboxClientLike {
  claim(options: ClaimOptions): Promise<SandboxHandle>;
  connect(options: ConnectOptions): Promise<SandboxHandle>;
  deleteClaim(options: DeleteClaimOptions): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * `Sandbox.create` options: E2B's (`timeoutMs`, `envs`, `metadata`, ...), this SDK's client options
 * (`kubeconfig`, `connection`, `namespace`, ...) for the client it makes, or a `client`.
 */
export interface SandboxOpts extends SandboxClientOptions {
  /** The sandbox's lifetime: the claim's `ttl`, after which it is deleted. @default 300000 (E2B's 5 minutes) */
  readonly timeoutMs?: number;
  /** Environment variables of every command (a command's own `envs` go over them). */
  readonly envs?: Readonly<Record<string, string>>;
  /** Labels of the claim (label syntax: at most 63 letters, digits, `-`, `_` or `.`). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** The client to claim with; it is left open by `kill()`. @default a SandboxClient made from these options, closed by `kill()` */
  readonly client?: SandboxClientLike;
  /** Where the template's workspace is (its `runtime.workspacePath`): absolute paths under it reach the workspace. @default "/home/user" */
  readonly workspacePath?: string;
  /** How long to wait for the claim to be Ready. @default 180000 */
  readonly claimTimeoutMs?: number;
  /** E2B's credentials and endpoint: not used (the kubeconfig and `connection` say where and who). */
  readonly apiKey?: string;
  readonly accessToken?: string;
  readonly domain?: string;
  readonly debug?: boolean;
  /** E2B's envd access token: not used (the router authenticates callers). */
  readonly secure?: boolean;
  /** Only `true`: egress is the template's NetworkPolicy (`false` throws a NotSupportedError). */
  readonly allowInternetAccess?: boolean;
  /** Not supported: suspend with `pause()`, and let the ttl end an idle sandbox. */
  readonly autoPause?: boolean;
  /** Not supported: network rules are the template's NetworkPolicy. */
  readonly network?: unknown;
  /** Not supported: run an MCP server with commands.run. */
  readonly mcp?: unknown;
  /** Not supported: the claim's lifecycle is its ttl (`timeoutMs`). */
  readonly lifecycle?: unknown;
}

/** `Sandbox.connect` options: as `create`'s; `timeoutMs`, when given, extends the claim's ttl to now + timeoutMs. */
export type SandboxConnectOpts = Omit<SandboxOpts, 'metadata'>;

/** The pool `Sandbox.create()` claims from when it names none (E2B's default template). */
export const DEFAULT_TEMPLATE = 'base';
/** E2B's default sandbox lifetime. */
export const DEFAULT_SANDBOX_TIMEOUT_MS = 300_000;

interface SandboxInit {
  readonly handle: SandboxHandle;
  readonly client: SandboxClientLike;
  readonly ownsClient: boolean;
  readonly envs: Readonly<Record<string, string>>;
  readonly workspace: Workspace;
}

export class Sandbox implements AsyncDisposable {
  /** Claims a sandbox from the SandboxWarmPool named `template` (default "base") and waits until it is Ready. */
  public static create(template?: string, opts?: SandboxOpts): Promise<Sandbox>;
  public static create(opts?: SandboxOpts): Promise<Sandbox>;
  public static create(first?: string | SandboxOpts, second?: SandboxOpts): Promise<Sandbox> {
    const template = typeof first === 'string' ? first : DEFAULT_TEMPLATE;
    const opts = (typeof first === 'string' ? second : first) ?? {};
    return e2bCall(async () => {
      checkOptions(opts, 'Sandbox.create');
      const ttl = positive(opts.timeoutMs ?? DEFAULT_SANDBOX_TIMEOUT_MS, 'timeoutMs') / 1000;
      return Sandbox.open(opts, (client) => client.claim({
        pool: template,
        ttl,
        ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }),
        ...(opts.metadata === undefined ? {} : { labels: opts.metadata }),
        ...(opts.claimTimeoutMs === undefined ? {} : { timeoutMs: opts.claimTimeoutMs }),
      }));
    });
  }

  /** Attaches to the sandbox whose claim is named `sandboxId`, resuming it when it is suspended. */
  public static connect(sandboxId: string, opts: SandboxConnectOpts = {}): Promise<Sandbox> {
    return e2bCall(async () => {
      checkOptions(opts, 'Sandbox.connect');
      if (typeof sandboxId !== 'string' || sandboxId === '') throw new InvalidArgumentError(`sandboxId: must be a claim's name (Sandbox.sandboxId), got ${JSON.stringify(sandboxId)}`);
      const ttl = opts.timeoutMs === undefined ? undefined : positive(opts.timeoutMs, 'timeoutMs') / 1000;
      return Sandbox.open(opts, async (client) => {
        const handle = await client.connect({
          claim: sandboxId,
          resume: true,
          ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }),
          ...(opts.claimTimeoutMs === undefined ? {} : { timeoutMs: opts.claimTimeoutMs }),
        });
        if (ttl !== undefined) await handle.extendTtl(ttl);
        return handle;
      });
    });
  }

  /** E2B 1.x's resume by id: `Sandbox.connect`, which resumes a suspended sandbox. */
  public static resume(sandboxId: string, opts: SandboxConnectOpts = {}): Promise<Sandbox> {
    return Sandbox.connect(sandboxId, opts);
  }

  /** Deletes the claim named `sandboxId` (its Sandbox goes with it): true, or false when there was none. */
  public static kill(sandboxId: string, opts: SandboxConnectOpts = {}): Promise<boolean> {
    return e2bCall(async () => {
      if (typeof sandboxId !== 'string' || sandboxId === '') throw new InvalidArgumentError(`sandboxId: must be a claim's name (Sandbox.sandboxId), got ${JSON.stringify(sandboxId)}`);
      const client = opts.client ?? new SandboxClient(clientOptions(opts));
      try {
        return await client.deleteClaim({ claim: sandboxId, ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }) });
      } finally {
        if (opts.client === undefined) await client.close();
      }
    });
  }

  public static async list(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('Sandbox.list', 'list the claims with `kubectl get sandboxclaims -l agents.x-k8s.io/created-by=typescript-client`, or the Kubernetes API');
  }

  public static async getInfo(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('Sandbox.getInfo', 'read the SandboxClaim (`kubectl get sandboxclaim <sandboxId> -o yaml`); a Sandbox object has sandboxId and handle.expiresAt');
  }

  public static async setTimeout(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('Sandbox.setTimeout', 'call (await Sandbox.connect(sandboxId, { timeoutMs })), which extends the claim\'s ttl, or sandbox.setTimeout(ms)');
  }

  public static async pause(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('Sandbox.pause', 'call pause() on the object from Sandbox.connect(sandboxId)');
  }

  public static async betaPause(..._args: unknown[]): Promise<never> {
    return Sandbox.pause();
  }

  public static async getMetrics(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('Sandbox.getMetrics', 'the Pod\'s metrics come from the cluster (metrics-server, `kubectl top pod`, Prometheus)');
  }

  /** A Sandbox of the handle `open` gets from the client (the options' own, or one made from them and closed when `open` fails). */
  private static async open(opts: SandboxConnectOpts, open: (client: SandboxClientLike) => Promise<SandboxHandle>): Promise<Sandbox> {
    const workspace = new Workspace(opts.workspacePath);
    const envs = { ...opts.envs };
    const ownsClient = opts.client === undefined;
    const client = opts.client ?? new SandboxClient(clientOptions(opts));
    try {
      return new Sandbox({ handle: await open(client), client, ownsClient, envs, workspace });
    } catch (err) {
      if (ownsClient) await client.close().catch(() => undefined);
      throw err;
    }
  }

  /** The claim's name: what `Sandbox.connect` and `Sandbox.kill` take. */
  public readonly sandboxId: string;
  public readonly commands: Commands;
  public readonly files: Filesystem;
  public readonly pty: Pty;
  /** The SDK's own handle of this sandbox (`run`, `processes`, `files`, `extendTtl`, `suspend`, ...), for what E2B's API has no name for. */
  public readonly handle: SandboxHandle;
  private readonly client: SandboxClientLike;
  private readonly ownsClient: boolean;
  private released = false;

  protected constructor(init: SandboxInit) {
    this.handle = init.handle;
    this.client = init.client;
    this.ownsClient = init.ownsClient;
    this.sandboxId = init.handle.claim;
    const ctx: FacadeContext = { handle: init.handle, workspace: init.workspace, envs: init.envs };
    this.commands = new Commands(ctx);
    this.files = new Filesystem(ctx);
    this.pty = new Pty(ctx);
  }

  /** Moves the claim's expiry to now + `timeoutMs` (never earlier than it already is). */
  public setTimeout(timeoutMs: number, _opts?: unknown): Promise<void> {
    return e2bCall(async () => {
      await this.handle.extendTtl(positive(timeoutMs, 'timeoutMs') / 1000);
    });
  }

  /** Deletes the claim (the sandbox goes with it), and closes the client this object made. */
  public kill(_opts?: unknown): Promise<void> {
    return e2bCall(async () => {
      try {
        await this.handle.close();
      } finally {
        await this.release();
      }
    });
  }

  /** Lets go of this object and keeps the sandbox (reach it again with `Sandbox.connect(sandboxId)`); closes the client this object made. */
  public disconnect(): Promise<void> {
    return e2bCall(async () => {
      await this.handle.disconnect();
      await this.release();
    });
  }

  /** Whether the sandbox answers: false when it is suspended, gone, unreachable, or this object was killed. */
  public async isRunning(_opts?: unknown): Promise<boolean> {
    if (this.released) return false;
    try {
      await this.handle.files.exists('');
      return true;
    } catch (err) {
      if (err instanceof SandboxSuspendedError || err instanceof SandboxConnectionError) return false;
      if (err instanceof SandboxHttpError && [404, 502, 503, 504].includes(err.status)) return false;
      throw translate(err);
    }
  }

  /** Suspends the sandbox (its Pod is deleted: processes and files outside a volume claim go) and waits until it is; resolves true. */
  public pause(_opts?: unknown): Promise<boolean> {
    return e2bCall(async () => {
      await this.handle.suspend();
      return true;
    });
  }

  public betaPause(opts?: unknown): Promise<boolean> {
    return this.pause(opts);
  }

  /** Starts the suspended sandbox again and waits until it is Ready (E2B resumes in `Sandbox.connect`, which does this too). */
  public resume(_opts?: unknown): Promise<void> {
    return e2bCall(() => this.handle.resume());
  }

  /** E2B's public hostname of a port: there is none; the router reaches every port of the sandbox. */
  public getHost(port: number): never {
    throw new NotSupportedError(
      `getHost(${port})`,
      `sandboxes have no public hostnames; send HTTP requests to the sandbox router with the headers X-Sandbox-ID: ${this.handle.name}, ` +
      `X-Sandbox-Namespace: ${this.handle.namespace} and X-Sandbox-Port: ${port} (a port the template opens), or port-forward to the Pod`,
    );
  }

  public async uploadUrl(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('uploadUrl', 'there are no presigned file URLs; write the file with files.write (it streams a ReadableStream)');
  }

  public async downloadUrl(..._args: unknown[]): Promise<never> {
    throw new NotSupportedError('downloadUrl', 'there are no presigned file URLs; read the file with files.read(path, { format: "stream" })');
  }

  public async getInfo(..._args: unknown[]): Promise<never> {
    return Sandbox.getInfo();
  }

  public async getMetrics(..._args: unknown[]): Promise<never> {
    return Sandbox.getMetrics();
  }

  public async [Symbol.asyncDispose](): Promise<void> {
    await this.kill();
  }

  private async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.ownsClient) await this.client.close();
  }
}

/** The SandboxClient options among `opts`. */
function clientOptions(opts: SandboxConnectOpts): SandboxClientOptions {
  const {
    kubeconfig, context, inCluster, namespace, connection, token, routerToken, retry, grpcPort, requestTimeoutMs, cleanupOnSignal, tracer, propagator,
  } = opts;
  const picked: Record<string, unknown> = {
    kubeconfig, context, inCluster, namespace, connection, token, routerToken, retry, grpcPort, requestTimeoutMs, cleanupOnSignal, tracer, propagator,
  };
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)) as SandboxClientOptions;
}

/** E2B options with no counterpart, set to something other than their default, are refused. */
function checkOptions(opts: SandboxConnectOpts, method: string): void {
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError(`${method}: options must be an object, got ${JSON.stringify(opts)}`);
  if (opts.allowInternetAccess === false) throw new NotSupportedError(`${method} with allowInternetAccess: false`, 'egress is the template\'s NetworkPolicy: give the SandboxTemplate a network policy without internet egress, and claim from its pool');
  if (opts.autoPause === true) throw new NotSupportedError(`${method} with autoPause`, 'call pause() yourself; the claim is deleted when its ttl (timeoutMs) ends');
  if (opts.network !== undefined) throw new NotSupportedError(`${method} with network`, 'network rules are the SandboxTemplate\'s NetworkPolicy');
  if (opts.mcp !== undefined) throw new NotSupportedError(`${method} with mcp`, 'start the MCP server with commands.run(..., { background: true }), or use agent-sandbox-mcp (@cdk8s-agent-sandbox/mcp)');
  if (opts.lifecycle !== undefined) throw new NotSupportedError(`${method} with lifecycle`, 'the claim is deleted when its ttl (timeoutMs) ends; extend it with setTimeout(ms), suspend it with pause()');
  if (opts.envs !== undefined) {
    for (const [key, value] of Object.entries(opts.envs)) {
      if (key === '' || key.includes('=') || typeof value !== 'string') throw new InvalidArgumentError(`envs.${key}: names must be non-empty without "=", and values strings`);
    }
  }
}

function positive(ms: number, field: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) throw new InvalidArgumentError(`${field}: must be a positive number of milliseconds, got ${ms}`);
  return ms;
}
