/**
 * Whether a Sandbox may adopt an unowned Pod named like its Pod.
 *
 * Upstream (controllers/sandbox_controller.go) adopts one labelled `agents.x-k8s.io/adoptable=true`
 * or one carrying the Sandbox's tracking label. The adoptable label came with its fix for Pod and
 * PVC hijacking (kubernetes-sigs/agent-sandbox#784): an unowned object is taken over only when its
 * creator says so. That protects the object's creator from a Sandbox author; it does not protect
 * the Sandbox from the creator: anyone who may create Pods could pre-create a privileged,
 * hostNetwork Pod under the Sandbox's name, have it adopted and served as the sandbox, and the
 * install's admission policy, which checks Sandboxes and not Pods, never saw it.
 *
 * Nothing in this operator pre-provisions Pods (warm pools make Sandboxes, which claims adopt), so a
 * Pod is adopted only when it was made for this Sandbox and lost its ownerReference (an orphaning
 * delete of an earlier Sandbox of the name, a hand edit, a restore): it carries the tracking label
 * with this Sandbox's name hash, which the controller writes on every Pod it creates; the adoptable
 * label alone no longer counts for Pods. A label is evidence, not proof (whoever may create Pods may
 * write it), so the Pod's spec must also keep the install's hardening rules: no host namespaces,
 * privileged or privilege-escalating containers, host paths or ports, capabilities beyond the
 * runtime's default set, unconfined seccomp or AppArmor, custom SELinux, unmasked /proc, unsafe
 * sysctls, probes of other hosts, or non-core volume types. And since a hardened Pod can still run
 * someone else's image, it must also be the Pod this controller would build for the Sandbox now
 * (desired.ts buildPod): the same containers and init containers (images, commands, args, working
 * directories, env, envFrom, volume mounts, probes and lifecycle hooks, security contexts), the
 * same volumes, ServiceAccount and token mount, security context, runtime class, host namespaces,
 * DNS settings and host aliases. Fields the API server fills in with their defaults, and the token
 * volume its ServiceAccount admission adds when the Pod asks for a token, compare as the Pod was
 * written. The informer cache keeps no Pod spec, so the decision on a candidate waits for the live
 * object.
 */
import { SandboxLabels } from '#api/labels';
import {
  APPARMOR_ANNOTATION_PREFIX, BASELINE_CAPABILITIES, CONFINED_PROFILE_TYPES, RESTRICTED_VOLUME_TYPES, SAFE_SYSCTLS, SELINUX_TYPES,
} from '#api/secure-defaults';
import type { Container, Pod, PodSecurityContext, Probe, SecurityContext } from '../../model';

/** The adoption decision on an unowned Pod: adopt it, fetch its spec first, or refuse with a message. */
export type PodAdoption =
  | { readonly verdict: 'adopt' }
  | { readonly verdict: 'inspect' }
  | { readonly verdict: 'refuse'; readonly message: string };

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'] as const;
const HOST_HANDLERS = ['livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle.postStart', 'lifecycle.preStop'];
const capabilityName = (c: string) => c.toUpperCase().replace(/^CAP_/, '');

/** The hardening rules `pod` breaks, each as `<field> <what>`; empty when it keeps them all. */
export function hardeningViolations(pod: Pod): string[] {
  const spec = pod.spec;
  const out: string[] = [];
  if (!spec) return out;
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) if (spec[field] === true) out.push(`spec.${field} is true`);
  (spec.volumes ?? []).forEach((v, i) => {
    const types = ['hostPath', ...RESTRICTED_VOLUME_TYPES].filter((t) => (v as unknown as Record<string, unknown>)[t] !== undefined);
    for (const t of types) out.push(`spec.volumes[${i}].${t} (volume "${v.name}") is a node volume`);
  });
  out.push(...contextViolations('spec.securityContext', '', spec.securityContext));
  (spec.securityContext?.sysctls ?? []).forEach((s, i) => {
    if (!SAFE_SYSCTLS.includes(s.name ?? '')) out.push(`spec.securityContext.sysctls[${i}].name "${s.name}" is not a safe sysctl`);
  });
  for (const [key, value] of Object.entries(pod.metadata.annotations ?? {})) {
    if (key.startsWith(APPARMOR_ANNOTATION_PREFIX) && !['', 'runtime/default'].includes(value) && !value.startsWith('localhost/')) {
      out.push(`metadata.annotations["${key}"] is "${value}"`);
    }
  }
  for (const list of CONTAINER_LISTS) {
    ((spec[list] ?? []) as Container[]).forEach((c, i) => out.push(...containerViolations(`spec.${list}[${i}]`, ` (container "${c.name}")`, c)));
  }
  return out;
}

