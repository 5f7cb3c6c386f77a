import { Duration } from 'cdk8s';
import { IConstruct } from 'constructs';
import { propName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain } from './api/validation';
import { ImagePullPolicy, dropUndefined } from './container';
import { DEFAULT_OPERATOR_IMAGE } from './install/operator-deployment';
import { installedOperatorImage } from './install/operator-image';

/** A key of a Secret in the sandbox's namespace, holding the runtime's bearer token. */
export interface SandboxRuntimeTokenSecret {
  /** Name of the Secret. */
  readonly secretName: string;
  /** Key of the token in the Secret. */
  readonly key: string;
}

/**
 * The agent-sandbox runtime (the operator image's `runtime` command: upstream's legacy runtime API,
 * optionally sandboxd's REST FilesystemService and gRPC ProcessService) injected into your own
 * image, without a rebuild. An init container of the operator image copies its node binary and
 * the operator bundle into an emptyDir at `/opt/agent-sandbox/bin`, and the chosen container runs
 * `/opt/agent-sandbox/bin/node /opt/agent-sandbox/bin/agent-sandbox-operator.mjs runtime ...`
 * instead of its entrypoint, with a readiness probe on `GET /` of `port`.
 *
 * Limits: the copied node is the official glibc build: the image needs glibc 2.28 or newer,
 * libstdc++ (GLIBCXX_3.4.21, GCC 5+), libgcc_s, libm, libdl and libpthread (Debian and Ubuntu based
 * images such as python:3.12-slim have them, apt itself links libstdc++; so do Red Hat UBI
 * images); Alpine/musl, distroless-static and scratch images do not work. It runs on the node's CPU
 * architecture, so the operator image must be published for it. The runtime refuses uid 0 unless
 * `allowRoot`, and the Pod's default `runAsNonRoot` refuses images that run as root: give such an
 * image a `security.runAsUser` (for example 1000). Shell-mode commands need `/bin/sh` in the image.
 */
export interface SandboxRuntimeOptions {
  /**
   * The container that runs the runtime. Its entrypoint is replaced, so it must set neither
   * `command` nor `args`.
   * @default - the first container
   */
  readonly container?: string;
  /** Port of the legacy runtime API (`/execute`, `/upload`, ...), which the router targets by default. @default 8888 */
  readonly port?: number;
  /** Also serve sandboxd's REST FilesystemService on this port (sandboxd uses 8080). @default - off */
  readonly filesPort?: number;
  /** Also serve sandboxd's gRPC ProcessService on this port (sandboxd uses 9090). @default - off */
  readonly grpcPort?: number;
  /** Default time limit of one command; a request's `timeout_seconds` overrides it. @default Duration.minutes(5) */
  readonly execTimeout?: Duration;
  /**
   * Require `Authorization: Bearer <token>` with the token from this Secret key. For clients that
   * reach the Pod directly (port-forward, in-cluster Pod IP): the router strips `Authorization`
   * before forwarding, so requests through the router cannot carry it; the router authenticates
   * its callers itself (`--auth`).
   * @default - no token
   */
  readonly token?: SandboxRuntimeTokenSecret;
  /** Root of every file path and the working directory of every command. @default '/workspace' */
  readonly workspacePath?: string;
  /**
   * Pod volume or volume claim template mounted at `workspacePath` (a claim template keeps files
   * across suspend and resume).
   * @default - the volume the container already mounts at `workspacePath`, else a new emptyDir `workspace`
   */
  readonly workspaceVolume?: string;
  /**
   * Image the runtime is copied from; any build of the operator image. Unset, it follows the install:
   * the image (and digest) the `AgentSandboxSystem` or `AgentSandboxExtensions` in the same cdk8s App
   * runs, looked up at synth, so a template in another chart or made before the install finds it
   * too. Installs in one App that run different images are an error unless this is set. A template
   * synthesized in another App than its install takes `AgentSandboxSystem.image` here. The Pods pull
   * it in the template's namespace: a private registry needs the template's own `imagePullSecrets`.
   * @default - the operator image of the install in the same App; AgentSandboxSystem.DEFAULT_IMAGE when the App has no install
   */
  readonly image?: string;
  /**
   * Pull policy of that image.
   * @default - the install's `imagePullPolicy` when `image` follows the install, else Kubernetes' default for the image reference
   */
  readonly imagePullPolicy?: ImagePullPolicy;
  /** Run even as uid 0 (`--allow-root`); needs `security.runAsNonRoot: false` on the template too. @default false */
  readonly allowRoot?: boolean;
}

