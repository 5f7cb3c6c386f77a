/**
 * The harness's own checks, without a cluster: what counts as settled.
 */
import { holds, violations, type Snapshot } from './harness';

const ready = { status: { conditions: [{ type: 'Ready', status: 'True' }] } };
const pool = { metadata: { name: 'pool', uid: 'pool-uid' }, spec: { replicas: 1 } };
const member = { metadata: { name: 'member', uid: 'member-uid', ownerReferences: [{ kind: 'SandboxWarmPool', uid: 'pool-uid', controller: true }] }, ...ready };
const podOf = (sandboxUid: string, name: string, extra: Record<string, unknown> = {}) =>
  ({ metadata: { name, ownerReferences: [{ kind: 'Sandbox', uid: sandboxUid }], ...extra } });
const snapshot = (s: Partial<Snapshot>): Snapshot => ({ claims: [], sandboxes: [member], pods: [podOf('member-uid', 'member')], services: [], pvcs: [], pool, ...s });

test('the Sandboxes of deleted claims, still to be collected, are garbage: the invariants hold, the cluster is not settled', () => {
  const left = { metadata: { name: 'claimed', uid: 'claimed-uid', ownerReferences: [{ kind: 'SandboxClaim', name: 'gone', uid: 'gone-uid', controller: true }] }, ...ready };
  const v = violations(snapshot({ sandboxes: [member, left], pods: [podOf('member-uid', 'member'), podOf('claimed-uid', 'claimed')] }), []);
  expect(holds(v)).toBe(true);
  expect(v.garbage).toEqual(['Sandbox claimed of deleted claim gone']);
});

test('objects being deleted are garbage; a claim\'s Sandbox is not while the claim is there', () => {
  const claim = { metadata: { name: 'c', uid: 'c-uid' }, status: { sandbox: { name: 'claimed' } } };
  const sb = { metadata: { name: 'claimed', uid: 'claimed-uid', ownerReferences: [{ kind: 'SandboxClaim', name: 'c', uid: 'c-uid', controller: true }] }, ...ready };
  expect(violations(snapshot({ claims: [claim], sandboxes: [member, sb] }), []).garbage).toEqual([]);
  const dying = podOf('nobody', 'dying', { deletionTimestamp: '2024-01-01T00:00:00Z' });
  expect(violations(snapshot({ pods: [podOf('member-uid', 'member'), dying] }), []).garbage).toEqual(['Pod dying being deleted']);
  expect(violations(snapshot({}), []).garbage).toEqual([]);
});
