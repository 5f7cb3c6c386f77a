/**
 * The operator's identity in the integration tests: the ServiceAccount, ClusterRoles, Role and
 * bindings that the install bundle ships (AgentSandboxSystem, synthesized here in-process),
 * applied to the test cluster, and a kubeconfig holding a real token of that ServiceAccount
 * (TokenRequest API) next to the cluster's CA. An operator started with it may do exactly what
 * the shipped RBAC allows, so a verb missing from the bundle fails a test instead of hiding
 * behind the admin client certificate.
 *
 * The bundle's cluster-scoped objects get the test namespace as a suffix: test files, and tests
 * that take a rule away on purpose, never share or overwrite each other's ClusterRoles. Rules,
 * subjects and the namespaced objects are applied exactly as synthesized.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Testing } from 'cdk8s';
import { stringify as toYaml } from 'yaml';
import { AgentSandboxSystem } from '../../../src/install';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube } from '../../../tools/control-plane/kube';

export interface PolicyRule {
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly verbs: string[];
  readonly [field: string]: unknown;
}

/** The kinds of RBAC object the install bundle ships, in the order they are applied. */
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'];
const READ_VERBS = new Set(['get', 'list', 'watch']);
const FIELD_MANAGER = 'integration-test-bundle-rbac';

export interface BundleRbacOptions {
  /** Namespace of the ServiceAccount, the leader-election Role and its Lease (the install's `namespace`). */
  readonly namespace: string;
  /** Include the extension controllers' ClusterRole (the install's `extensions`). @default true */
  readonly extensions?: boolean;
  /**
   * Keep only the read verbs (get, list, watch) of the ClusterRoles; the namespaced leader-election
   * Role stays as shipped. For operator replicas that run their controllers cluster-wide but must
   * not write to other test files' objects.
   * @default false
   */
  readonly readOnly?: boolean;
  /** Edit the synthesized rules of one role before they are applied, e.g. to take a verb away. */
  readonly editRules?: (role: { kind: string; name: string }, rules: PolicyRule[]) => PolicyRule[];
}

export class BundleRbac {
  /**
   * Synthesizes the install's RBAC, applies it, requests a token for its ServiceAccount and writes
   * a kubeconfig for it.
   */
  public static async apply(kube: Kube, api: ApiClient, opts: BundleRbacOptions): Promise<BundleRbac> {
    const rbac = new BundleRbac(kube, api, opts);
    await rbac.applyObjects(rbac.objects);
    rbac.kubeconfig = await rbac.writeKubeconfig();
    return rbac;
  }

  /** The install's RBAC objects as synthesized (cluster-scoped names suffixed), before `editRules`. */
  public readonly shipped: any[];
  /** What was applied: `shipped` after `readOnly` and `editRules`. */
  public readonly objects: any[];
  public readonly namespace: string;
  public readonly serviceAccountName: string;
  /** Path of a kubeconfig that authenticates as the ServiceAccount with a bearer token. */
  public kubeconfig = '';

  private constructor(private readonly kube: Kube, private readonly api: ApiClient, opts: BundleRbacOptions) {
    this.namespace = opts.namespace;
    const chart = Testing.chart();
    const install = new AgentSandboxSystem(chart, 'install', { namespace: opts.namespace, extensions: opts.extensions ?? true, createNamespace: false });
    this.serviceAccountName = install.serviceAccountName;
    const synthesized = Testing.synth(chart).filter((o: any) => RBAC_KINDS.includes(o.kind));
    this.shipped = synthesized.map((o: any) => this.isolate(o)).sort((a, b) => RBAC_KINDS.indexOf(a.kind) - RBAC_KINDS.indexOf(b.kind));
    const kinds = new Set(this.shipped.map((o) => o.kind));
    // A bundle refactor that stops shipping one of these would otherwise show up as a confusing 403.
    for (const kind of RBAC_KINDS) if (!kinds.has(kind)) throw new Error(`the install bundle synthesized no ${kind}; this helper expects all of ${RBAC_KINDS.join(', ')}`);
    this.objects = this.shipped.map((o) => {
      if (o.kind !== 'ClusterRole' && o.kind !== 'Role') return o;
      let rules: PolicyRule[] = o.rules;
      if (opts.readOnly && o.kind === 'ClusterRole') {
        rules = rules.map((r) => ({ ...r, verbs: r.verbs.filter((v) => READ_VERBS.has(v)) })).filter((r) => r.verbs.length > 0);
      }
      if (opts.editRules) rules = opts.editRules({ kind: o.kind, name: o.metadata.name }, structuredClone(rules));
      return { ...o, rules };
    });
  }

