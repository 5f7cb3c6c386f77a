import { propName } from './api/spelling';
import { ErrorList, checkContainerResources, checkDns1123Label, checkStringMap } from './api/validation';
import type { EnvFrom, EnvValue } from './env';
import type { Probe } from './probe';

/** Protocol of a container port. */
export enum Protocol {
  /** TCP (the default). */
  TCP = 'TCP',
  /** UDP. */
  UDP = 'UDP',
  /** SCTP. */
  SCTP = 'SCTP',
}

/** When the kubelet pulls a container image. */
export enum ImagePullPolicy {
  /** Always pull. */
  ALWAYS = 'Always',
  /** Pull only if absent (the Kubernetes default for tagged images). */
  IF_NOT_PRESENT = 'IfNotPresent',
  /** Never pull. */
  NEVER = 'Never',
}

/** A port a sandbox container listens on. The headless Service (if any) exposes it. */
export interface ContainerPort {
  /** Port number, 1-65535. */
  readonly number: number;
  /** Port name (an IANA service name, at most 15 characters). @default - unnamed */
  readonly name?: string;
  /** @default Protocol.TCP */
  readonly protocol?: Protocol;
}

/**
 * CPU, memory and other resources of a container, as Kubernetes quantities. Checked at synth as the
 * API server checks them: `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>` or a domain-prefixed
 * extended resource such as `nvidia.com/gpu`; amounts of 0 or more; each request at most its limit; an
 * extended resource in whole units, with a limit equal to its request.
 */
export interface ContainerResources {
  /** Requests such as `{ cpu: '500m', memory: '1Gi' }`. @default - none */
  readonly requests?: { [resource: string]: string };
  /** Limits such as `{ cpu: '2', memory: '4Gi' }`. @default - none */
  readonly limits?: { [resource: string]: string };
}

/** Where a volume is mounted in a container. */
export interface VolumeMount {
  /** Name of a pod volume or of a volume claim template. */
  readonly volume: string;
  /** Absolute mount path. */
  readonly path: string;
  /** @default false */
  readonly readOnly?: boolean;
  /** Sub-path inside the volume. @default - the volume root */
  readonly subPath?: string;
}

/** Overrides of the secure container defaults, for images that need them. */
export interface ContainerSecurityOverrides {
  /** UID to run as. @default - the image's user (must be non-root unless the pod allows root) */
  readonly runAsUser?: number;
  /** GID to run as. @default - the image's group */
  readonly runAsGroup?: number;
  /** Mount the root filesystem read-only. @default false */
  readonly readOnlyRootFilesystem?: boolean;
  /** Capabilities to add back after dropping ALL, such as `NET_BIND_SERVICE`. @default - none */
  readonly addCapabilities?: string[];
}

/** A container of a sandbox Pod. */
export interface SandboxContainerProps {
  /** Image reference; pin a digest for reproducible sandboxes. */
  readonly image: string;
  /** Container name (DNS-1123 label). @default - `sandbox` for the first container, `container-<n>` after */
  readonly name?: string;
  /** Entrypoint override. @default - the image's ENTRYPOINT */
  readonly command?: string[];
  /** Arguments. @default - the image's CMD */
  readonly args?: string[];
  /** Environment variables by name. @default - none */
  readonly env?: { [name: string]: string };
  /**
   * Environment variables whose values come from Secret or ConfigMap keys or Pod fields
   * (`valueFrom`), such as `API_KEY` mapped to `EnvValue.fromSecretKey(secret, 'key')`.
   * Names must not repeat those of `env`.
   * @default - none
   */
  readonly envValues?: { [name: string]: EnvValue };
  /** Every key of these Secrets and ConfigMaps as variables (`envFrom`). @default - none */
  readonly envFrom?: EnvFrom[];
  /** Restart the container when this fails. @default - none */
  readonly livenessProbe?: Probe;
  /** Take the Pod out of its Service (and the Sandbox out of Ready) while this fails. @default - none */
  readonly readinessProbe?: Probe;
  /** Hold liveness and readiness probes until this passes once, for slow starts. @default - none */
  readonly startupProbe?: Probe;
  /** Ports the container listens on. @default - none */
  readonly ports?: ContainerPort[];
  /** Resource requests and limits. @default - none (set them: sandboxes run untrusted code) */
  readonly resources?: ContainerResources;
  /** Volume mounts. @default - none */
  readonly volumeMounts?: VolumeMount[];
  /** Working directory. @default - the image's WORKDIR */
  readonly workingDir?: string;
  /** @default - Kubernetes' default for the image tag */
  readonly imagePullPolicy?: ImagePullPolicy;
  /** Security context overrides. @default - none: non-root, no privilege escalation, ALL capabilities dropped */
  readonly security?: ContainerSecurityOverrides;
}

