import { ApiObject, ApiObjectMetadata, Chart, Lazy } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { KINDS } from './api/groups';
import { REFERENCED_KINDS } from './api/object-kinds';
import { staticMethodName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain, propError } from './api/validation';
import { _guardChart } from './chart-guards';
import { ObjectRef, _checkRef, _refOf } from './object-ref';

/**
 * The subresource whose `create` permission lets a caller use a sandbox through the router
 * (`sandboxclaims/connect` for the claim that owns it, `sandboxes/connect` for a Sandbox by name),
 * as `pods/exec` does for a Pod. The router asks for it with a SubjectAccessReview; nothing in the
 * API serves it, so only RBAC rules name it.
 */
export const SANDBOX_CONNECT_SUBRESOURCE = 'connect';

/** The audience of the short-lived tokens an agent mints for the router (TokenRequest). */
export const SANDBOX_ROUTER_AUDIENCE = 'sandbox-router';

export interface SandboxAccessProps {
  /** Name (and namespace) of the Role and RoleBinding. @default a name derived from the construct path, in the chart's namespace */
  readonly metadata?: ApiObjectMetadata;
  /**
   * The ServiceAccounts granted access, in the Role's namespace: constructs that define them (a
   * cdk8s-plus `ServiceAccount`, a `KubeServiceAccount`) or `ObjectRef`s (by name with
   * `ObjectRef.fromName`).
   */
  readonly serviceAccounts: Array<ObjectRef | IConstruct>;
  /**
   * Claim sandboxes: create, get, list, watch and delete SandboxClaims, and use the sandbox of any
   * claim in the namespace (`create` on `sandboxclaims/connect`). Reading claims alone never lets
   * anyone into a sandbox.
   * @default true
   */
  readonly claims?: boolean;
  /** Sandboxes made without a claim that these accounts may use, by name (`create` on `sandboxes/connect`). @default none */
  readonly sandboxes?: string[];
  /**
   * Suspend and resume: get, list, watch and patch Sandboxes (what the SDKs' suspend() and resume()
   * do). Patch is namespace-wide: RBAC cannot tell one agent's Sandbox from another's, so an account
   * with it can suspend (or change) any Sandbox of the namespace.
   * @default false
   */
  readonly lifecycle?: boolean;
  /**
   * Let each ServiceAccount mint tokens for itself (`create` on its own `serviceaccounts/token`, one
   * Role per account), so the SDK's `routerToken` can send the router a token for the
   * `sandbox-router` audience instead of the account's own credential. RBAC cannot limit what the
   * account asks for: it may mint tokens of any audience (the API server's too) and any lifetime the
   * API server allows (`--service-account-max-token-expiration`), not bound to its Pod. In a Pod,
   * prefer a projected `serviceAccountToken` volume with `audience: sandbox-router`, which needs no
   * RBAC, is bound to the Pod and rotated by the kubelet (pass it to the SDK as `token`).
   * @default false
   */
  readonly routerTokens?: boolean;
}

/**
 * What an agent's ServiceAccount needs to use sandboxes, and nothing more: a Role and a RoleBinding
 * in one namespace. By default, claim sandboxes from any pool of the namespace and use the ones it
 * claims through the router; optionally also named bare Sandboxes, suspend/resume and minting its
 * own router tokens.
 *
 * RBAC cannot say "claims from this pool only" (the pool is a field of the claim, not a resource
 * name); restrict pools with one namespace per trust boundary.
 */
export class SandboxAccess extends Construct {
  /** The Role. */
  public readonly role: ApiObject;
  /** The RoleBinding. */
  public readonly binding: ApiObject;
  /** With `routerTokens`: one Role and RoleBinding per account, each naming only that account's token. */
  public readonly tokenRoles: ApiObject[] = [];
  private readonly props: SandboxAccessProps;

