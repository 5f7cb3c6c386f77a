/**
 * The extension controllers' event-to-key mapping and event filters (controller.ts files). The
 * reconcilers themselves are exercised against the real API server in
 * test/integration/operator/extensions.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SandboxAnnotations } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { networkPolicyNameFor } from '#api/network-policy-defaults';
import { readAllowedLabelDomains } from '../../../src/controllers/claim/adopt';
import { claimRelevantChange, memberBecameUsable, waitingClaimKeys } from '../../../src/controllers/claim/controller';
import { CLAIMS_BY_POOL_INDEX, POLICIES_BY_TEMPLATE_HASH_INDEX, POOLS_BY_HASH_INDEX, POOLS_BY_TEMPLATE_INDEX, TEMPLATES_BY_POLICY_NAME_INDEX } from '../../../src/controllers/extension-informers';
import { templateKeysOfSandbox } from '../../../src/controllers/template/controller';
import { poolKeysOfPolicy, templateKeysOfPolicy } from '../../../src/controllers/template-policy';
import { poolKeysOfSandbox, poolRelevantChange } from '../../../src/controllers/warm-pool/controller';
import { FakeStore } from '../../fake-kube';

const ref = (kind: string, name: string, apiVersion = 'extensions.agents.x-k8s.io/v1beta1') => ({ apiVersion, kind, name, uid: `${name}-uid`, controller: true });
const sandbox = (over: { owner?: any; labels?: Record<string, string>; status?: any } = {}): any => ({
  metadata: { name: 'sb', namespace: 'ns', labels: over.labels, ownerReferences: over.owner ? [over.owner] : undefined, resourceVersion: '1' },
  spec: { podTemplate: { spec: { containers: [] } } },
  status: over.status,
});
const ready = { conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady', message: '', lastTransitionTime: 't' }], podIPs: ['127.64.0.1'] };

describe('templateKeysOfPolicy and templateKeyOfSandbox', () => {
  const long = 'l'.repeat(250);
  const templates = new FakeStore<any>({ [TEMPLATES_BY_POLICY_NAME_INDEX]: (t) => [`${t.metadata.namespace}/${networkPolicyNameFor(t.metadata.name)}`] })
    .put({ metadata: { name: 'tpl', namespace: 'ns' }, spec: {} }, { metadata: { name: long, namespace: 'ns' }, spec: {} });
  const policy = (name: string, annotations?: Record<string, string>): any => ({ metadata: { name, namespace: 'ns', annotations }, spec: {} });

  test('a policy wakes the template whose policy name it has, whoever made it, long (hashed) names too', () => {
    expect(templateKeysOfPolicy(policy('tpl-network-policy'), templates)).toEqual(['ns/tpl']);
    expect(templateKeysOfPolicy(policy(networkPolicyNameFor(long)), templates)).toEqual([`ns/${long}`]);
    expect(templateKeysOfPolicy(policy('other'), templates)).toEqual([]);
  });

  test('the operator\'s policy wakes the template its annotation names, also once that template is gone', () => {
    expect(templateKeysOfPolicy(policy('gone-network-policy', { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'gone' }), templates)).toEqual(['ns/gone']);
    expect(templateKeysOfPolicy(policy('tpl-network-policy', { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'tpl' }), templates)).toEqual(['ns/tpl']);
  });

  test('a Sandbox wakes the template it was built from: by its annotation, or by the policy its template-ref-hash label is selected by', () => {
    const policies = new FakeStore<any>({ [POLICIES_BY_TEMPLATE_HASH_INDEX]: (p) => [`${p.metadata.namespace}/${p.metadata.labels['agents.x-k8s.io/sandbox-template-ref-hash']}`] })
      .put({ metadata: { name: 'gone-network-policy', namespace: 'ns', labels: { 'agents.x-k8s.io/sandbox-template-ref-hash': NameHash.of('gone') }, annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'gone' } }, spec: {} });
    expect(templateKeysOfSandbox({ metadata: { name: 'sb', namespace: 'ns', annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'tpl' } } } as any, policies)).toEqual(['ns/tpl']);
    expect(templateKeysOfSandbox(sandbox({ labels: { 'agents.x-k8s.io/sandbox-template-ref-hash': NameHash.of('gone') } }), policies)).toEqual(['ns/gone']);
    expect(templateKeysOfSandbox(sandbox(), policies)).toEqual([]);
  });
});

describe('poolKeysOfSandbox', () => {
  const pools = new FakeStore<any>({ [POOLS_BY_HASH_INDEX]: (p) => [`${p.metadata.namespace}/${NameHash.of(p.metadata.name)}`] })
    .put({ metadata: { name: 'pool', namespace: 'ns' }, spec: { sandboxTemplateRef: { name: 't' } } });
  test.each([
    ['controlled by a pool: that pool', sandbox({ owner: ref('SandboxWarmPool', 'p1') }), ['ns/p1']],
    ['controlled by a claim: none (not a member any more)', sandbox({ owner: ref('SandboxClaim', 'c') }), []],
    ['an orphan with a membership label: the pool it names', sandbox({ labels: { 'agents.x-k8s.io/warm-pool-sandbox': NameHash.of('pool') } }), ['ns/pool']],
    ['an orphan without one: none', sandbox(), []],
  ])('%s', (_n, sb, keys) => expect(poolKeysOfSandbox(sb, pools)).toEqual(keys));
});

test('pool passes wake on membership, readiness and deletion changes, not on pod IP updates', () => {
  const base = sandbox({ owner: ref('SandboxWarmPool', 'p') });
  expect(poolRelevantChange(base, { ...base, status: { podIPs: ['127.64.0.1'] } })).toBe(false);
  expect(poolRelevantChange(base, { ...base, status: ready })).toBe(true);
  expect(poolRelevantChange(base, sandbox({ owner: ref('SandboxClaim', 'c') }))).toBe(true);
});

test('claim passes wake on Ready, pod IPs, serviceFQDN and ownership; waiting claims wake when a member gets an IP or Ready', () => {
  const base = sandbox({ owner: ref('SandboxClaim', 'c') });
  expect(claimRelevantChange(base, { ...base, status: ready })).toBe(true);
  expect(claimRelevantChange(base, { ...base, metadata: { ...base.metadata, annotations: { a: 'b' } } })).toBe(false);
  // The claim mirrors status.serviceFQDN: a Service appearing (or going) with Ready and pod IPs unchanged still wakes it.
  expect(claimRelevantChange({ ...base, status: ready }, { ...base, status: { ...ready, service: base.metadata.name, serviceFQDN: `${base.metadata.name}.ns.svc.cluster.local` } })).toBe(true);
  expect(memberBecameUsable(base, { ...base, status: { podIPs: ['127.64.0.1'] } })).toBe(true);
  expect(memberBecameUsable({ ...base, status: ready }, { ...base, status: ready })).toBe(false);
});

test('waiting claims: those of the pool with no Sandbox and not being deleted', () => {
  const claims = new FakeStore<any>({ [CLAIMS_BY_POOL_INDEX]: (c) => [`${c.metadata.namespace}/${c.spec.warmPoolRef.name}`] }).put(
    { metadata: { name: 'a', namespace: 'ns' }, spec: { warmPoolRef: { name: 'p' } } },
    { metadata: { name: 'b', namespace: 'ns' }, spec: { warmPoolRef: { name: 'p' } }, status: { sandbox: { name: 'x' } } },
    { metadata: { name: 'c', namespace: 'ns', deletionTimestamp: 't' }, spec: { warmPoolRef: { name: 'p' } } },
    { metadata: { name: 'd', namespace: 'ns' }, spec: { warmPoolRef: { name: 'q' } } },
  );
  expect(waitingClaimKeys(claims, 'ns', 'p')).toEqual(['ns/a']);
});

test('allowed label domains: comma or newline separated, absent or empty file means the default', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'domains-'));
  const file = path.join(dir, 'allowed-label-domains');
  expect(readAllowedLabelDomains(file)).toBeUndefined();
  fs.writeFileSync(file, 'a.example.com, b.example.com\nc.example.com\n');
  expect(readAllowedLabelDomains(file)).toEqual(['a.example.com', 'b.example.com', 'c.example.com']);
  fs.writeFileSync(file, ' \n');
  expect(readAllowedLabelDomains(file)).toBeUndefined();
});

test('poolKeysOfPolicy: a policy wakes the pools of the template it belongs to, also under a hashed name', () => {
  const long = 'l'.repeat(250);
  const templates = new FakeStore<any>({ [TEMPLATES_BY_POLICY_NAME_INDEX]: (t) => [`${t.metadata.namespace}/${networkPolicyNameFor(t.metadata.name)}`] })
    .put({ metadata: { name: long, namespace: 'ns' }, spec: {} });
  const pools = new FakeStore<any>({ [POOLS_BY_TEMPLATE_INDEX]: (p) => [`${p.metadata.namespace}/${p.spec.sandboxTemplateRef.name}`] })
    .put({ metadata: { name: 'p1', namespace: 'ns' }, spec: { sandboxTemplateRef: { name: long } } }, { metadata: { name: 'p2', namespace: 'ns' }, spec: { sandboxTemplateRef: { name: 'other' } } });
  expect(poolKeysOfPolicy({ metadata: { name: networkPolicyNameFor(long), namespace: 'ns' }, spec: {} } as any, templates, pools)).toEqual(['ns/p1']);
});
