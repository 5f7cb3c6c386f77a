/**
 * The objects a Sandbox promises, as upstream's controllers/sandbox_controller.go builds them, as
 * pure functions of the Sandbox: its Pod, headless Service and PVCs, and the metadata patches that
 * bring existing children back in line. No I/O here; plan.ts chooses which of these to write.
 */
import { EXTENSIONS_GROUP, KINDS } from '#api/groups';
import {
  CREATED_BY_POD_VALUES,
  SandboxAnnotations,
  SandboxLabels,
  isReservedAnnotationKey,
  isReservedLabelKey,
  withoutReserved,
} from '#api/labels';
import { NameHash } from '#api/name-hash';
import { controllerRefOf, controllerRefTo, groupOf, mapPatch, type MapPatch, type PersistentVolumeClaim, type Pod, type Sandbox, type Service, type ServicePort, type VolumeClaimTemplate } from '../../model';
import { defaultBareSandboxPod } from '../../model/secure-defaults';
import type { KubeObject, OwnerReference } from '../../runtime/types';

/** The child kinds a Sandbox owns. */
export type ChildKind = 'pod' | 'service' | 'pvc';

/** Recorded by the API server as the writer of everything the Sandbox controller creates or patches. */
export const FIELD_MANAGER = 'sandbox-controller';

type Labels = Record<string, string>;

/** The controller ownerReference every child of `sandbox` carries. */
export function sandboxOwnerRef(sandbox: Sandbox): OwnerReference {
  return controllerRefTo(sandbox, KINDS.sandbox);
}

export function nameHashOf(sandbox: Sandbox): string {
  return NameHash.of(sandbox.metadata.name);
}

/** `status.selector`: what the SDKs parse to find the hash. */
export function selectorOf(sandbox: Sandbox): string {
  return `${SandboxLabels.SANDBOX_NAME_HASH}=${nameHashOf(sandbox)}`;
}

export function pvcNameOf(vct: VolumeClaimTemplate, sandbox: Sandbox): string {
  return `${vct.metadata?.name ?? ''}-${sandbox.metadata.name}`;
}

/**
 * May a Sandbox take over an unowned Service or PVC? Only when someone marked it adoptable, or it
 * already carries this Sandbox's hash (e.g. it was ours and lost its ownerReference). Pods have
 * stricter rules (adoption.ts).
 */
export function isAdoptable(obj: KubeObject, sandbox: Sandbox): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels[SandboxLabels.ADOPTABLE] === 'true' || labels[SandboxLabels.SANDBOX_NAME_HASH] === nameHashOf(sandbox);
}

/** `created-by` on the Pod: an allow-listed value, anything else `unknown`, so metrics stay bounded. */
export function normalizeCreatedBy(value: string): string {
  return CREATED_BY_POD_VALUES.includes(value) ? value : 'unknown';
}

/**
 * Labels copied from the Sandbox's own metadata to its Pod, only when an extensions controller
 * (pool or claim) controls the Sandbox: the NetworkPolicy selects Pods by template hash, the
 * router skips Pods that still carry the pool label.
 */
export function extensionLabels(sandbox: Sandbox): Labels {
  const out: Labels = {};
  const ref = controllerRefOf(sandbox);
  if (!ref || groupOf(ref.apiVersion) !== EXTENSIONS_GROUP) return out;
  const labels = sandbox.metadata.labels ?? {};
  const pool = labels[SandboxLabels.WARM_POOL_SANDBOX];
  if (ref.kind === KINDS.warmPool.kind && pool !== undefined) out[SandboxLabels.WARM_POOL_SANDBOX] = pool;
  const template = labels[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];
  if (template !== undefined) out[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] = template;
  return out;
}

/** The user's podTemplate labels and annotations with every reserved key dropped. */
export function userPodMetadata(sandbox: Sandbox): { labels: Labels; annotations: Labels } {
  const meta = sandbox.spec.podTemplate.metadata;
  return {
    labels: withoutReserved(meta?.labels, isReservedLabelKey),
    annotations: withoutReserved(meta?.annotations, isReservedAnnotationKey),
  };
}

/** The podTemplate's label and annotation keys that userPodMetadata drops, `label <key>` / `annotation <key>`, sorted. */
export function droppedReservedKeys(sandbox: Sandbox): string[] {
  const meta = sandbox.spec.podTemplate.metadata;
  // A warm pool writes its own labels into a member's podTemplate too (as upstream's does), with the
  // values the member itself carries: that is the controllers' bookkeeping, not a tenant's forgery,
  // and saying so would be one Warning per refilled member.
  const own = sandbox.metadata.labels ?? {};
  const mirrored = (k: string) => own[k] !== undefined && own[k] === meta?.labels?.[k];
  return [
    ...Object.keys(meta?.labels ?? {}).filter((k) => isReservedLabelKey(k) && !mirrored(k)).map((k) => `label ${k}`),
    ...Object.keys(meta?.annotations ?? {}).filter(isReservedAnnotationKey).map((k) => `annotation ${k}`),
  ].sort();
}