  /** `system:serviceaccount:<namespace>:<name>`, the user the API server sees. */
  public get userName(): string {
    return `system:serviceaccount:${this.namespace}:${this.serviceAccountName}`;
  }

  /** The names of the applied ClusterRoles. */
  public get clusterRoles(): string[] {
    return this.objects.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata.name);
  }

  /** Applies the shipped rules again (undoing `readOnly` and `editRules`). */
  public async restoreShipped(): Promise<void> {
    await this.applyObjects(this.shipped);
  }

  /** Deletes the cluster-scoped objects; the namespaced ones go with the test namespace. */
  public async remove(): Promise<void> {
    const names = this.objects.filter((o) => o.kind.startsWith('Cluster')).map((o) => `${o.kind.toLowerCase()}/${o.metadata.name}`);
    await this.kube.kubectl(['delete', ...names, '--ignore-not-found']);
  }

  /**
   * The identity the token authenticates as, from the API server itself (SelfSubjectReview): the
   * check that the operator's kubeconfig is really the ServiceAccount and not an admin.
   */
  public whoAmI(): Promise<{ username: string; groups: string[] }> {
    return whoAmI(this.kubeconfig);
  }

  /** Cluster-scoped names get the namespace as suffix; bindings follow their role's new name. */
  private isolate(obj: any): any {
    const out = structuredClone(obj);
    if (out.kind === 'ClusterRole' || out.kind === 'ClusterRoleBinding') out.metadata.name = `${out.metadata.name}-${this.namespace}`;
    if (out.roleRef?.kind === 'ClusterRole') out.roleRef.name = `${out.roleRef.name}-${this.namespace}`;
    return out;
  }

  private async applyObjects(objects: any[]): Promise<void> {
    await this.kube.applyServerSide(objects, FIELD_MANAGER);
  }

  private writeKubeconfig(): Promise<string> {
    return serviceAccountKubeconfig(this.kube, this.api, this.namespace, this.serviceAccountName, `bundle-rbac-${this.namespace}`);
  }
}

/** The identity a kubeconfig authenticates as, from the API server itself (SelfSubjectReview). */
export async function whoAmI(kubeconfig: string): Promise<{ username: string; groups: string[] }> {
  const client = new ApiClient(connectionFromKubeconfig(kubeconfig));
  try {
    const review = await client.call('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    return review.status.userInfo;
  } finally {
    client.close();
  }
}

/** A real token of a ServiceAccount from the TokenRequest API, valid longer than any test file runs. */
export async function serviceAccountToken(api: ApiClient, namespace: string, serviceAccount: string): Promise<string> {
  const request = await api.call('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 4 * 3600 },
  });
  return request.status.token;
}

/**
 * Writes `<name>.kubeconfig` next to the admin kubeconfig: the cluster's server and CA with a token
 * of the ServiceAccount (a process reads it once at start). The admin client certificate stays behind.
 */
export async function serviceAccountKubeconfig(kube: Kube, api: ApiClient, namespace: string, serviceAccount: string, name: string): Promise<string> {
  const token = await serviceAccountToken(api, namespace, serviceAccount);
  const admin = connectionFromKubeconfig(kube.kubeconfig);
  const file = path.join(path.dirname(kube.kubeconfig), `${name}.kubeconfig`);
  fs.writeFileSync(file, toYaml({
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': [{ name: 'cp', cluster: { 'server': admin.server, 'certificate-authority-data': admin.ca?.toString('base64') } }],
    'users': [{ name: serviceAccount, user: { token } }],
    'contexts': [{ name: 'sa', context: { cluster: 'cp', user: serviceAccount, namespace } }],
    'current-context': 'sa',
  }), { mode: 0o600 });
  return file;
}

/** A ServiceAccount with a Role of `rules` bound to it, all named `name`, in `namespace`: the objects to apply. */
export function serviceAccountWithRole(namespace: string, name: string, rules: readonly PolicyRule[]): object[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace }, rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ];
}
