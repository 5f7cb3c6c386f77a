/**
 * A claim's `additionalPodMetadata`, as upstream's claim controller treats it: validated against
 * the shared rules of src/api/claim-rules.ts, then merged over the template's Pod metadata without
 * overriding it.
 */
import { fail, ok, type ClaimProblem, type Outcome } from './types';
import { DEFAULT_ALLOWED_LABEL_DOMAINS, checkClaimPodAnnotation, checkClaimPodLabel } from '../../../../src/api/claim-rules';
import { ClaimReadyReason } from '../../../../src/api/conditions';
import { SandboxLabels } from '../../../../src/api/labels';
import { NameHash } from '../../../../src/api/name-hash';
import { type PodMetadata, type SandboxClaim } from '../../model';

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
