import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ErrorList } from '../api/validation';
import { SandboxCrds } from '../crds';
import { _dropClusterScopedNamespaces } from '../object-ref';
import { orderFirst } from './manifest';
import { OperatorDeploymentOptions, operatorDeployment, resolveOperator } from './operator-deployment';
import { recordOperatorImage } from './operator-image';
import { extensionsClusterRole } from './rbac';
import { _guardChart } from '../chart-guards';

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
  /** The operator image the layer runs (see `AgentSandboxSystem.image`); a SandboxTemplate's `runtime` in the same App follows it. */
  public readonly image: string;

  public constructor(scope: Construct, id: string, props: OperatorDeploymentOptions = {}) {
    super(scope, id);
    _guardChart(this);
    const errors = new ErrorList();
    const operator = resolveOperator(errors, props, true);
    errors.throwIfAny(`AgentSandboxExtensions ${this.node.path}`);
    this.image = operator.image;
    recordOperatorImage(this, { image: operator.image, imagePullPolicy: operator.imagePullPolicy });
    this.crds = new SandboxCrds(this, 'Crds', { core: false, extensions: true });
    extensionsClusterRole(this, operator.namespace);
    this.deployment = operatorDeployment(this, operator);
    orderFirst(this, this.crds.apiObjects);
    _dropClusterScopedNamespaces(this);
  }
}
