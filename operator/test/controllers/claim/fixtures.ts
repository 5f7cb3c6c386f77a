/** Builders for the claim tests. Members come from the warm-pool fixtures, so they are what the pool really builds. */
import { type SandboxClaim } from '../../../src/model';
import { NOW, NS, iso } from '../template/fixtures';

export function claim(spec: Partial<SandboxClaim['spec']> = {}, meta: Partial<SandboxClaim['metadata']> = {}, status?: SandboxClaim['status']): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name: 'my-claim', namespace: NS, uid: 'claim-uid', resourceVersion: '500', generation: 3, creationTimestamp: iso(NOW - 100), ...meta },
    spec: { warmPoolRef: { name: 'py-pool' }, ...spec },
    ...(status ? { status } : {}),
  };
}

export { NOW, NS, iso };
export { FLAGS, GRACE, TEMPLATE, member, pool, unschedulable } from '../warm-pool/fixtures';
export { condition, notReady, ownerRef, ready, sandbox, template } from '../template/fixtures';
