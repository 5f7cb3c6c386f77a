/**
 * What the pod runner starts for one container of an opted-in Pod. A container that runs the
 * operator's `runtime` command — as `agent-sandbox-operator runtime ...`, `node <path>/agent-sandbox-operator.mjs
 * runtime ...`, or the form a SandboxTemplate injects into a user's image,
 * `/opt/agent-sandbox/bin/node /opt/agent-sandbox/bin/agent-sandbox-operator.mjs runtime ...` — becomes
 * this checkout's bundle with the container's own flags, bound to the Pod's address and confined to
 * the Pod's workspace. Any other container runs its command as a local process (`node` meaning the
 * Node.js that runs the runner), which is how tests bring their own fixture servers.
 */
import * as path from 'path';

/** The container fields the runner reads. */
export interface ContainerSpec {
  readonly name: string;
  readonly image?: string;
  readonly command?: string[];
  readonly args?: string[];
  readonly env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  readonly ports?: Array<{ containerPort: number }>;
  readonly volumeMounts?: Array<{ name: string; mountPath: string }>;
}

export interface PodContext {
  readonly namespace: string;
  readonly name: string;
  readonly ip: string;
  /** Working directory of every process of the Pod, and the runtime's --workspace. */
  readonly workspace: string;
  /** The operator bundle (operator/dist/agent-sandbox-operator.mjs) runtimes are started from. */
  readonly bundle: string;
  /** Add --allow-root to runtimes (the runtime refuses uid 0 otherwise). */
  readonly allowRoot: boolean;
  /**
   * The Pod's PersistentVolumeClaim volumes by volume name: the bound volume's directory on this
   * machine, or why the runner cannot mount it. A runtime whose workspace is one of them works in
   * that directory instead of the Pod's own.
   */
  readonly claimVolumes?: ReadonlyMap<string, string | LaunchError>;
}

/** How the runner decides a container is up. */
export type Readiness =
  | { readonly kind: 'http'; readonly port: number; readonly path: string }
  | { readonly kind: 'tcp'; readonly ports: number[] }
  | { readonly kind: 'running' };

export interface Launch {
  readonly kind: 'runtime' | 'command';
  readonly bin: string;
  readonly args: string[];
  readonly env: NodeJS.ProcessEnv;
  readonly readiness: Readiness;
}

/** A container the runner cannot run, with the field to fix. */
export class LaunchError extends Error {}

const BUNDLE_NAME = /(^|\/)agent-sandbox-operator(\.mjs|\.js)?$/;
const NODE_NAME = /(^|\/)node$/;
/** Runtime flags the runner sets itself; a container's own values are dropped. */
const FORCED_FLAGS = ['listen-address', 'workspace'];

/** The flags after `runtime` when the container runs the operator's runtime command, else undefined. */
export function runtimeArgs(container: ContainerSpec): string[] | undefined {
  const command = container.command ?? [];
  const args = container.args ?? [];
  // No command: the image's entrypoint runs; in the operator image that is the operator binary.
  if (command.length === 0) return /agent-sandbox-operator/.test(container.image ?? '') && args[0] === 'runtime' ? args.slice(1) : undefined;
  const argv = [...command, ...args];
  const at = BUNDLE_NAME.test(argv[0]) ? 0 : NODE_NAME.test(argv[0]) && BUNDLE_NAME.test(argv[1] ?? '') ? 1 : -1;
  return at >= 0 && argv[at + 1] === 'runtime' ? argv.slice(at + 2) : undefined;
}

/** `flags` without the ones the runner forces (in both `--flag=v` and `--flag v` forms). */
function withoutForced(flags: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const name = /^--([a-z-]+)(=|$)/.exec(flags[i]);
    if (name && FORCED_FLAGS.includes(name[1])) {
      if (name[2] === '') i++;
      continue;
    }
    out.push(flags[i]);
  }
  return out;
}

function flagValue(flags: string[], name: string): string | undefined {
  for (let i = 0; i < flags.length; i++) {
    if (flags[i] === `--${name}`) return flags[i + 1];
    if (flags[i].startsWith(`--${name}=`)) return flags[i].slice(name.length + 3);
  }
  return undefined;
}