/** Where the init container puts node and the bundle; a local pod runner recognises this layout. */
const RUNTIME_BIN_DIR = '/opt/agent-sandbox/bin';
const BIN_VOLUME = 'agent-sandbox-runtime';
const TOKEN_VOLUME = 'agent-sandbox-runtime-token';
const TOKEN_DIR = '/var/run/agent-sandbox/runtime-token';
const WORKSPACE_VOLUME = 'workspace';
const INIT_CONTAINER = 'install-agent-sandbox-runtime';
const PORT_NAMES = { port: 'runtime', filesPort: 'files', grpcPort: 'grpc' } as const;

type Json = { [key: string]: any };

/** The runtime ports that are set, by option name. */
function runtimePorts(opts: SandboxRuntimeOptions): Array<[keyof typeof PORT_NAMES, number]> {
  return ([['port', opts.port ?? 8888], ['filesPort', opts.filesPort], ['grpcPort', opts.grpcPort]] as const)
    .filter((entry): entry is [keyof typeof PORT_NAMES, number] => entry[1] !== undefined);
}

const workspacePathOf = (opts: SandboxRuntimeOptions) => opts.workspacePath ?? '/workspace';
const containerIndex = (spec: Json, opts: SandboxRuntimeOptions) =>
  (opts.container === undefined ? 0 : (spec.containers as Json[]).findIndex((c) => c.name === opts.container));

/**
 * @internal Check `opts` against the Pod spec the blueprint renders (`claimTemplates`: names of its
 * volume claim templates); errors name the `runtime.*` field and the fix.
 */
