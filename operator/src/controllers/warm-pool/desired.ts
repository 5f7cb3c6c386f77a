/**
 * The objects a SandboxWarmPool asks for (upstream-api.md §6.3): its members, built from the
 * template, and the small patches that bring an orphan or an unlabeled member into the pool.
 */
import type { PoolFlags, SandboxWarmPool } from './types';
import { KINDS, apiVersionOf } from '../../../../src/api/groups';
import { SandboxAnnotations, SandboxLabels } from '../../../../src/api/labels';
import { NameHash } from '../../../../src/api/name-hash';
import { podTemplateHash, templateFingerprint } from '../template/blueprint';
import { controllerRefTo } from '../template/meta';
import { applySecureDefaults } from '../template/secure-defaults';
import { CREATED_BY_CONTROLLER, LaunchType, type MergePatch, type Sandbox, type SandboxTemplate } from '../template/types';

/** `status.selector` of the pool (and the scale subresource's selector): its members and their Pods. */
export function poolSelector(pool: SandboxWarmPool): string {
  return `${SandboxLabels.WARM_POOL_SANDBOX}=${NameHash.of(pool.metadata.name)}`;
}

/**
 * A new member of `pool`, built from `template`, for a create call. `generateName` lets the API
 * server pick a unique name, so concurrent creates never collide; the controller ownerRef makes the
 * pool delete its members when it goes.
 *
 * Labels: pool membership and template-ref hashes (membership, NetworkPolicy, adoptability), our
 * blueprint hash (staleness, see template/blueprint.ts), the deprecated pod-template hash,
 * `launch-type=warm`, `created-by=controller`. The same pool/template labels are repeated on the
 * podTemplate as upstream does; the Sandbox controller filters them off the Pod and adds back only
 * what the Pod needs. `safe-to-evict: "true"` lets the cluster autoscaler drain nodes holding only
 * unclaimed sandboxes, unless the template says otherwise.
 */
export function buildPoolSandbox(pool: SandboxWarmPool, template: SandboxTemplate, flags: PoolFlags): Sandbox {
  const fingerprint = templateFingerprint(template);
  const poolLabels = {
    [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of(pool.metadata.name),
    [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(template.metadata.name),
    [SandboxLabels.SANDBOX_POD_TEMPLATE_HASH]: podTemplateHash(template),
    [SandboxLabels.SANDBOX_TEMPLATE_HASH]: fingerprint.hash,
  };
  const source = template.spec.podTemplate;
  const annotations = { ...source.metadata?.annotations };
  if (flags.enableWarmPoolEviction && !(SandboxAnnotations.SAFE_TO_EVICT in annotations)) {
    annotations[SandboxAnnotations.SAFE_TO_EVICT] = 'true';
  }
  return {
    apiVersion: apiVersionOf(KINDS.sandbox),
    kind: KINDS.sandbox.kind,
    metadata: {
      // Empty: the API server names the member from generateName.
      name: '',
      generateName: `${pool.metadata.name}-`,
      namespace: pool.metadata.namespace,
      labels: { ...poolLabels, [SandboxLabels.LAUNCH_TYPE]: LaunchType.WARM, [SandboxLabels.CREATED_BY]: CREATED_BY_CONTROLLER },
      annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: template.metadata.name },
      ownerReferences: [controllerRefTo(pool, KINDS.warmPool)],
    },
    spec: {
      podTemplate: {
        metadata: {
          labels: { ...source.metadata?.labels, ...poolLabels },
          ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        },
        spec: applySecureDefaults(source.spec, template),
      },
      ...(template.spec.volumeClaimTemplates ? { volumeClaimTemplates: structuredClone(template.spec.volumeClaimTemplates) } : {}),
      ...(template.spec.service !== undefined ? { service: template.spec.service } : {}),
    },
  };
}

/**
 * Make `pool` the controller of an orphan that carries its label and is not stale: other
 * (non-controller) owners stay. The resourceVersion precondition means a claim that adopted the
 * orphan meanwhile wins and this write fails harmlessly.
 */
export function orphanAdoptionPatch(pool: SandboxWarmPool, orphan: Sandbox): MergePatch {
  const others = (orphan.metadata.ownerReferences ?? []).filter((ref) => ref.controller !== true);
  return {
    metadata: {
      resourceVersion: orphan.metadata.resourceVersion ?? '',
      ownerReferences: [...others, controllerRefTo(pool, KINDS.warmPool)] as unknown[],
      labels: { [SandboxLabels.LAUNCH_TYPE]: LaunchType.WARM },
    },
  };
}

/** Add `launch-type=warm` to a member that lacks it (created by an older controller); conditional like every member write. */
export function launchTypeLabelPatch(member: Sandbox): MergePatch {
  return { metadata: { resourceVersion: member.metadata.resourceVersion ?? '', labels: { [SandboxLabels.LAUNCH_TYPE]: LaunchType.WARM } } };
}
