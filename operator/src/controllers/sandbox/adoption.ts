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
 * sysctls, probes of other hosts, or non-core volume types. The informer cache keeps no Pod spec, so
 * the decision on a candidate waits for the live object.
 */
import { SandboxLabels } from '../../../../src/api/labels';
import {
  APPARMOR_ANNOTATION_PREFIX, BASELINE_CAPABILITIES, CONFINED_PROFILE_TYPES, RESTRICTED_VOLUME_TYPES, SAFE_SYSCTLS, SELINUX_TYPES,
} from '../../../../src/api/secure-defaults';
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

/**
 * The decision on `pod`, unowned and named like the Pod of the Sandbox whose name hash is `hash`.
 * A Pod without its spec (as the informer cache holds it) that passes the label check is to be
 * fetched and decided on again.
 */
export function podAdoption(pod: Pod, hash: string): PodAdoption {
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
  if (violations.length === 0) return { verdict: 'adopt' };
  return {
    verdict: 'refuse',
    message: `Pod "${name}" exists and no controller owns it, but it is not adopted: its spec breaks the hardening rules the install's admission policy`
      + ` applies to Sandboxes (${violations.join('; ')}); delete the Pod and the Sandbox creates its own from its spec`,
  };
}
