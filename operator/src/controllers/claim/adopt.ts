/**
 * The Pod metadata a claimed Sandbox gets, warm or cold, and warm adoption as ONE conditional
 * write on the Sandbox.
 *
 * A claim's `additionalPodMetadata` is treated as upstream's claim controller does: validated
 * against the shared rules of src/api/claim-rules.ts, then merged over the template's Pod metadata
 * without overriding it.
 *
 * Upstream spends three writes on an adoption: an Update of the claim recording the chosen Sandbox
 * (`agents.x-k8s.io/sandbox-name`, its "adoption lock"), a patch of the Sandbox, and the claim's
 * status. We drop the claim-side record: the Sandbox's controller ownerReference to the claim's UID
 * *is* the record. It is written atomically with everything else below, guarded by the Sandbox's
 * resourceVersion, so of two claims racing for a member exactly one wins and the other gets 409 and
 * takes the next candidate; a crash after the write leaves a Sandbox that says whose it is, and
 * the next pass reads that back (recoverBinding in plan.ts).
 */
import * as fs from 'node:fs';
import { DEFAULT_ALLOWED_LABEL_DOMAINS, checkClaimPodAnnotation, checkClaimPodLabel } from '#api/claim-rules';
import { ClaimReadyReason } from '#api/conditions';
import { KINDS } from '#api/groups';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { claimedActivity, claimedIdlePolicy } from './idle';
import { fail, ok, type ClaimProblem, type Outcome } from './status';
import { applyMergePatch, controllerRefTo, LaunchType, mapPatch, type MergePatch, type PodMetadata, type Sandbox, type SandboxClaim, type SandboxTemplate } from '../../model';

/** Mounted from the optional ConfigMap `agent-sandbox-config`, as upstream. */
export const ALLOWED_LABEL_DOMAINS_FILE = '/etc/sandbox-config/allowed-label-domains';

/** The allow-list of label domains for additionalPodMetadata (comma or newline separated), or undefined for the default. */
export function readAllowedLabelDomains(file = ALLOWED_LABEL_DOMAINS_FILE): string[] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const domains = text.split(/[,\n]/).map((d) => d.trim()).filter(Boolean);
  return domains.length > 0 ? domains : undefined;
}

/**
 * Every problem with the claim's additional Pod labels and annotations, in one InvalidMetadata
 * problem (upstream reports the first only; a user fixing a claim wants them all), or undefined.
 */
export function validateAdditionalPodMetadata(
  claim: SandboxClaim,
  allowedLabelDomains: readonly string[] = DEFAULT_ALLOWED_LABEL_DOMAINS,
): ClaimProblem | undefined {
  const problems: string[] = [];
  const metadata = claim.spec.additionalPodMetadata ?? {};
  for (const key of Object.keys(metadata.labels ?? {}).sort()) {
    const problem = checkClaimPodLabel(key, metadata.labels![key], allowedLabelDomains);
    if (problem) problems.push(`labels["${key}"]: ${problem}`);
  }
  for (const key of Object.keys(metadata.annotations ?? {}).sort()) {
    const problem = checkClaimPodAnnotation(key);
    if (problem) problems.push(`annotations["${key}"]: ${problem}`);
  }
  if (problems.length === 0) return undefined;
  return { reason: ClaimReadyReason.INVALID_METADATA, message: `spec.additionalPodMetadata is invalid: ${problems.join('; ')}` };
}

function mergeNoOverride(
  kind: string,
  base: Record<string, string>,
  extra: Record<string, string> | undefined,
  problems: string[],
): Record<string, string> {
  const out = { ...base };
  for (const [key, value] of Object.entries(extra ?? {})) {
    if (key in base && base[key] !== value) {
      problems.push(`${kind} "${key}"="${value}" conflicts with the template's value "${base[key]}"`);
    }
    out[key] = value;
  }
  return out;
}

