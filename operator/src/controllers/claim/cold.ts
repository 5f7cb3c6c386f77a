/**
 * The cold path (upstream's createSandbox in extensions/controllers/sandboxclaim_controller.go): a
 * Sandbox built from the pool's template and named after the claim, with the claim's env and
 * volume claim templates merged in as far as the template's policies allow. Each refusal carries
 * upstream's reason.
 */
import { ClaimReadyReason } from '#api/conditions';
import { EnvVarsInjectionPolicy, VolumeClaimTemplatesPolicy } from '#api/enums';
import { KINDS, apiVersionOf } from '#api/groups';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { checkDns1035Label } from '#api/validation';
import { claimPodMetadata, validateAdditionalPodMetadata } from './adopt';
import { claimedActivity, claimedIdlePolicy } from './idle';
import { fail, ok, type Outcome } from './status';
import { type ClaimEnvVar, type Container, controllerRefTo, LaunchType, type PodSpec, type Sandbox, type SandboxClaim, type SandboxTemplate, type SandboxWarmPool, type VolumeClaimTemplate } from '../../model';
import { applySecureDefaults } from '../../model/secure-defaults';

const reconcilerError = <T>(message: string) => fail<T>(ClaimReadyReason.RECONCILER_ERROR, `Error seen: ${message}`);

/**
 * `podSpec` with the claim's env vars injected under the template's policy; the input is not modified.
 *
 * - Disallowed (or anything but Allowed/Overrides): any env is refused (EnvVarsInjectionRejected).
 * - A `containerName` may name a regular or an init container; without one, the first regular
 *   container. An unknown name is a ReconcilerError.
 * - Allowed: only new names. A container using envFrom is refused (EnvVarsInjectionRejected),
 *   because whether a name is new cannot be known from the spec; an existing name is a
 *   ReconcilerError.
 * - Overrides: an existing name is replaced in place by the literal value (any valueFrom is
 *   dropped); new names are appended.
 * Entries apply in order, so a repeated name is refused under Allowed and the last wins under Overrides.
 */
export function injectEnv(podSpec: PodSpec, env: readonly ClaimEnvVar[], template: SandboxTemplate): Outcome<PodSpec> {
  if (env.length === 0) return ok(podSpec);
  const policy = template.spec.envVarsInjectionPolicy;
  if (policy !== EnvVarsInjectionPolicy.ALLOWED && policy !== EnvVarsInjectionPolicy.OVERRIDES) {
    return fail(ClaimReadyReason.ENV_VARS_INJECTION_REJECTED,
      `SandboxTemplate "${template.metadata.name}" has envVarsInjectionPolicy ${policy || EnvVarsInjectionPolicy.DISALLOWED}, so the claim may not set spec.env; `
      + 'remove spec.env, or ask the template owner for Allowed or Overrides');
  }
  const spec: PodSpec = structuredClone(podSpec);
  for (const entry of env) {
    let target: Container | undefined;
    if (entry.containerName) {
      target = spec.containers.find((c) => c.name === entry.containerName) ?? spec.initContainers?.find((c) => c.name === entry.containerName);
      if (!target) {
        const known = [...spec.containers, ...(spec.initContainers ?? [])].map((c) => `"${c.name}"`).join(', ');
        return reconcilerError(`env var "${entry.name}" targets container "${entry.containerName}", which the template does not have (it has ${known || 'none'})`);
      }
    } else {
      target = spec.containers[0];
      if (!target) return reconcilerError(`env var "${entry.name}" has no containerName and the template has no containers`);
    }
    const existing = target.env?.findIndex((e) => e.name === entry.name) ?? -1;
    if (policy === EnvVarsInjectionPolicy.ALLOWED) {
      if ((target.envFrom?.length ?? 0) > 0) {
        return fail(ClaimReadyReason.ENV_VARS_INJECTION_REJECTED,
          `container "${target.name}" uses envFrom, so under envVarsInjectionPolicy Allowed the claim cannot add env vars to it (they might override a variable from envFrom); the template needs Overrides`);
      }
      if (existing >= 0) {
        return reconcilerError(`env var "${entry.name}" is already defined in container "${target.name}"; envVarsInjectionPolicy Allowed only adds new variables (Overrides replaces them)`);
      }
    }
    const value = { name: entry.name, value: entry.value };
    if (existing >= 0) target.env![existing] = value;
    else target.env = [...(target.env ?? []), value];
  }
  return ok(spec);
}

function checkVctNames(side: string, vcts: readonly VolumeClaimTemplate[]): string | undefined {
  const seen = new Set<string>();
  for (const [i, vct] of vcts.entries()) {
    const name = vct.metadata?.name ?? '';
    if (name === '') return `${side} volumeClaimTemplates[${i}] has no metadata.name`;
    if (seen.has(name)) return `${side} volumeClaimTemplates has "${name}" twice`;
    seen.add(name);
  }
  return undefined;
}

/**
 * The Sandbox's volume claim templates: the template's, merged with the claim's under
 * `volumeClaimTemplatesPolicy`. Names must be non-empty and unique on both sides. Disallowed (the
 * default) refuses any claim VCT; Allowed appends new names only; Overrides replaces same-named
 * entries in place and appends the rest. Errors are VolumeClaimTemplatesError.
 */