export function _checkRuntime(errors: ErrorList, opts: SandboxRuntimeOptions, spec: Json, claimTemplates: string[]): void {
  const containers = (spec.containers ?? []) as Json[];
  const target = containers[containerIndex(spec, opts)] as Json | undefined;
  if (!target) {
    if (opts.container !== undefined) {
      errors.prop('runtime.container', `"${opts.container}" is not a container of this template; use one of ${containers.map((c) => `"${c.name}"`).join(', ')}, or omit it for the first container`);
    }
    return;
  }
  const set = ['command', 'args'].filter((k) => target[k] !== undefined);
  if (set.length > 0) {
    errors.prop('runtime.container', `container "${target.name}" sets ${set.join(' and ')}, which the runtime replaces; remove ${set.join(' and ')} from it (run your program through the runtime's /execute), or set ${propName('runtime.container')} to another container`);
  }
  const seen = new Map<number, string>();
  for (const [field, port] of runtimePorts(opts)) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      errors.prop(`runtime.${field}`, `${port} is not a port; use an integer from 1 to 65535`);
      continue;
    }
    if (seen.has(port)) errors.prop(`runtime.${field}`, `${port} is also ${propName(`runtime.${seen.get(port)}`)}; give each runtime port its own number`);
    seen.set(port, field);
    for (const c of [...containers, ...(spec.initContainers ?? [])]) {
      if ((c.ports ?? []).some((p: Json) => p.containerPort === port)) {
        errors.prop(`runtime.${field}`, `${port} is already a port of container "${c.name}" (containers of a Pod share its ports); remove that port from the container or choose another ${propName(`runtime.${field}`)}`);
      }
    }
    if ((target.ports ?? []).some((p: Json) => p.name === PORT_NAMES[field])) {
      errors.prop(`runtime.${field}`, `container "${target.name}" already has a port named "${PORT_NAMES[field]}", the name of this runtime port; rename that port`);
    }
  }
  if (opts.execTimeout !== undefined && !(opts.execTimeout.toSeconds({ integral: false }) > 0)) {
    errors.prop('runtime.execTimeout', 'must be longer than zero, such as a Duration of 5 minutes');
  }
  if (opts.image !== undefined && (opts.image === '' || /\s/.test(opts.image))) {
    errors.prop('runtime.image', `"${opts.image}" must be a non-empty image reference without spaces, e.g. "${DEFAULT_OPERATOR_IMAGE}"`);
  }
  if (opts.token) {
    errors.prop('runtime.token.secretName', checkDns1123Subdomain(opts.token.secretName));
    if (!/^[-._a-zA-Z0-9]+$/.test(opts.token.key)) {
      errors.prop('runtime.token.key', `"${opts.token.key}" is not a Secret key; use letters, digits, '-', '_' and '.'`);
    }
  }
  const workspace = workspacePathOf(opts);
  if (!workspace.startsWith('/') || workspace === '/') {
    errors.prop('runtime.workspacePath', `"${workspace}" must be an absolute directory other than "/", such as "/workspace"`);
  }
  const volumes = [...((spec.volumes ?? []) as Json[]).map((v) => v.name as string), ...claimTemplates];
  const mounted = ((target.volumeMounts ?? []) as Json[]).find((m) => m.mountPath === workspace);
  if (opts.workspaceVolume !== undefined && !volumes.includes(opts.workspaceVolume)) {
    errors.prop('runtime.workspaceVolume', `"${opts.workspaceVolume}" is not a volume of this template; add a volume or a volume claim template of that name, or omit it for an emptyDir`);
  }
  if (opts.workspaceVolume !== undefined && mounted && mounted.name !== opts.workspaceVolume) {
    errors.prop('runtime.workspaceVolume', `container "${target.name}" already mounts "${mounted.name}" at ${workspace}; drop that mount or set ${propName('runtime.workspaceVolume')} to "${mounted.name}"`);
  }
  const added = [BIN_VOLUME, ...(opts.token ? [TOKEN_VOLUME] : []), ...(opts.workspaceVolume === undefined && !mounted ? [WORKSPACE_VOLUME] : [])];
  for (const name of added.filter((n) => volumes.includes(n))) {
    errors.prop('volumes[].name', `"${name}" is a volume the runtime adds; rename your volume${name === WORKSPACE_VOLUME ? `, or pass it as ${propName('runtime.workspaceVolume')}` : ''}`);
  }
  if ([...containers, ...(spec.initContainers ?? [])].some((c: Json) => c.name === INIT_CONTAINER)) {
    errors.prop('initContainers[].name', `"${INIT_CONTAINER}" is the runtime's init container; rename yours`);
  }
  for (const dir of [RUNTIME_BIN_DIR, ...(opts.token ? [TOKEN_DIR] : [])]) {
    if (((target.volumeMounts ?? []) as Json[]).some((m) => m.mountPath === dir)) {
      errors.prop('runtime.container', `container "${target.name}" mounts a volume at ${dir}, where the runtime mounts its own; move that mount`);
    }
  }
}

/** The runtime's command line in the container: the layout the init container installs. */
function runtimeCommand(opts: SandboxRuntimeOptions): string[] {
  const flags = [
    `--port=${opts.port ?? 8888}`,
    `--workspace=${workspacePathOf(opts)}`,
    ...(opts.filesPort !== undefined ? [`--files-port=${opts.filesPort}`] : []),
    ...(opts.grpcPort !== undefined ? [`--grpc-port=${opts.grpcPort}`] : []),
    ...(opts.execTimeout !== undefined ? [`--exec-timeout=${opts.execTimeout.toSeconds({ integral: false })}`] : []),
    ...(opts.token ? [`--token-file=${TOKEN_DIR}/token`] : []),
    ...(opts.allowRoot ? ['--allow-root'] : []),
  ];
  return [`${RUNTIME_BIN_DIR}/node`, `${RUNTIME_BIN_DIR}/agent-sandbox-operator.mjs`, 'runtime', ...flags];
}

