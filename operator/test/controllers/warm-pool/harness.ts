/** The warm-pool reconciler's caches as FakeStores, and how the fake API server files the objects. */
import { SandboxLabels } from '../../../../src/api/labels';
import { POOL_LABEL_INDEX } from '../../../src/controllers/extension-informers';
import { type Sandbox, type SandboxTemplate, type SandboxWarmPool } from '../../../src/model';
import type { KubeObject } from '../../../src/runtime/types';
import { FakeStore } from '../../fake-kube';

const RESOURCES_BY_KIND: Record<string, string> = { Sandbox: 'sandboxes', SandboxTemplate: 'sandboxtemplates', SandboxWarmPool: 'sandboxwarmpools' };

/** The fake server's resource of an object (for FakeClient.seed). */
export const RESOURCE_OF = (obj: KubeObject): string => RESOURCES_BY_KIND[obj.kind ?? ''];

export function poolStores() {
  return {
    pools: new FakeStore<SandboxWarmPool>(),
    templates: new FakeStore<SandboxTemplate>(),
    sandboxes: new FakeStore<Sandbox>({
      [POOL_LABEL_INDEX]: (sb) => {
        const label = sb.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX];
        return label ? [`${sb.metadata.namespace}/${label}`] : [];
      },
    }),
  };
}