/**
 * The labels the Pod must carry. The hash goes in after the user's labels (which are already
 * filtered), so even a filter bug could not let a tenant claim another Sandbox's hash.
 */
export function desiredPodLabels(sandbox: Sandbox): Labels {
  const labels: Labels = { ...userPodMetadata(sandbox).labels };
  labels[SandboxLabels.SANDBOX_NAME_HASH] = nameHashOf(sandbox);
  Object.assign(labels, extensionLabels(sandbox));
  const createdBy = sandbox.metadata.labels?.[SandboxLabels.CREATED_BY];
  if (createdBy !== undefined) labels[SandboxLabels.CREATED_BY] = normalizeCreatedBy(createdBy);
  return labels;
}

/** The annotations the Pod must carry, including the bookkeeping of what was propagated. */
export function desiredPodAnnotations(sandbox: Sandbox): Labels {
  const user = userPodMetadata(sandbox);
  const annotations: Labels = { ...user.annotations };
  const labelKeys = joinKeys(user.labels);
  const annotationKeys = joinKeys(user.annotations);
  if (labelKeys) annotations[SandboxAnnotations.PROPAGATED_LABELS] = labelKeys;
  if (annotationKeys) annotations[SandboxAnnotations.PROPAGATED_ANNOTATIONS] = annotationKeys;
  return annotations;
}

function joinKeys(map: Labels): string {
  return Object.keys(map).sort().join(',');
}

function splitKeys(value: string | undefined): string[] {
  return (value ?? '').split(',').filter(Boolean);
}

/**
 * The Pod to create: the podTemplate (no service-account token unless it asks for one), the
 * filtered metadata, one volume per claim template.
 */
export function buildPod(sandbox: Sandbox): Pod {
  const spec = defaultBareSandboxPod(structuredClone(sandbox.spec.podTemplate.spec));
  const claimVolumes = (sandbox.spec.volumeClaimTemplates ?? []).map((vct) => ({
    name: vct.metadata?.name ?? '',
    persistentVolumeClaim: { claimName: pvcNameOf(vct, sandbox) },
  }));
  if (claimVolumes.length > 0) {
    // StatefulSet semantics: a claim template replaces a template volume of the same name.
    const claimed = new Set(claimVolumes.map((v) => v.name));
    spec.volumes = [...(spec.volumes ?? []).filter((v) => !claimed.has(v.name)), ...claimVolumes];
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: sandbox.metadata.name,
      namespace: sandbox.metadata.namespace,
      labels: desiredPodLabels(sandbox),
      annotations: desiredPodAnnotations(sandbox),
      ownerReferences: [sandboxOwnerRef(sandbox)],
    },
    spec,
  };
}

/**
 * The merge patch that brings an existing Pod's metadata in line (upstream's updatePodMetadata),
 * or undefined when nothing differs. Keys the controller propagated earlier and the template no
 * longer has are deleted; labels and annotations others put on the Pod are left alone.
 */