/**
 * The Pod metadata of a claimed Sandbox: `base` (the template's), plus the claim's additional
 * metadata, plus the identity labels the system relies on (claim UID, template-ref hash for the
 * NetworkPolicy, created-by) set last so nothing can override them. A claim may add keys but not
 * change the template's values (upstream's "no overrides" rule; a ReconcilerError, as upstream).
 */
export function claimPodMetadata(base: PodMetadata, claim: SandboxClaim, templateName: string): Outcome<PodMetadata> {
  const problems: string[] = [];
  const extra = claim.spec.additionalPodMetadata;
  const labels = mergeNoOverride('label', base.labels ?? {}, extra?.labels, problems);
  const annotations = mergeNoOverride('annotation', base.annotations ?? {}, extra?.annotations, problems);
  if (problems.length > 0) {
    return fail(ClaimReadyReason.RECONCILER_ERROR, `Error seen: spec.additionalPodMetadata may add keys but not override the template: ${problems.join('; ')}`);
  }
  labels[SandboxLabels.CLAIM_UID] = claim.metadata.uid ?? '';
  labels[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] = NameHash.of(templateName);
  const createdBy = claim.metadata.labels?.[SandboxLabels.CREATED_BY];
  if (createdBy !== undefined) labels[SandboxLabels.CREATED_BY] = createdBy;
  else delete labels[SandboxLabels.CREATED_BY];
  return ok({ labels, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) });
}

/** Labels that mark a Sandbox as an unclaimed pool member; adoption removes them. */
export const POOL_ONLY_LABELS: readonly string[] = [
  SandboxLabels.WARM_POOL_SANDBOX,
  SandboxLabels.SANDBOX_TEMPLATE_HASH,
  SandboxLabels.SANDBOX_POD_TEMPLATE_HASH,
];

export interface AdoptionWrite {
  /** JSON merge patch for the Sandbox (not its status); carries metadata.resourceVersion, so any concurrent change fails it with 409. */
  readonly patch: MergePatch;
  /** The Sandbox as it will be after the patch (the server's response is authoritative). */
  readonly expected: Sandbox;
}

/** The template name a member was built from: the template when known, else the member's own annotation. */
function templateNameOf(sandbox: Sandbox, template: SandboxTemplate | undefined): string | undefined {
  return template?.metadata.name ?? sandbox.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
}

/**
 * The Pod metadata the member had before the pool decorated it: the template's when known (so a
 * label edit on the template since the member was built reaches the claimed Pod), else the
 * member's own minus the pool's labels. Either way `safe-to-evict: "true"` goes, so the autoscaler
 * no longer evicts a Pod someone is using (upstream strips it the same way; a template's "false"
 * stays; a claim may ask for it again through additionalPodMetadata).
 */
function basePodMetadata(sandbox: Sandbox, template: SandboxTemplate | undefined): PodMetadata {
  const source = template?.spec.podTemplate.metadata ?? sandbox.spec.podTemplate.metadata ?? {};
  const labels = { ...source.labels };
  if (!template) for (const key of POOL_ONLY_LABELS) delete labels[key];
  const annotations = { ...source.annotations };
  if (annotations[SandboxAnnotations.SAFE_TO_EVICT] === 'true') delete annotations[SandboxAnnotations.SAFE_TO_EVICT];
  return { labels, annotations };
}