/**
 * The image and pull policy of the init container: `runtime.image` when set, else the operator image
 * of the install in `scope`'s App, else the default. Throws when the App's installs disagree.
 */
function runtimeImage(opts: SandboxRuntimeOptions, scope: IConstruct | undefined): { image: string; imagePullPolicy?: string } {
  if (opts.image !== undefined) return { image: opts.image, imagePullPolicy: opts.imagePullPolicy };
  const installed = scope && installedOperatorImage(scope);
  if (installed && 'error' in installed) throw new Error(`SandboxTemplate ${scope!.node.path}: invalid props:\n  - ${propName('runtime.image')}: ${installed.error}`);
  return { image: installed?.image ?? DEFAULT_OPERATOR_IMAGE, imagePullPolicy: opts.imagePullPolicy ?? installed?.imagePullPolicy };
}

/** The init container: the operator image's `install-runtime`, non-root, read-only, no privileges. */
function installContainer(opts: SandboxRuntimeOptions, scope: IConstruct | undefined): Json {
  return dropUndefined({
    name: INIT_CONTAINER,
    ...runtimeImage(opts, scope),
    args: ['install-runtime', RUNTIME_BIN_DIR],
    // Measured: about 52 MiB RSS while copying the ~96 MiB node binary.
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
    volumeMounts: [{ name: BIN_VOLUME, mountPath: RUNTIME_BIN_DIR }],
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    },
  });
}

/**
 * @internal `spec` (a rendered Pod spec, checked by {@link _checkRuntime}) with the runtime injected;
 * `scope`, the template, is where the install's operator image is looked up.
 */
export function _injectRuntime(opts: SandboxRuntimeOptions, spec: Json, scope?: IConstruct): Json {
  const index = containerIndex(spec, opts);
  const containers = [...spec.containers] as Json[];
  const target = containers[index];
  const workspace = workspacePathOf(opts);
  const mounts = (target.volumeMounts ?? []) as Json[];
  const mounted = mounts.some((m) => m.mountPath === workspace);
  const workspaceVolume = opts.workspaceVolume ?? WORKSPACE_VOLUME;
  const { command: _command, args: _args, ...rest } = target;
  containers[index] = dropUndefined({
    ...rest,
    command: runtimeCommand(opts),
    ports: [...(target.ports ?? []), ...runtimePorts(opts).map(([field, port]) => ({ name: PORT_NAMES[field], containerPort: port, protocol: 'TCP' }))],
    volumeMounts: [
      ...mounts,
      ...(mounted ? [] : [{ name: workspaceVolume, mountPath: workspace }]),
      { name: BIN_VOLUME, mountPath: RUNTIME_BIN_DIR, readOnly: true },
      ...(opts.token ? [{ name: TOKEN_VOLUME, mountPath: TOKEN_DIR, readOnly: true }] : []),
    ],
    // GET / answers 200 once the runtime listens (upstream's liveness route; no token needed).
    readinessProbe: { httpGet: { path: '/', port: opts.port ?? 8888 }, periodSeconds: 2, failureThreshold: 3 },
  });
  const volumes = [
    ...(spec.volumes ?? []),
    { name: BIN_VOLUME, emptyDir: { sizeLimit: '256Mi' } },
    ...(!mounted && opts.workspaceVolume === undefined ? [{ name: WORKSPACE_VOLUME, emptyDir: {} }] : []),
    ...(opts.token ? [{ name: TOKEN_VOLUME, secret: { secretName: opts.token.secretName, items: [{ key: opts.token.key, path: 'token' }] } }] : []),
  ];
  return { ...spec, initContainers: [installContainer(opts, scope), ...(spec.initContainers ?? [])], containers, volumes };
}