export function mergeVolumeClaimTemplates(
  template: SandboxTemplate,
  claimVcts: readonly VolumeClaimTemplate[] | undefined,
): Outcome<VolumeClaimTemplate[] | undefined> {
  const error = (message: string) => fail<VolumeClaimTemplate[] | undefined>(ClaimReadyReason.VOLUME_CLAIM_TEMPLATES_ERROR, message);
  const base = template.spec.volumeClaimTemplates;
  const baseProblem = checkVctNames('the template\'s', base ?? []);
  if (baseProblem) return error(baseProblem);
  if (!claimVcts || claimVcts.length === 0) return ok(base ? structuredClone(base) : undefined);
  const policy = template.spec.volumeClaimTemplatesPolicy;
  if (policy !== VolumeClaimTemplatesPolicy.ALLOWED && policy !== VolumeClaimTemplatesPolicy.OVERRIDES) {
    return error(`SandboxTemplate "${template.metadata.name}" has volumeClaimTemplatesPolicy ${policy || VolumeClaimTemplatesPolicy.DISALLOWED}, so the claim may not set spec.volumeClaimTemplates; `
      + 'remove them, or ask the template owner for Allowed or Overrides');
  }
  const claimProblem = checkVctNames('the claim\'s', claimVcts);
  if (claimProblem) return error(claimProblem);
  const merged = structuredClone(base ?? []);
  for (const vct of claimVcts) {
    const at = merged.findIndex((v) => v.metadata?.name === vct.metadata?.name);
    if (at >= 0 && policy === VolumeClaimTemplatesPolicy.ALLOWED) {
      return error(`the claim's volumeClaimTemplate "${vct.metadata?.name}" has the name of one of the template's; volumeClaimTemplatesPolicy Allowed only adds new ones (Overrides replaces them)`);
    }
    if (at >= 0) merged[at] = structuredClone(vct);
    else merged.push(structuredClone(vct));
  }
  return ok(merged);
}

export interface ColdOptions {
  /** Label domains a claim's additionalPodMetadata may use (the operator's configured allow-list). */
  readonly allowedLabelDomains?: readonly string[];
}

/**
 * The Sandbox a claim creates when it starts cold: named after the claim, controlled by it, built
 * from the pool's template. Checks run in upstream's order, so the first problem is the one
 * upstream would report: additional metadata (InvalidMetadata), volume claim templates
 * (VolumeClaimTemplatesError), metadata conflicts with the template (ReconcilerError), env
 * (EnvVarsInjectionRejected / ReconcilerError).
 *
 * One check of ours: a template with `service: true` needs the Sandbox name to be a Service name,
 * which our CRD enforces at admission; saying so here beats retrying a create that cannot succeed.
 * And the idle policy (ours, idle.ts): the claim's or the template's, with last-activity `nowMs`.
 */
export function coldSandbox(
  claim: SandboxClaim, pool: SandboxWarmPool, template: SandboxTemplate, nowMs: number, options: ColdOptions = {},
): Outcome<Sandbox> {
  const templateName = template.metadata.name;
  if (pool.spec.sandboxTemplateRef.name !== templateName) {
    return reconcilerError(`SandboxWarmPool "${pool.metadata.name}" uses template "${pool.spec.sandboxTemplateRef.name}", not "${templateName}"`);
  }
  const invalid = validateAdditionalPodMetadata(claim, options.allowedLabelDomains);
  if (invalid) return { ok: false, problem: invalid };
  const vcts = mergeVolumeClaimTemplates(template, claim.spec.volumeClaimTemplates);
  if (!vcts.ok) return vcts;
  const podMetadata = claimPodMetadata(template.spec.podTemplate.metadata ?? {}, claim, templateName);
  if (!podMetadata.ok) return podMetadata;
  const podSpec = injectEnv(template.spec.podTemplate.spec, claim.spec.env ?? [], template);
  if (!podSpec.ok) return podSpec;
  if (template.spec.service === true) {
    const problem = checkDns1035Label(claim.metadata.name);
    if (problem) return reconcilerError(`SandboxTemplate "${templateName}" asks for a Service, which takes the Sandbox's name, the claim's: ${problem}; rename the claim`);
  }

  const labels: Record<string, string> = {
    [SandboxLabels.CLAIM_UID]: claim.metadata.uid ?? '',
    [SandboxLabels.LAUNCH_TYPE]: LaunchType.COLD,
    [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(templateName),
  };
  const createdBy = claim.metadata.labels?.[SandboxLabels.CREATED_BY];
  if (createdBy !== undefined) labels[SandboxLabels.CREATED_BY] = createdBy;
  const idlePolicy = claimedIdlePolicy(claim, template);
  const annotations: Record<string, string> = { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: templateName, ...claimedActivity(idlePolicy, nowMs) };
  const trace = claim.metadata.annotations?.[SandboxAnnotations.TRACE_CONTEXT];
  if (trace !== undefined) annotations[SandboxAnnotations.TRACE_CONTEXT] = trace;

  return ok({
    apiVersion: apiVersionOf(KINDS.sandbox),
    kind: KINDS.sandbox.kind,
    metadata: {
      name: claim.metadata.name,
      namespace: claim.metadata.namespace,
      labels,
      annotations,
      ownerReferences: [controllerRefTo(claim, KINDS.claim)],
    },
    spec: {
      podTemplate: { metadata: podMetadata.value, spec: applySecureDefaults(podSpec.value, template) },
      ...(vcts.value ? { volumeClaimTemplates: vcts.value } : {}),
      ...(template.spec.service !== undefined ? { service: template.spec.service } : {}),
      ...(idlePolicy ? { idlePolicy } : {}),
    },
  });
}
