/**
 * The router's identity in the integration tests: the ServiceAccount, ClusterRole and binding that
 * the install bundle ships for the router (AgentSandboxSystem with `router`, synthesized here),
 * applied to the test cluster with the ClusterRole names suffixed by the namespace, and a
 * kubeconfig with a real token of that ServiceAccount. A router started with it can do exactly
 * what the bundle grants it (watch Sandboxes and Pods, TokenReview, SubjectAccessReview, patch
 * Sandboxes) and what the bundle's `agent-sandbox-router` admission policy, applied too (suffixed
 * the same way; it matches only this namespace's router ServiceAccount), lets it patch; started
 * with `args` too, it runs as the bundle's router Deployment runs it.
 */
import { Testing } from 'cdk8s';
import { AgentSandboxSystem } from '../../../src/install';
import { ROUTER_POLICY_NAME } from '../../../src/install/admission-policy';
import { ApiClient } from '../../../tools/control-plane/api';
import { Kube } from '../../../tools/control-plane/kube';
import { serviceAccountKubeconfig } from '../operator/bundle-rbac';

const FIELD_MANAGER = 'integration-test-router-rbac';

export class RouterRbac {
  public static async apply(kube: Kube, api: ApiClient, namespace: string): Promise<RouterRbac> {
    const chart = Testing.chart();
    new AgentSandboxSystem(chart, 'install', { namespace, extensions: true, createNamespace: false, router: {} });
    const objects: any[] = Testing.synth(chart);
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.spec.template.spec.containers[0].args?.[0] === 'router');
    if (!deployment) throw new Error('the install bundle synthesized no router Deployment (a container whose args start with "router")');
    const sa: string = deployment.spec.template.spec.serviceAccountName;
    const binding = objects.find((o) => o.kind === 'ClusterRoleBinding' && o.subjects?.some((s: any) => s.kind === 'ServiceAccount' && s.name === sa));
    const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === binding?.roleRef.name);
    const account = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === sa);
    if (!binding || !role || !account) throw new Error(`the install bundle has no ServiceAccount, ClusterRoleBinding and ClusterRole for the router's ServiceAccount ${sa}`);
    const suffixed = `${role.metadata.name}-${namespace}`;
    const policies = objects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy') && o.metadata.name === ROUTER_POLICY_NAME);
    if (policies.length !== 2) throw new Error(`the install bundle has no ${ROUTER_POLICY_NAME} ValidatingAdmissionPolicy and binding`);
    const policy = `${ROUTER_POLICY_NAME}-${namespace}`;
    const applied = [
      account,
      { ...role, metadata: { ...role.metadata, name: suffixed } },
      { ...binding, metadata: { ...binding.metadata, name: suffixed }, roleRef: { ...binding.roleRef, name: suffixed } },
      ...policies.map((o) => ({ ...o, metadata: { ...o.metadata, name: policy }, ...(o.kind.endsWith('Binding') ? { spec: { ...o.spec, policyName: policy } } : {}) })),
    ];
    await kube.applyServerSide(applied, FIELD_MANAGER);
    const kubeconfig = await serviceAccountKubeconfig(kube, api, namespace, sa, `router-rbac-${namespace}`);
    const [command, ...args] = deployment.spec.template.spec.containers[0].args as string[];
    if (command !== 'router') throw new Error(`the router Deployment runs "${command}", not "router"`);
    return new RouterRbac(kube, sa, suffixed, policy, role.rules, kubeconfig, args);
  }

  private constructor(
    private readonly kube: Kube,
    public readonly serviceAccount: string,
    /** The name of the applied ClusterRole and ClusterRoleBinding. */
    public readonly clusterRole: string,
    /** The name of the applied router admission policy and its binding. */
    public readonly admissionPolicy: string,
    public readonly rules: any[],
    public readonly kubeconfig: string,
    /** The router Deployment's flags, as synthesized (after the `router` command). */
    public readonly args: readonly string[],
  ) {}

  /** Deletes the cluster-scoped objects (RBAC and admission policy); the ServiceAccount goes with the namespace. */
  public async remove(): Promise<void> {
    await this.kube.kubectl(['delete', `clusterrolebinding/${this.clusterRole}`, `clusterrole/${this.clusterRole}`,
      `validatingadmissionpolicybinding/${this.admissionPolicy}`, `validatingadmissionpolicy/${this.admissionPolicy}`, '--ignore-not-found']);
  }
}
