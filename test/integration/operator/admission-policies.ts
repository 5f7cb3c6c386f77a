/**
 * The install bundle's ValidatingAdmissionPolicies are cluster-wide. A file that applies the whole
 * bundle (crds.test.ts does) leaves them in the shared cluster, and then they refuse the objects
 * that tests of the operator's own behaviour create on purpose. Such tests call this first.
 */
import { sandboxManifest } from './sandbox-api';
import { ADMISSION_POLICY_NAME, CLAIM_POLICY_NAME, OWNERSHIP_POLICY_NAME } from '../../../src/install/admission-policy';
import { ApiClient } from '../../../tools/control-plane/api';
import { waitFor } from '../../../tools/control-plane/kube';

const BINDINGS = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';

/** Delete the bundle's policy bindings, and wait until the API server no longer applies them. */
export async function withoutAdmissionPolicies(api: ApiClient, namespace: string): Promise<void> {
  for (const name of [ADMISSION_POLICY_NAME, CLAIM_POLICY_NAME, OWNERSHIP_POLICY_NAME]) await api.request('DELETE', `${BINDINGS}/${name}`);
  // The router's label is refused by the hardening policy: a dry-run with it passes once no binding applies.
  const probe = sandboxManifest('admission-probe', {}, { labels: { app: 'sandbox-router' } });
  await waitFor(async () => (await api.request('POST', `/apis/agents.x-k8s.io/v1beta1/namespaces/${namespace}/sandboxes?dryRun=All`, probe)).status !== 403,
    30_000, 'the API server to stop applying the admission policy bindings');
}
