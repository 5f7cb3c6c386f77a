import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ErrorList } from '../api/validation';
import { SandboxCrds } from '../crds';
import { _dropClusterScopedNamespaces } from '../object-ref';
import { orderFirst } from './manifest';
import { OperatorDeploymentOptions, operatorDeployment, resolveOperator } from './operator-deployment';
import { extensionsClusterRole } from './rbac';

/**
 * Only the extension layer, applied on top of a core-only install (upstream's `extensions.yaml`):
 * the SandboxTemplate, SandboxWarmPool and SandboxClaim CRDs, their ClusterRole and binding, and the
 * operator Deployment again, now with `--extensions=true`. Give it the same options as the core install.
 */
export class AgentSandboxExtensions extends Construct {
  /** The extension CRDs. */
  public readonly crds: SandboxCrds;
  /** The operator Deployment with extensions enabled. */
  public readonly deployment: ApiObject;

  public constructor(scope: Construct, id: string, props: OperatorDeploymentOptions = {}) {
    super(scope, id);
    const errors = new ErrorList();
    const operator = resolveOperator(errors, props, true);
    errors.throwIfAny(`AgentSandboxExtensions ${this.node.path}`);
    this.crds = new SandboxCrds(this, 'Crds', { core: false, extensions: true });
    extensionsClusterRole(this, operator.namespace);
    this.deployment = operatorDeployment(this, operator);
    orderFirst(this, this.crds.apiObjects);
    _dropClusterScopedNamespaces(this);
  }
}