/**
 * The single write that hands pool member `sandbox` to `claim`. It changes exactly:
 *
 * - `metadata.resourceVersion`: the precondition (the version the choice was made on);
 * - `metadata.ownerReferences`: the pool's controller reference is replaced by the claim's
 *   (controller, blockOwnerDeletion); other non-controller references stay;
 * - `metadata.labels`: removes warm-pool-sandbox, sandbox-template-hash and
 *   sandbox-pod-template-hash (the pool stops counting it and the router stops treating its Pod
 *   as unclaimed); sets launch-type=warm and claim-uid=<claim UID>; sets created-by to the claim's
 *   value or removes it; keeps sandbox-template-ref-hash (setting it if missing), which the
 *   NetworkPolicy selects on. Every other label is untouched;
 * - `metadata.annotations`: sets pod-name=<sandbox name> if absent and copies the claim's
 *   trace-context; under an idle policy sets last-activity to `nowMs` (claiming is using); others
 *   untouched;
 * - `spec.idlePolicy`: the claim's, else the template's (claimedIdlePolicy); removed when neither
 *   sets one and the member somehow has one; left alone otherwise;
 * - `spec.podTemplate.metadata`: becomes the template's Pod metadata plus the claim's
 *   additionalPodMetadata plus the identity labels (claim-uid, template-ref hash, created-by);
 *   `spec.podTemplate.spec`, volumes, service and status are untouched.
 *
 * Fails (ReconcilerError) only when additionalPodMetadata conflicts with the template's values;
 * validate the claim's metadata (validateAdditionalPodMetadata) before choosing a candidate.
 */
export function adoptionPatch(sandbox: Sandbox, claim: SandboxClaim, template: SandboxTemplate | undefined, nowMs: number): Outcome<AdoptionWrite> {
  const templateName = templateNameOf(sandbox, template);
  const refHash = sandbox.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] ?? (templateName ? NameHash.of(templateName) : undefined);
  const podMetadata = claimPodMetadata(basePodMetadata(sandbox, template), claim, templateName ?? '');
  if (!podMetadata.ok) return podMetadata;
  const desiredPod = podMetadata.value;
  if (refHash !== undefined) desiredPod.labels![SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] = refHash;
  else delete desiredPod.labels![SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];

  const current = sandbox.metadata.labels ?? {};
  const labels: Record<string, string | null> = {};
  for (const key of POOL_ONLY_LABELS) if (key in current) labels[key] = null;
  labels[SandboxLabels.LAUNCH_TYPE] = LaunchType.WARM;
  labels[SandboxLabels.CLAIM_UID] = claim.metadata.uid ?? '';
  if (refHash !== undefined) labels[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH] = refHash;
  const createdBy = claim.metadata.labels?.[SandboxLabels.CREATED_BY];
  if (createdBy !== undefined) labels[SandboxLabels.CREATED_BY] = createdBy;
  else if (SandboxLabels.CREATED_BY in current) labels[SandboxLabels.CREATED_BY] = null;

  const idlePolicy = claimedIdlePolicy(claim, template);
  const annotations: Record<string, string> = claimedActivity(idlePolicy, nowMs);
  if (!sandbox.metadata.annotations?.[SandboxAnnotations.POD_NAME]) annotations[SandboxAnnotations.POD_NAME] = sandbox.metadata.name;
  const trace = claim.metadata.annotations?.[SandboxAnnotations.TRACE_CONTEXT];
  if (trace !== undefined) annotations[SandboxAnnotations.TRACE_CONTEXT] = trace;

  const others = (sandbox.metadata.ownerReferences ?? []).filter((ref) => ref.controller !== true);
  const currentPod = sandbox.spec.podTemplate.metadata ?? {};
  const podLabels = mapPatch(currentPod.labels, desiredPod.labels ?? {});
  const podAnnotations = mapPatch(currentPod.annotations, desiredPod.annotations ?? {});
  const podPatch: MergePatch = {
    ...(podLabels ? { labels: podLabels } : {}),
    ...(podAnnotations ? { annotations: podAnnotations } : {}),
  };
  const spec: MergePatch = {
    ...(Object.keys(podPatch).length > 0 ? { podTemplate: { metadata: podPatch } } : {}),
    ...(idlePolicy ? { idlePolicy: { ...idlePolicy } } : sandbox.spec.idlePolicy ? { idlePolicy: null } : {}),
  };

  const patch: MergePatch = {
    metadata: {
      resourceVersion: sandbox.metadata.resourceVersion ?? '',
      ownerReferences: [...others, controllerRefTo(claim, KINDS.claim)] as unknown[],
      labels,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    ...(Object.keys(spec).length > 0 ? { spec } : {}),
  };
  return ok({ patch, expected: applyMergePatch(sandbox, patch) });
}
