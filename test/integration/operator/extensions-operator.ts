/**
 * A test file's own namespace and operator (--extensions=true) running as the install bundle's
 * ServiceAccount, and their removal: claims and pools first, then Sandboxes, so no other file's
 * operator (they watch every namespace) finds Sandboxes in a terminating namespace.
 */
import { BundleRbac } from './bundle-rbac';
import { ExtensionsApi } from './extensions-api';
import { ApiClient } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

export interface ExtensionsOperator {
  readonly ns: string;
  readonly ext: ExtensionsApi;
  readonly rbac: BundleRbac;
  readonly op: OperatorProcess;
}

export async function startExtensionsOperator(kube: Kube, api: ApiClient, namespacePrefix: string): Promise<ExtensionsOperator> {
  await ensureOperatorBundle();
  const ns = await kube.createNamespace(namespacePrefix);
  const rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: true });
  const op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: ['--extensions=true', '--leader-elect=false'] });
  return { ns, ext: new ExtensionsApi(api, ns), rbac, op };
}

export async function stopExtensionsOperator(kube: Kube, api: ApiClient, env: ExtensionsOperator | undefined): Promise<void> {
  if (!env) return;
  const code = await env.op.stop();
  // eslint-disable-next-line no-console
  console.log(`operator log: ${env.op.logFile} (exit ${code}, ${env.op.errors().length} error lines)`);
  for (const plural of ['sandboxclaims', 'sandboxwarmpools'] as const) await api.call('DELETE', env.ext.path(plural));
  await api.call('DELETE', env.ext.sandboxesPath);
  await waitFor(async () => (await env.ext.sandboxes()).length === 0, 120_000, 'every Sandbox of the test namespace to be gone');
  await kube.deleteNamespace(env.ns);
  await env.rbac.remove();
}
