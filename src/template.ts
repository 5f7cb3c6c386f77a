import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { EnvVarsInjectionPolicy, NetworkPolicyManagement, VolumeClaimTemplatesPolicy } from './api/enums';
import { KINDS } from './api/groups';
import { HardeningDefault, SECURE_DEFAULTS_OPT_OUT_ANNOTATION, parseOptOuts } from './api/secure-defaults';
import { propName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain } from './api/validation';
import { PodSecurityOptions, SandboxBlueprint, SandboxBlueprintProps } from './blueprint';
import { dropUndefined } from './container';
import { _checkSpecSchema, _customResource } from './custom-resource';
import { IdlePolicy, _checkIdlePolicy, _idlePolicyToKube } from './idle-policy';
import { SandboxNetworkPolicy, SandboxNetworkPolicyOptions } from './network-policy';
import { _renderTemplateNetwork } from './network-policy/template-network';
import { SandboxRuntimeOptions, _checkRuntime, _injectRuntime } from './sandbox-runtime';

/** A SandboxTemplate, defined here or imported by name. */
export interface ISandboxTemplate {
  /** The template name. */
  readonly name: string;
  /** The claim env policy, when known (templates imported by name don't know it). */
  readonly envVarsInjectionPolicy?: EnvVarsInjectionPolicy;
  /** The claim volume claim template policy, when known. */
  readonly volumeClaimTemplatesPolicy?: VolumeClaimTemplatesPolicy;
  /** Names of all containers (regular, then init) when known, for checking claim env targets. */
  readonly knownContainerNames?: string[];
}

/** Props of {@link SandboxTemplate}. */
export interface SandboxTemplateProps extends SandboxBlueprintProps {
  /**
   * Network isolation of the template's Sandboxes: who owns the NetworkPolicy, its rules and DNS.
   * @default - Managed: the operator applies the secure default policy
   */
  readonly network?: SandboxNetworkPolicyOptions;
  /** Whether claims may inject environment variables. @default EnvVarsInjectionPolicy.DISALLOWED */
  readonly envVarsInjectionPolicy?: EnvVarsInjectionPolicy;
  /** Whether claims may add volume claim templates. @default VolumeClaimTemplatesPolicy.DISALLOWED */
  readonly volumeClaimTemplatesPolicy?: VolumeClaimTemplatesPolicy;
  /**
   * Run the agent-sandbox runtime (an API for agents: commands, files) in one of the containers,
   * injected into its image by an init container; see {@link SandboxRuntimeOptions} for what it
   * adds and which images it works with. Pass an empty SandboxRuntimeOptions for the defaults.
   * @default - no runtime: the containers run as given
   */
  readonly runtime?: SandboxRuntimeOptions;
  /**
   * The idle policy of every claimed Sandbox made from this template, unless its claim sets its own
   * (`SandboxClaimProps.idlePolicy`). Unclaimed warm-pool members are never idle-suspended: the
   * clock starts when a claim takes one.
   * @default - claimed Sandboxes are never suspended for idleness (unless their claim says so)
   */
  readonly idlePolicy?: IdlePolicy;
}

/**
 * A SandboxTemplate (extensions.agents.x-k8s.io/v1beta1): the blueprint that warm pools and
 * claims build Sandboxes from, with secure defaults (no service-account token, non-root, ALL
 * capabilities dropped, seccomp RuntimeDefault) and a NetworkPolicy owned by either the operator
 * (`Managed`, the default) or Git (`Unmanaged`: this construct emits the policy), never both.
 */
export class SandboxTemplate extends SandboxBlueprint implements ISandboxTemplate {
  /** A template that exists in the cluster already. */
  public static fromName(name: string): ISandboxTemplate {
    return { name };
  }

  /** The underlying ApiObject (escape hatch). */
  public readonly apiObject: ApiObject;
  public readonly name: string;
  public readonly envVarsInjectionPolicy?: EnvVarsInjectionPolicy;
  public readonly volumeClaimTemplatesPolicy?: VolumeClaimTemplatesPolicy;
  /** Who owns the template's NetworkPolicy. */
  public readonly networkPolicyManagement: NetworkPolicyManagement;
  /** The NetworkPolicy this construct emits when Git owns it (`Unmanaged`). */
  public readonly networkPolicy?: SandboxNetworkPolicy;
  private readonly networkSpecField?: { ingress: object[]; egress: object[] };
  private readonly runtime?: SandboxRuntimeOptions;
  private readonly idlePolicy?: IdlePolicy;

