/** The warm-pool reconciler's caches as FakeStores, and how the fake API server files the objects. */
import { SandboxLabels } from '#api/labels';
import { TEMPLATE } from './fixtures';
import { POOL_LABEL_INDEX } from '../../../src/controllers/extension-informers';
import { desiredNetworkPolicy } from '../../../src/controllers/template/desired';
import { type NetworkPolicy, type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import type { KubeObject } from '../../../src/runtime/types';
import { FakeStore } from '../../fake-kube';

const RESOURCES_BY_KIND: Record<string, string> = { Sandbox: 'sandboxes', SandboxTemplate: 'sandboxtemplates', SandboxWarmPool: 'sandboxwarmpools' };

/** The fake server's resource of an object (for FakeClient.seed). */
export const RESOURCE_OF = (obj: KubeObject): string => RESOURCES_BY_KIND[obj.kind ?? ''];

/** The NetworkPolicy the template controller made for `template`, as the cache shows it. */
export function policyOf(template: SandboxTemplate): NetworkPolicy {
  const policy = desiredNetworkPolicy(template)!;
  return { ...policy, metadata: { ...policy.metadata, uid: `${template.metadata.name}-policy-uid`, resourceVersion: '1' } };
}

/** The caches; the policy of every template in `withPolicies` already shows (pools create only then). */
export function poolStores(withPolicies: SandboxTemplate[] = [TEMPLATE]) {
  return {
    pools: new FakeStore<SandboxWarmPool>(),
    templates: new FakeStore<SandboxTemplate>(),
    networkPolicies: new FakeStore<NetworkPolicy>().put(...withPolicies.map(policyOf)),
    sandboxes: new FakeStore<Sandbox>({
      [POOL_LABEL_INDEX]: (sb) => {
        const label = sb.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX];
        return label ? [`${sb.metadata.namespace}/${label}`] : [];
      },
    }),
  };
}
