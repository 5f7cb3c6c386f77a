/**
 * The objects a SandboxWarmPool asks for: its members, built from the template, and the small
 * patches that bring an orphan or an unlabeled member into the pool.
 */
import { KINDS, apiVersionOf } from '#api/groups';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { type PoolFlags } from './types';
import { controllerRefTo, CREATED_BY_CONTROLLER, LaunchType, type MergePatch, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../model';
import { podTemplateHash, templateFingerprint } from '../../model/blueprint';
import { applySecureDefaults } from '../../model/secure-defaults';

/** `status.selector` of the pool (and the scale subresource's selector): its members and their Pods. */
export function poolSelector(pool: SandboxWarmPool): string {
  return `${SandboxLabels.WARM_POOL_SANDBOX}=${NameHash.of(pool.metadata.name)}`;
}

/** The alphabet and length of the API server's generateName suffixes (k8s.io/apimachinery rand). */
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const SUFFIX_LENGTH = 5;
/** generateName keeps at most 58 characters of the prefix, so a name never exceeds 63. */
const MAX_PREFIX_LENGTH = 63 - SUFFIX_LENGTH;

/**
 * A member name as the API server's generateName would pick it (`<pool>-` cut to 58 characters,
 * then 5 random characters), chosen here instead so the member can be created with its
 * `pod-name` annotation already set: the Sandbox controller then has no annotation to write, one
 * write saved per member. A collision is a 409 AlreadyExists, and the caller picks again.
 */
export function memberName(pool: SandboxWarmPool, random: () => number = Math.random): string {
  let suffix = '';
  for (let i = 0; i < SUFFIX_LENGTH; i++) suffix += SUFFIX_ALPHABET[Math.floor(random() * SUFFIX_ALPHABET.length)];
  return `${pool.metadata.name}-`.slice(0, MAX_PREFIX_LENGTH) + suffix;
}

/** `member` under `name`, with the `pod-name` annotation naming the Pod the Sandbox controller will create. */
export function withMemberName(member: Sandbox, name: string): Sandbox {
  return {
    ...member,
    metadata: { ...member.metadata, name, annotations: { ...member.metadata.annotations, [SandboxAnnotations.POD_NAME]: name } },
  };
}

/**
 * A new member of `pool`, built from `template`, for a create call, still without a name (see
 * {@link memberName} and {@link withMemberName}); the controller ownerRef makes the pool delete its
 * members when it goes.
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
      // Empty until withMemberName names it.
      name: '',
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