/** What a Pod or container security context sets that the hardening rules refuse. */
function contextViolations(at: string, who: string, sc: SecurityContext | PodSecurityContext | undefined): string[] {
  const out: string[] = [];
  if (!sc) return out;
  if (sc.windowsOptions?.hostProcess === true) out.push(`${at}.windowsOptions.hostProcess${who} is true`);
  if (sc.seccompProfile?.type === 'Unconfined') out.push(`${at}.seccompProfile.type${who} is Unconfined`);
  if (sc.appArmorProfile && !CONFINED_PROFILE_TYPES.includes(sc.appArmorProfile.type)) out.push(`${at}.appArmorProfile.type${who} is ${sc.appArmorProfile.type}`);
  const se = sc.seLinuxOptions;
  if (se && ((se.type && !SELINUX_TYPES.includes(se.type)) || se.user || se.role)) out.push(`${at}.seLinuxOptions${who} sets a user, a role or type ${se.type ?? '(none)'}`);
  return out;
}

function containerViolations(at: string, who: string, c: Container): string[] {
  const sc = c.securityContext;
  const out = contextViolations(`${at}.securityContext`, who, sc);
  if (sc?.privileged === true) out.push(`${at}.securityContext.privileged${who} is true`);
  if (sc?.allowPrivilegeEscalation === true) out.push(`${at}.securityContext.allowPrivilegeEscalation${who} is true`);
  const extra = (sc?.capabilities?.add ?? []).filter((a) => !BASELINE_CAPABILITIES.includes(capabilityName(a)));
  if (extra.length > 0) out.push(`${at}.securityContext.capabilities.add${who} adds ${extra.join(', ')}`);
  if (sc?.procMount !== undefined && sc.procMount !== 'Default') out.push(`${at}.securityContext.procMount${who} is ${sc.procMount}`);
  if ((c.ports ?? []).some((p) => (p.hostPort ?? 0) !== 0)) out.push(`${at}.ports[*].hostPort${who} is set`);
  for (const path of HOST_HANDLERS) {
    const handler = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], c) as Probe | undefined;
    for (const kind of ['httpGet', 'tcpSocket'] as const) {
      if (handler?.[kind]?.host) out.push(`${at}.${path}.${kind}.host${who} is ${handler[kind]!.host}`);
    }
  }
  return out;
}

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Boolean fields the API server omits when false (not pointers): false and absent are the same. */
const OMITTED_WHEN_FALSE = new Set(['readOnly', 'hostNetwork', 'hostPID', 'hostIPC']);
const DEFAULTS: Record<string, Json> = { defaultMode: 420, scheme: 'HTTP', timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 };

/**
 * `v` without what the API server's defaulting adds, so a Pod as written and the same Pod as served
 * compare equal: volume `defaultMode` 420, fieldRef `apiVersion` v1, probe timings, `scheme` HTTP,
 * empty strings and lists, an empty securityContext, and false in the non-pointer booleans. A
 * pointer boolean's false (allowPrivilegeEscalation, runAsNonRoot) is kept: absent is not false.
 */
function normalized(v: Json, key = ''): Json {
  if (Array.isArray(v)) return v.length > 0 ? v.map((x) => normalized(x)) : undefined;
  if (v === '' || v === null || (v === false && OMITTED_WHEN_FALSE.has(key))) return undefined;
  if (!isObject(v)) return v;
  const out: Record<string, Json> = {};
  for (const [k, x] of Object.entries(v)) {
    if ((DEFAULTS[k] !== undefined && x === DEFAULTS[k]) || (k === 'apiVersion' && key === 'fieldRef' && x === 'v1')) continue;
    const n = normalized(x, k);
    if (n !== undefined) out[k] = n;
  }
  return key === 'securityContext' && Object.keys(out).length === 0 ? undefined : out;
}

const same = (a: Json, b: Json, key: string) => JSON.stringify(sorted(normalized(a, key))) === JSON.stringify(sorted(normalized(b, key)));
function sorted(v: Json): Json {
  if (Array.isArray(v)) return v.map(sorted);
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
}

const CONTAINER_FIELDS = ['image', 'command', 'args', 'workingDir', 'env', 'envFrom', 'volumeMounts', 'securityContext',
  'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'] as const;
const POD_FIELDS = ['automountServiceAccountToken', 'securityContext', 'runtimeClassName', 'hostNetwork', 'hostPID', 'hostIPC',
  'hostUsers', 'dnsConfig', 'hostAliases'] as const;
