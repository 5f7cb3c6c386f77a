import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { OperatingMode, SandboxShutdownPolicy } from './api/enums';
import { KINDS } from './api/groups';
import { propName } from './api/spelling';
import { ErrorList, checkDns1035Label, checkDns1123Subdomain, checkRfc3339 } from './api/validation';
import { SandboxBlueprint, SandboxBlueprintProps } from './blueprint';
import { dropUndefined } from './container';
import { _checkSpecSchema, _customResource } from './custom-resource';
import { IdlePolicy, _checkIdlePolicy, _idlePolicyToKube } from './idle-policy';

/** Props of {@link Sandbox}. */
export interface SandboxProps extends SandboxBlueprintProps {
  /** Running keeps the Pod; Suspended deletes it and keeps PVCs and Service. @default OperatingMode.RUNNING */
  readonly operatingMode?: OperatingMode;
  /** When the Sandbox expires, as RFC 3339 (`2026-12-01T18:00:00Z`). @default - never */
  readonly shutdownTime?: string;
  /** What happens at `shutdownTime`. @default SandboxShutdownPolicy.RETAIN */
  readonly shutdownPolicy?: SandboxShutdownPolicy;
  /**
   * Suspend the Sandbox after a stretch without use, and (by default) resume it on the next request
   * through the router. Resuming on request needs the router (`AgentSandboxSystem` `router`).
   *
   * The operator suspends by setting `spec.operatingMode` to Suspended, so leave `operatingMode`
   * unset here: re-applying a manifest that says Running (kubectl apply, a GitOps sync) would resume
   * the Sandbox.
   * @default - never suspended for idleness
   */
  readonly idlePolicy?: IdlePolicy;
}

/**
 * A Sandbox (agents.x-k8s.io/v1beta1): one isolated, stateful Pod with a stable name, optional
 * headless Service, per-Sandbox PVCs, suspend/resume and scheduled shutdown.
 *
 * Most platforms create Sandboxes through {@link SandboxClaim}s against a {@link SandboxWarmPool};
 * a bare Sandbox suits long-lived dev environments and notebooks.
 */
export class Sandbox extends SandboxBlueprint {
  /** The underlying ApiObject; `ApiObject.of(sandbox)` finds it too (escape hatch). */
  public readonly apiObject: ApiObject;
  /** The Sandbox name (also the Pod and Service name). */
  public readonly name: string;
  private readonly props: SandboxProps;

  public constructor(scope: Construct, id: string, props: SandboxProps = {}) {
    super(scope, id, props);
    this.props = props;
    this.apiObject = _customResource(this, KINDS.sandbox, props.metadata, () => this._toKube());
    this.name = this.apiObject.name;
    this.node.addValidation({ validate: () => this.validate() });
  }

  private validate(): string[] {
    const errors = new ErrorList();
    errors.prop('metadata.name', checkDns1123Subdomain(this.name));
    this._validateBlueprint(errors);
    if (this.props.shutdownTime !== undefined) errors.prop('shutdownTime', checkRfc3339(this.props.shutdownTime));
    _checkIdlePolicy(errors, 'idlePolicy', this.props.idlePolicy);
    if (this.service === true && checkDns1123Subdomain(this.name) === undefined) {
      const problem = checkDns1035Label(this.name);
      if (problem) {
        errors.prop('metadata.name', `${problem}; the headless Service takes the Sandbox name, so shorten the name or set ${propName('service')} to false`);
      }
    }
    _checkSpecSchema(errors, KINDS.sandbox, () => this._toKube());
    return errors.all;
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    return dropUndefined({
      ...this._blueprintToKube(),
      operatingMode: this.props.operatingMode,
      shutdownTime: this.props.shutdownTime,
      shutdownPolicy: this.props.shutdownPolicy,
      idlePolicy: _idlePolicyToKube(this.props.idlePolicy),
    });
  }
}