export function podMetadataPatch(sandbox: Sandbox, pod: Pod): { labels?: MapPatch; annotations?: MapPatch } | undefined {
  const labels = mapPatch(pod.metadata.labels, desiredPodLabels(sandbox), {
    managed: (current) => [
      ...splitKeys(pod.metadata.annotations?.[SandboxAnnotations.PROPAGATED_LABELS]),
      // System labels the controller owns: removed when their condition stops holding.
      ...[SandboxLabels.WARM_POOL_SANDBOX, SandboxLabels.SANDBOX_TEMPLATE_REF_HASH, SandboxLabels.CREATED_BY].filter((k) => k in current),
    ],
    keep: [SandboxLabels.SANDBOX_NAME_HASH],
  });
  const annotations = mapPatch(pod.metadata.annotations, desiredPodAnnotations(sandbox), {
    managed: (current) => [
      ...splitKeys(current[SandboxAnnotations.PROPAGATED_ANNOTATIONS]),
      ...[SandboxAnnotations.PROPAGATED_LABELS, SandboxAnnotations.PROPAGATED_ANNOTATIONS].filter((k) => k in current),
    ],
  });
  if (!labels && !annotations) return undefined;
  return { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
}


/**
 * Service ports from the containers and sidecars (restartable init containers): one per
 * (port, protocol), sorted, named by the first free explicit name or `p-<port>-<protocol>`.
 */
export function servicePorts(sandbox: Sandbox): ServicePort[] {
  const spec = sandbox.spec.podTemplate.spec;
  const containers = [...(spec.containers ?? []), ...(spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')];
  const byKey = new Map<string, { port: number; protocol: string; names: string[] }>();
  for (const container of containers) {
    for (const p of container.ports ?? []) {
      if (!p.containerPort) continue;
      const protocol = p.protocol || 'TCP';
      const key = `${p.containerPort}/${protocol}`;
      const entry = byKey.get(key) ?? { port: p.containerPort, protocol, names: [] };
      if (p.name) entry.names.push(p.name);
      byKey.set(key, entry);
    }
  }
  const entries = [...byKey.values()].sort((a, b) => a.port - b.port || (a.protocol < b.protocol ? -1 : a.protocol > b.protocol ? 1 : 0));
  const taken = new Set<string>();
  return entries.map(({ port, protocol, names }) => {
    let name = names.find((n) => !taken.has(n));
    if (name === undefined) {
      const base = `p-${port}-${protocol.toLowerCase()}`;
      name = base;
      for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
    }
    taken.add(name);
    return { name, port, protocol, targetPort: port };
  });
}

/** The headless Service named after the Sandbox, selecting its Pod by hash. */
export function buildService(sandbox: Sandbox): Service {
  const hash = nameHashOf(sandbox);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: sandbox.metadata.name,
      namespace: sandbox.metadata.namespace,
      labels: { [SandboxLabels.SANDBOX_NAME_HASH]: hash },
      ownerReferences: [sandboxOwnerRef(sandbox)],
    },
    spec: { clusterIP: 'None', selector: { [SandboxLabels.SANDBOX_NAME_HASH]: hash }, ports: servicePorts(sandbox) },
  };
}

/**
 * The merge patch that repairs drift of an existing Service (tracking label, selector and, when
 * `withPorts`, the ports), or undefined. The selector is replaced, not merged: an extra selector
 * key would silently narrow which Pods receive traffic.
 */
export function serviceDriftPatch(sandbox: Sandbox, svc: Service, withPorts: boolean): { metadata?: object; spec?: object } | undefined {
  const hash = nameHashOf(sandbox);
  const patch: { metadata?: object; spec?: Record<string, unknown> } = {};
  if (svc.metadata.labels?.[SandboxLabels.SANDBOX_NAME_HASH] !== hash) {
    patch.metadata = { labels: { [SandboxLabels.SANDBOX_NAME_HASH]: hash } };
  }
  const spec: Record<string, unknown> = {};
  const selector = svc.spec?.selector ?? {};
  const extra = Object.keys(selector).filter((k) => k !== SandboxLabels.SANDBOX_NAME_HASH);
  if (selector[SandboxLabels.SANDBOX_NAME_HASH] !== hash || extra.length > 0) {
    spec.selector = { [SandboxLabels.SANDBOX_NAME_HASH]: hash, ...Object.fromEntries(extra.map((k) => [k, null])) };
  }
  if (withPorts) {
    const desired = servicePorts(sandbox);
    const current = (svc.spec?.ports ?? []).map((p) => ({ name: p.name ?? '', port: p.port, protocol: p.protocol || 'TCP', targetPort: p.targetPort }));
    if (JSON.stringify(current) !== JSON.stringify(desired)) spec.ports = desired;
  }
  if (Object.keys(spec).length > 0) patch.spec = spec;
  return patch.metadata || patch.spec ? patch : undefined;
}

/** The PVC for one claim template: its labels (hash last), annotations and spec. */
export function buildPvc(sandbox: Sandbox, vct: VolumeClaimTemplate): PersistentVolumeClaim {
  const meta = vct.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: pvcNameOf(vct, sandbox),
      namespace: sandbox.metadata.namespace,
      labels: { ...meta.labels, [SandboxLabels.SANDBOX_NAME_HASH]: nameHashOf(sandbox) },
      ...(meta.annotations ? { annotations: { ...meta.annotations } } : {}),
      ownerReferences: [sandboxOwnerRef(sandbox)],
    },
    spec: structuredClone(vct.spec),
  };
}

/**
 * The ownership part of an adoption patch: our controller ref added to the other (non-controller)
 * refs, plus the tracking label so the label-filtered informers see the object from now on. The
 * resourceVersion makes the patch conditional: adopting from a stale cache must fail, not win.
 */
export function adoptionMetadata(sandbox: Sandbox, obj: KubeObject): Record<string, unknown> {
  const others = (obj.metadata.ownerReferences ?? []).filter((ref) => ref.uid !== sandbox.metadata.uid);
  return {
    resourceVersion: obj.metadata.resourceVersion,
    ownerReferences: [...others, sandboxOwnerRef(sandbox)],
    labels: { [SandboxLabels.SANDBOX_NAME_HASH]: nameHashOf(sandbox) },
  };
}