/** The token volume the ServiceAccount admission plugin adds (`kube-api-access-<random>`) and where it mounts it. */
const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
const TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The first field in which `live` is not the Pod `desired` (buildPod's) describes, as
 * `spec.<path>` with the container or volume named, or undefined when they agree.
 */
export function podSpecMismatch(live: Pod, desired: Pod): string | undefined {
  const want = desired.spec!;
  const have = live.spec!;
  // The API server adds a token volume and its mounts to a Pod that does not opt out of the token.
  const addedToken = want.automountServiceAccountToken === false ? () => false
    : (name: string | undefined) => (name ?? '').startsWith(TOKEN_VOLUME_PREFIX) && !(want.volumes ?? []).some((v) => v.name === name);
  for (const list of ['initContainers', 'containers'] as const) {
    const wanted = (want[list] ?? []) as Container[];
    const had = (have[list] ?? []) as Container[];
    if (wanted.map((c) => c.name).join('\n') !== had.map((c) => c.name).join('\n')) {
      return `spec.${list} (names ${JSON.stringify(had.map((c) => c.name))}, this Sandbox's are ${JSON.stringify(wanted.map((c) => c.name))})`;
    }
    for (const [i, c] of had.entries()) {
      const mounts = (c.volumeMounts ?? []).filter((m) => !(addedToken(m.name) && m.mountPath === TOKEN_MOUNT_PATH));
      const field = CONTAINER_FIELDS.find((f) => !same((wanted[i] as unknown as Record<string, Json>)[f],
        f === 'volumeMounts' ? mounts : (c as unknown as Record<string, Json>)[f], f));
      if (field) return `spec.${list}[${i}].${field} (container "${c.name}")`;
    }
  }
  const volumes = (have.volumes ?? []).filter((v) => !addedToken(v.name));
  const wantedVolumes = want.volumes ?? [];
  if (volumes.map((v) => v.name).join('\n') !== wantedVolumes.map((v) => v.name).join('\n')) {
    return `spec.volumes (names ${JSON.stringify(volumes.map((v) => v.name))}, this Sandbox's are ${JSON.stringify(wantedVolumes.map((v) => v.name))})`;
  }
  const volume = volumes.findIndex((v, i) => !same(wantedVolumes[i], v, 'volume'));
  if (volume >= 0) return `spec.volumes[${volume}] (volume "${volumes[volume].name}")`;
  if ((have.serviceAccountName ?? 'default') !== (want.serviceAccountName ?? want.serviceAccount ?? 'default')) return 'spec.serviceAccountName';
  if ((have.dnsPolicy ?? 'ClusterFirst') !== (want.dnsPolicy ?? 'ClusterFirst')) return 'spec.dnsPolicy';
  const field = POD_FIELDS.find((f) => f === 'automountServiceAccountToken'
    ? want[f] !== have[f] : !same((want as unknown as Record<string, Json>)[f], (have as unknown as Record<string, Json>)[f], f));
  return field ? `spec.${field}` : undefined;
}

/**
 * The decision on `pod`, unowned and named like the Pod of the Sandbox whose name hash is `hash`,
 * for which the controller would build `desired`. A Pod without its spec (as the informer cache
 * holds it) that passes the label check is to be fetched and decided on again.
 */
export function podAdoption(pod: Pod, hash: string, desired: Pod): PodAdoption {
  const name = pod.metadata.name;
  const label = `${SandboxLabels.SANDBOX_NAME_HASH}=${hash}`;
  if (pod.metadata.labels?.[SandboxLabels.SANDBOX_NAME_HASH] !== hash) {
    return {
      verdict: 'refuse',
      message: `Pod "${name}" exists and no controller owns it, and it does not carry this Sandbox's label ${label}, so it was not made for this Sandbox;`
        + ` only a Pod that was this Sandbox's and lost its ownerReference is adopted (${SandboxLabels.ADOPTABLE}=true does not make a Pod adoptable);`
        + ' delete the Pod and the Sandbox creates its own',
    };
  }
  if (!Array.isArray(pod.spec?.containers)) return { verdict: 'inspect' };
  const violations = hardeningViolations(pod);
  if (violations.length > 0) {
    return {
      verdict: 'refuse',
      message: `Pod "${name}" exists and no controller owns it, but it is not adopted: its spec breaks the hardening rules the install's admission policy`
        + ` applies to Sandboxes (${violations.join('; ')}); delete the Pod and the Sandbox creates its own from its spec`,
    };
  }
  const mismatch = podSpecMismatch(pod, desired);
  if (mismatch === undefined) return { verdict: 'adopt' };
  return {
    verdict: 'refuse',
    message: `Pod "${name}" exists and no controller owns it, but it is not adopted: it is not the Pod this Sandbox's spec describes (${mismatch} differs),`
      + ' and the label alone proves nothing (whoever may create Pods can write it); delete the Pod and the Sandbox creates its own from its spec',
  };
}