  public constructor(scope: Construct, id: string, props: SandboxTemplateProps = {}) {
    super(scope, id, props);
    this.envVarsInjectionPolicy = props.envVarsInjectionPolicy ?? EnvVarsInjectionPolicy.DISALLOWED;
    this.volumeClaimTemplatesPolicy = props.volumeClaimTemplatesPolicy ?? VolumeClaimTemplatesPolicy.DISALLOWED;
    this.runtime = props.runtime;
    this.idlePolicy = props.idlePolicy;
    this.apiObject = _customResource(this, KINDS.template, props.metadata, () => this._toKube());
    this.name = this.apiObject.name;
    // The operator fills in each hardening default a template leaves unset, unless the template
    // opts out by annotation: a default switched off here must say so, or it comes back.
    const optOuts = hardeningOptOuts(props.security);
    if (optOuts.length > 0) {
      const given = parseOptOuts(props.metadata?.annotations?.[SECURE_DEFAULTS_OPT_OUT_ANNOTATION]);
      this.apiObject.metadata.addAnnotation(SECURE_DEFAULTS_OPT_OUT_ANNOTATION, [...new Set([...given, ...optOuts])].join(','));
    }

    // The Git-owned NetworkPolicy is named after the template: a bad name would be reported as the
    // policy's, so it fails here, naming the template's field.
    const nameProblem = checkDns1123Subdomain(this.name);
    if (nameProblem !== undefined && props.network?.management !== undefined && props.network.management !== NetworkPolicyManagement.MANAGED) {
      throw new Error(`SandboxTemplate ${this.node.path}: invalid props:\n  - ${propName('metadata.name')}: ${nameProblem}`);
    }
    const network = _renderTemplateNetwork(props.network, this.name);
    this.networkPolicyManagement = network.management;
    this.networkSpecField = network.specField;
    if (network.gitOwnedPolicySpec) {
      // Same namespace as the template, wherever that came from (chart default or metadata).
      const namespace = props.metadata?.namespace;
      this.networkPolicy = new SandboxNetworkPolicy(this, 'NetworkPolicy', {
        metadata: namespace ? { namespace } : undefined,
        templateName: this.name,
        spec: network.gitOwnedPolicySpec,
      });
    }
    this.node.addValidation({ validate: () => this.validate() });
  }

  /** Names of all containers, regular then init, as claims may target them with env. */
  public get knownContainerNames(): string[] | undefined {
    return [...this.containerNames, ...this.initContainerNames];
  }

  private validate(): string[] {
    const errors = new ErrorList();
    errors.prop('metadata.name', checkDns1123Subdomain(this.name));
    this._validateBlueprint(errors);
    if (this.runtime) {
      const blueprint = this._blueprintToKube() as { podTemplate: { spec: object }; volumeClaimTemplates?: Array<{ metadata: { name: string } }> };
      _checkRuntime(errors, this.runtime, blueprint.podTemplate.spec, (blueprint.volumeClaimTemplates ?? []).map((t) => t.metadata.name));
    }
    _checkIdlePolicy(errors, 'idlePolicy', this.idlePolicy);
    _checkSpecSchema(errors, KINDS.template, () => this._toKube());
    return errors.all;
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    const blueprint = this._blueprintToKube() as { podTemplate: { metadata: object; spec: object } };
    if (this.runtime) blueprint.podTemplate = { ...blueprint.podTemplate, spec: _injectRuntime(this.runtime, blueprint.podTemplate.spec, this) };
    return dropUndefined({
      ...blueprint,
      networkPolicy: this.networkSpecField,
      networkPolicyManagement: this.networkPolicyManagement,
      envVarsInjectionPolicy: this.envVarsInjectionPolicy,
      volumeClaimTemplatesPolicy: this.volumeClaimTemplatesPolicy,
      idlePolicy: _idlePolicyToKube(this.idlePolicy),
    });
  }
}

/** The operator's hardening defaults that `security` switches off, as the opt-out annotation names them. */
function hardeningOptOuts(security: PodSecurityOptions | undefined): string[] {
  return [
    ...(security?.runAsNonRoot === false ? [HardeningDefault.RUN_AS_NON_ROOT] : []),
    ...(security?.seccompRuntimeDefault === false ? [HardeningDefault.SECCOMP_PROFILE] : []),
    ...(security?.hardenContainers === false ? [HardeningDefault.ALLOW_PRIVILEGE_ESCALATION, HardeningDefault.DROP_CAPABILITIES] : []),
  ];
}