  public constructor(scope: Construct, id: string, props: SandboxAccessProps) {
    super(scope, id);
    _guardChart(this);
    this.props = props;
    const namespace = props.metadata?.namespace ?? Chart.of(this).namespace;
    const metadata = { ...props.metadata, ...(namespace !== undefined ? { namespace } : {}) };
    // Rules and subjects are produced at synth, when construct references resolve.
    this.role = new ApiObject(this, 'Role', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata,
      rules: Lazy.any({ produce: () => this.rules() }),
    });
    this.binding = new ApiObject(this, 'RoleBinding', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { ...metadata, name: this.role.name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: this.role.name },
      subjects: Lazy.any({ produce: () => this.subjects(namespace) }),
    });
    if (props.routerTokens === true) {
      (Array.isArray(props.serviceAccounts) ? props.serviceAccounts : []).forEach((account, i) => {
        const name = `${this.role.name}-token-${i}`;
        const role = new ApiObject(this, `TokenRole${i}`, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { ...metadata, name },
          rules: Lazy.any({ produce: () => [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: [accountName(account, i)], verbs: ['create'] }] }),
        });
        new ApiObject(this, `TokenRoleBinding${i}`, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { ...metadata, name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: Lazy.any({ produce: () => [{ kind: 'ServiceAccount', name: accountName(account, i), ...(namespace !== undefined ? { namespace } : {}) }] }),
        });
        this.tokenRoles.push(role);
      });
    }
    this.node.addValidation({ validate: () => this.validate(namespace) });
  }

  private accountNames(): string[] {
    return (this.props.serviceAccounts ?? []).map(accountName);
  }

  private rules(): object[] {
    const { claims = true, sandboxes = [], lifecycle = false } = this.props;
    const rules: object[] = [];
    if (claims) {
      rules.push(
        { apiGroups: [KINDS.claim.group], resources: [KINDS.claim.plural], verbs: ['create', 'delete', 'get', 'list', 'watch'] },
        { apiGroups: [KINDS.claim.group], resources: [`${KINDS.claim.plural}/${SANDBOX_CONNECT_SUBRESOURCE}`], verbs: ['create'] },
      );
    }
    if (sandboxes.length > 0) {
      rules.push({ apiGroups: [KINDS.sandbox.group], resources: [`${KINDS.sandbox.plural}/${SANDBOX_CONNECT_SUBRESOURCE}`], resourceNames: [...sandboxes], verbs: ['create'] });
    }
    if (lifecycle) rules.push({ apiGroups: [KINDS.sandbox.group], resources: [KINDS.sandbox.plural], verbs: ['get', 'list', 'patch', 'watch'] });
    return rules;
  }

  private subjects(namespace: string | undefined): object[] {
    return this.accountNames().map((name) => ({ kind: 'ServiceAccount', name, ...(namespace !== undefined ? { namespace } : {}) }));
  }

  private validate(namespace: string | undefined): string[] {
    const errors = new ErrorList();
    const { serviceAccounts, claims = true, sandboxes = [], lifecycle = false } = this.props;
    if (!Array.isArray(serviceAccounts) || serviceAccounts.length === 0) {
      errors.prop('serviceAccounts', `must name at least one ServiceAccount: a construct that defines one (such as a cdk8s-plus ServiceAccount), or ${staticMethodName('ObjectRef', 'fromName')}("agent")`);
    }
    (Array.isArray(serviceAccounts) ? serviceAccounts : []).forEach((ref, i) => _checkRef(errors, `serviceAccounts[${i}]`, ref, REFERENCED_KINDS.serviceAccount, namespace));
    if (!Array.isArray(sandboxes)) errors.prop('sandboxes', 'must be a list of Sandbox names');
    else sandboxes.forEach((name, i) => errors.prop(`sandboxes[${i}]`, checkDns1123Subdomain(name)));
    if (!claims && sandboxes.length === 0 && !lifecycle) {
      errors.prop('claims', 'is false and no sandboxes or lifecycle are granted, so the role would let nobody use a sandbox; keep claims, or name sandboxes');
    }
    if (namespace === undefined) errors.prop('metadata.namespace', 'is needed (a Role is namespaced): set it, or give the chart a namespace');
    return errors.all;
  }
}

/** The name of the `index`th ServiceAccount (the validation reports a value that is no reference). */
function accountName(account: ObjectRef | IConstruct, index: number): string {
  const ref = _refOf(account);
  if (ref === undefined) throw propError(`serviceAccounts[${index}]`, 'must be a ServiceAccount construct or an ObjectRef');
  return ref.name;
}