/** The container's env with `value`s and the downward-API fields a pod usually asks for. */
function containerEnv(container: ContainerSpec, pod: PodContext): NodeJS.ProcessEnv {
  const fields: Record<string, string> = { 'status.podIP': pod.ip, 'metadata.name': pod.name, 'metadata.namespace': pod.namespace };
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: pod.workspace, POD_IP: pod.ip, POD_NAME: pod.name, POD_NAMESPACE: pod.namespace };
  for (const e of container.env ?? []) {
    const fromField = e.valueFrom?.fieldRef?.fieldPath;
    const value = e.value ?? (fromField ? fields[fromField] : undefined);
    if (value !== undefined) env[e.name] = value;
  }
  return env;
}

/**
 * `$(NAME)` in a command or args replaced by the container's env value, `$$` by `$`, an unknown
 * name left as written: the kubelet's expansion, so `--bind-address=$(POD_IP):8080` works.
 */
export function expandEnvRefs(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (ref, name?: string) => {
    if (name === undefined) return '$';
    return env[name] ?? ref;
  });
}

/**
 * Where a runtime container's workspace is on this machine: the bound volume's directory when the
 * container mounts a PersistentVolumeClaim at its `--workspace` (the runtime's default: $SANDBOX_BASE_DIR,
 * else /app), as the kubelet would mount it there; else the Pod's own workspace.
 */
function runtimeWorkspace(container: ContainerSpec, flags: string[], env: NodeJS.ProcessEnv, index: number, pod: PodContext): string {
  const inContainer = flagValue(flags, 'workspace') ?? (env.SANDBOX_BASE_DIR?.trim() || '/app');
  const clean = (p: string) => path.posix.normalize(p).replace(/(.)\/+$/, '$1');
  const mount = (container.volumeMounts ?? []).find((m) => clean(m.mountPath) === clean(inContainer));
  const dir = mount ? pod.claimVolumes?.get(mount.name) : undefined;
  if (dir instanceof LaunchError) throw new LaunchError(`spec.containers[${index}].volumeMounts: the workspace volume "${mount!.name}": ${dir.message}`);
  return dir ?? pod.workspace;
}

export function launchFor(spec: ContainerSpec, index: number, pod: PodContext): Launch {
  const env = containerEnv(spec, pod);
  const expand = (values?: string[]) => values?.map((v) => expandEnvRefs(v, env));
  const container: ContainerSpec = { ...spec, command: expand(spec.command), args: expand(spec.args) };
  const runtime = runtimeArgs(container);
  if (runtime) {
    const workspace = runtimeWorkspace(container, runtime, env, index, pod);
    const flags = [...withoutForced(runtime), `--listen-address=${pod.ip}`, `--workspace=${workspace}`];
    if (pod.allowRoot && !flags.some((f) => /^--allow-root(=|$)/.test(f))) flags.push('--allow-root');
    const port = Number(flagValue(runtime, 'port') ?? 8888);
    return { kind: 'runtime', bin: process.execPath, args: [pod.bundle, 'runtime', ...flags], env, readiness: { kind: 'http', port, path: '/healthz' } };
  }
  const argv = [...container.command ?? [], ...container.args ?? []];
  if (!container.command?.length) {
    throw new LaunchError(`spec.containers[${index}].command is empty: the pod runner cannot run the image "${container.image}"'s entrypoint; `
      + 'give the container an explicit command (e.g. ["node", "/abs/path/server.js"])');
  }
  const bin = argv[0] === 'node' ? process.execPath : argv[0];
  if (bin !== process.execPath && !path.isAbsolute(bin) && bin.includes('/')) {
    throw new LaunchError(`spec.containers[${index}].command[0] "${argv[0]}" is a relative path: use an absolute path or a program on PATH`);
  }
  const ports = (container.ports ?? []).map((p) => p.containerPort);
  return { kind: 'command', bin, args: argv.slice(1), env, readiness: ports.length ? { kind: 'tcp', ports } : { kind: 'running' } };
}