/** @internal Settings that decide the container security context. */
export interface _ContainerSecurityDefaults {
  readonly hardened: boolean;
}

/** @internal Validate one container; `field` names it, e.g. `containers[0]`; `namespace` is the Pod's, when known. */
export function _validateContainer(errors: ErrorList, field: string, c: SandboxContainerProps, namespace?: string): void {
  if (c === null || typeof c !== 'object' || Array.isArray(c)) {
    errors.prop(field, 'must be a container (an object with at least an image)');
    return;
  }
  if (typeof c.image !== 'string' || !c.image || c.image.trim() !== c.image) {
    errors.prop(`${field}.image`, 'must be a non-empty image reference without surrounding spaces, e.g. "python:3.12-slim"');
  }
  if (c.name !== undefined) errors.prop(`${field}.name`, checkDns1123Label(c.name));
  errors.prop(`${field}.env`, checkStringMap(c.env));
  checkEnum(errors, `${field}.imagePullPolicy`, c.imagePullPolicy, Object.values(ImagePullPolicy));
  _listOf(errors, `${field}.ports`, c.ports).forEach((p, i) => {
    if (!Number.isInteger(p?.number) || p.number < 1 || p.number > 65535) {
      errors.prop(`${field}.ports[${i}].number`, `${describe(p?.number)} is not a port; use an integer from 1 to 65535`);
    }
    if (p?.name !== undefined && (typeof p.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) || p.name.length > 15)) {
      errors.prop(`${field}.ports[${i}].name`, `${describe(p.name)} must be at most 15 lowercase letters, digits or '-'`);
    }
    checkEnum(errors, `${field}.ports[${i}].protocol`, p?.protocol, Object.values(Protocol));
  });
  checkContainerResources(errors, `${field}.resources`, c.resources);
  _listOf(errors, `${field}.volumeMounts`, c.volumeMounts).forEach((m, i) => {
    if (typeof m?.path !== 'string' || !m.path.startsWith('/')) errors.prop(`${field}.volumeMounts[${i}].path`, `${describe(m?.path)} must be an absolute path, such as "/work"`);
  });
  // Callers in other languages can pass any value: only the library's own classes are validated, the rest reported.
  const envValues = c.envValues !== null && typeof c.envValues === 'object' && !Array.isArray(c.envValues) ? c.envValues : {};
  if (envValues !== c.envValues && c.envValues !== undefined) errors.prop(`${field}.envValues`, 'must be a map from variable name to EnvValue');
  for (const [name, value] of Object.entries(envValues)) {
    if (c.env?.[name] !== undefined) errors.prop(`${field}.envValues["${name}"]`, `is also set in ${propName('env')}; give each variable once, in ${propName('env')} or in ${propName('envValues')}`);
    if (isValidatable(value)) value._validate(errors, `${field}.envValues["${name}"]`, namespace);
    else errors.prop(`${field}.envValues["${name}"]`, 'must be an EnvValue, made from a Secret key, a ConfigMap key or a Pod field');
  }
  _listOf(errors, `${field}.envFrom`, c.envFrom).forEach((e, i) => {
    if (isValidatable(e)) e._validate(errors, `${field}.envFrom[${i}]`, namespace);
    else errors.prop(`${field}.envFrom[${i}]`, 'must be an EnvFrom, made from a Secret or a ConfigMap');
  });
  const portNames = (Array.isArray(c.ports) ? c.ports : []).flatMap((p) => (p?.name ? [p.name] : []));
  for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const probe = c[kind];
    if (probe === undefined) continue;
    if (isValidatable(probe)) probe._validate(errors, `${field}.${kind}`, portNames, kind !== 'readinessProbe');
    else errors.prop(`${field}.${kind}`, 'must be a Probe, made as an HTTP GET, TCP, exec or gRPC probe');
  }
  for (const id of ['runAsUser', 'runAsGroup'] as const) _checkId(errors, `${field}.security.${id}`, c.security?.[id]);
}

