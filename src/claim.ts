import { ApiObject, ApiObjectMetadata, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { checkClaimPodAnnotation, checkClaimPodLabel } from './api/claim-rules';
import { ClaimShutdownPolicy, EnvVarsInjectionPolicy, VolumeClaimTemplatesPolicy } from './api/enums';
import { KINDS } from './api/groups';
import { propName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain, checkRfc3339, checkStringMap } from './api/validation';
import { dropUndefined } from './container';
import { _checkDuration, _checkSpecSchema, _customResource } from './custom-resource';
import { IdlePolicy, _checkIdlePolicy, _idlePolicyToKube } from './idle-policy';
import { VolumeClaimTemplate, _validateVolumeClaimTemplate, volumeClaimTemplateToKube } from './volume';
import { ISandboxWarmPool } from './warm-pool';

/** An environment variable a claim injects into its Sandbox. */
export interface ClaimEnvVar {
  /** Variable name. */
  readonly name: string;
  /** Variable value. */
  readonly value: string;
  /** Target container (regular or init). @default - the template's first container */
  readonly containerName?: string;
}

/** When a claim expires and what happens then. */
export interface ClaimLifecycle {
  /** Absolute expiry time, RFC 3339. @default - none */
  readonly shutdownTime?: string;
  /** Expire this long after the Sandbox finished (whole seconds). @default - none */
  readonly ttlAfterFinished?: Duration;
  /** What happens at expiry. @default ClaimShutdownPolicy.RETAIN */
  readonly shutdownPolicy?: ClaimShutdownPolicy;
}

/** Props of {@link SandboxClaim}. */
export interface SandboxClaimProps {
  /** Metadata of the claim. @default - a generated name */
  readonly metadata?: ApiObjectMetadata;
  /** The pool to draw from (same namespace). */
  readonly warmPool: ISandboxWarmPool;
  /** Expiry. @default - the claim never expires */
  readonly lifecycle?: ClaimLifecycle;
  /** Env vars to inject; forces a cold start and needs the template's permission. @default - none */
  readonly env?: ClaimEnvVar[];
  /** Extra PVC templates; forces a cold start and needs the template's permission. @default - none */
  readonly volumeClaimTemplates?: VolumeClaimTemplate[];
  /** Extra Pod labels, in an allowed domain (default `sandbox.users.io`). @default - none */
  readonly podLabels?: { [key: string]: string };
  /** Extra Pod annotations (not in kubernetes.io, k8s.io or agents.x-k8s.io). @default - none */
  readonly podAnnotations?: { [key: string]: string };
  /** Label domains the operator allows on claim Pod labels (its allow-list). @default ['sandbox.users.io'] */
  readonly allowedPodLabelDomains?: string[];
  /**
   * The idle policy of the claimed Sandbox, instead of its template's (a whole policy, not merged
   * field by field). The idle clock starts when the claim takes the Sandbox.
   * @default - the template's idlePolicy, if it has one
   */
  readonly idlePolicy?: IdlePolicy;
}

/**
 * A SandboxClaim (extensions.agents.x-k8s.io/v1beta1): an agent's request for a Sandbox, served
 * from a warm pool in milliseconds, or cold from the pool's template when the claim injects env
 * or volumes. Checked at synth against the template's injection policies when the chain
 * claim → pool → template is known.
 */
export class SandboxClaim extends Construct {
  /** The underlying ApiObject (escape hatch). */
  public readonly apiObject: ApiObject;
  /** The claim name. */
  public readonly name: string;
  private readonly props: SandboxClaimProps;

  public constructor(scope: Construct, id: string, props: SandboxClaimProps) {
    super(scope, id);
    this.props = props;
    this.apiObject = _customResource(this, KINDS.claim, props.metadata, () => this._toKube());
    this.name = this.apiObject.name;
    if (props.warmPool instanceof Construct) this.apiObject.addDependency(props.warmPool);
    this.node.addValidation({ validate: () => this.validate() });
  }

  private validate(): string[] {
    const errors = new ErrorList();
    const { env = [], volumeClaimTemplates: vcts = [], lifecycle, warmPool } = this.props;
    const template = warmPool.template;
    errors.prop('metadata.name', checkDns1123Subdomain(this.name));
    errors.prop('warmPool', checkDns1123Subdomain(warmPool?.name)?.replace(/^/, 'the pool name '));
    for (const list of ['env', 'volumeClaimTemplates'] as const) {
      if (!Array.isArray(this.props[list] ?? [])) errors.prop(list, 'must be a list; give a list (or leave it out)');
    }

    if (lifecycle?.shutdownTime !== undefined) errors.prop('lifecycle.shutdownTime', checkRfc3339(lifecycle.shutdownTime));
    _checkDuration(errors, 'lifecycle.ttlAfterFinished', lifecycle?.ttlAfterFinished, true);
    _checkIdlePolicy(errors, 'idlePolicy', this.props.idlePolicy);

    const policy = template?.envVarsInjectionPolicy;
    if (env.length > 0 && policy === EnvVarsInjectionPolicy.DISALLOWED) {
      errors.prop('env', `template "${template!.name}" has spec.envVarsInjectionPolicy Disallowed, which refuses env from claims; set the template's ${propName('envVarsInjectionPolicy')} to Allowed (or Overrides), or give the claim no ${propName('env')}`);
    }
    (Array.isArray(env) ? env : []).forEach((v, i) => {
      if (typeof v?.name !== 'string' || !/^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(v.name)) errors.prop(`env[${i}].name`, `"${v.name}" is not a valid variable name`);
      const names = template?.knownContainerNames;
      if (v.containerName && names && !names.includes(v.containerName)) {
        errors.prop(`env[${i}].containerName`, `template "${template!.name}" has no container "${v.containerName}"; use one of ${names.join(', ')}`);
      }
    });

    if (vcts.length > 0 && template?.volumeClaimTemplatesPolicy === VolumeClaimTemplatesPolicy.DISALLOWED) {
      errors.prop('volumeClaimTemplates', `template "${template.name}" has ${propName('volumeClaimTemplatesPolicy')} Disallowed; set it to ALLOWED or OVERRIDES on the template, or drop ${propName('volumeClaimTemplates')}`);
    }
    (Array.isArray(vcts) ? vcts : []).forEach((t, i) => _validateVolumeClaimTemplate(errors, `volumeClaimTemplates[${i}]`, t));

    for (const map of ['podLabels', 'podAnnotations'] as const) errors.prop(map, checkStringMap(this.props[map]));
    for (const [key, value] of Object.entries(this.props.podLabels ?? {})) {
      errors.prop(`podLabels["${key}"]`, checkClaimPodLabel(key, value, this.props.allowedPodLabelDomains));
    }
    for (const key of Object.keys(this.props.podAnnotations ?? {})) {
      errors.prop(`podAnnotations["${key}"]`, checkClaimPodAnnotation(key));
    }
    _checkSpecSchema(errors, KINDS.claim, () => this._toKube());
    return errors.all;
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    const { env, volumeClaimTemplates, lifecycle, podLabels, podAnnotations, idlePolicy } = this.props;
    return dropUndefined({
      warmPoolRef: { name: this.props.warmPool.name },
      lifecycle: lifecycle ? dropUndefined({
        shutdownTime: lifecycle.shutdownTime,
        ttlSecondsAfterFinished: lifecycle.ttlAfterFinished?.toSeconds(),
        shutdownPolicy: lifecycle.shutdownPolicy,
      }) : undefined,
      additionalPodMetadata: podLabels || podAnnotations ? dropUndefined({ labels: podLabels, annotations: podAnnotations }) : undefined,
      env: env && env.length > 0 ? env.map((v) => dropUndefined({ name: v.name, value: v.value, containerName: v.containerName })) : undefined,
      volumeClaimTemplates: volumeClaimTemplates && volumeClaimTemplates.length > 0
        ? volumeClaimTemplates.map(volumeClaimTemplateToKube) : undefined,
      idlePolicy: _idlePolicyToKube(idlePolicy),
    });
  }
}