/** @internal Check a UID or GID: Kubernetes accepts 0 to 2147483647. */
export function _checkId(errors: ErrorList, field: string, value: unknown): void {
  if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 2147483647)) {
    errors.prop(field, `${describe(value)} is not a user or group ID; use a whole number from 0 to 2147483647`);
  }
}

/** @internal `value` as a list, reporting it when it is neither a list nor undefined (jsii callers can pass anything). */
export function _listOf<T>(errors: ErrorList, field: string, value: readonly T[] | undefined): readonly T[] {
  if (value === undefined || Array.isArray(value)) return value ?? [];
  errors.prop(field, `must be a list, got ${describe(value)}; give a list (or leave it out)`);
  return [];
}

function checkEnum(errors: ErrorList, field: string, value: unknown, allowed: readonly string[]): void {
  if (value !== undefined && !allowed.includes(value as string)) errors.prop(field, `${describe(value)} is not allowed; use one of ${allowed.join(', ')}`);
}

/** Whether `value` is one of the library's own validating objects (EnvValue, EnvFrom, Probe). */
function isValidatable(value: unknown): value is { _validate: (...args: any[]) => void } {
  return value !== null && typeof value === 'object' && typeof (value as { _validate?: unknown })._validate === 'function';
}

/** A value as a message shows it. */
function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : String(value);
}

/** @internal The container as core/v1 Container JSON. */
export function _containerToKube(c: SandboxContainerProps, name: string, defaults: _ContainerSecurityDefaults,
  field = 'container', namespace?: string): { [key: string]: unknown } {
  const env: object[] = Object.entries(c.env ?? {}).map(([envName, value]) => ({ name: envName, value }));
  for (const [envName, value] of Object.entries(c.envValues ?? {})) {
    env.push({ name: envName, valueFrom: value._toKube(`${field}.envValues["${envName}"]`, namespace) });
  }
  const security = c.security ?? {};
  const add = security.addCapabilities;
  const capabilities = defaults.hardened ? { drop: ['ALL'], ...(add ? { add } : {}) } : add ? { add } : undefined;
  const securityContext = undefinedIfEmpty(dropUndefined({
    allowPrivilegeEscalation: defaults.hardened ? false : undefined,
    capabilities,
    readOnlyRootFilesystem: security.readOnlyRootFilesystem,
    runAsUser: security.runAsUser,
    runAsGroup: security.runAsGroup,
  }));
  return dropUndefined({
    name,
    image: c.image,
    command: c.command,
    args: c.args,
    workingDir: c.workingDir,
    imagePullPolicy: c.imagePullPolicy,
    env: env.length > 0 ? env : undefined,
    envFrom: c.envFrom?.length ? c.envFrom.map((e, i) => e._toKube(`${field}.envFrom[${i}]`, namespace)) : undefined,
    ports: c.ports?.map((p) => dropUndefined({ name: p.name, containerPort: p.number, protocol: p.protocol ?? Protocol.TCP })),
    resources: c.resources ? dropUndefined({ requests: c.resources.requests, limits: c.resources.limits }) : undefined,
    volumeMounts: c.volumeMounts?.map((m) =>
      dropUndefined({ name: m.volume, mountPath: m.path, readOnly: m.readOnly, subPath: m.subPath })),
    livenessProbe: c.livenessProbe?._toKube(),
    readinessProbe: c.readinessProbe?._toKube(),
    startupProbe: c.startupProbe?._toKube(),
    securityContext,
  });
}

/** @internal A copy of `obj` without undefined values, so YAML output stays minimal. */
export function dropUndefined<T extends object>(obj: T): { [key: string]: unknown } {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

/** @internal `undefined` for an empty object. */
export function undefinedIfEmpty<T extends object>(obj: T): T | undefined {
  return Object.keys(obj).length === 0 ? undefined : obj;
}
