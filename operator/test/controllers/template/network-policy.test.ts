import * as fc from 'fast-check';
import { NS, ownerRef, template } from './fixtures';
import { controllerFlag, parseControllerFlagValue } from '../../../../src/api/controller-flags';
import { SandboxLabels } from '../../../../src/api/labels';
import { NameHash } from '../../../../src/api/name-hash';
import { defaultSandboxNetworkPolicySpec, sandboxTemplateSelector } from '../../../../src/api/network-policy-defaults';
import { networkPolicyAction, type NetworkPolicyAction } from '../../../src/controllers/template/decide';
import { routerLocation } from '../../../src/controllers/template/controller';
import { desiredNetworkPolicy, templateRefHashLabelPatch } from '../../../src/controllers/template/desired';
import { OperatorFlags } from '../../../src/runtime/flags';
import { applyMergePatch, type NetworkPolicy, type SandboxTemplate } from '../../../src/model';

const CUSTOM = {
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 8080 }] }],
  egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
};

describe('desiredNetworkPolicy', () => {
  test('Managed without rules: the secure default, named after and owned by the template', () => {
    const policy = desiredNetworkPolicy(template())!;
    expect(policy.metadata).toEqual({
      name: 'python-network-policy',
      namespace: NS,
      ownerReferences: [{ ...ownerRef('SandboxTemplate', 'python', 'tpl-uid'), blockOwnerDeletion: true }],
    });
    expect(policy.spec).toEqual(defaultSandboxNetworkPolicySpec('python'));
    expect(policy.apiVersion).toBe('networking.k8s.io/v1');
    expect(policy.kind).toBe('NetworkPolicy');
  });

  test('the router namespace follows the install namespace', () => {
    const policy = desiredNetworkPolicy(template(), { routerNamespace: 'sandboxes-system' })!;
    expect(policy.spec).toEqual(defaultSandboxNetworkPolicySpec('python', 'sandboxes-system'));
    expect(JSON.stringify(policy.spec)).toContain('sandboxes-system');
  });

  test('router Pods elsewhere: one peer selecting the namespace by its metadata.name label and the configured Pod labels', () => {
    const policy = desiredNetworkPolicy(template(), { routerNamespace: 'edge', routerPodLabels: { 'app.kubernetes.io/name': 'router', 'tier': 'edge' } })!;
    expect(policy.spec.ingress).toEqual([{
      from: [{
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'edge' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'router', 'tier': 'edge' } },
      }],
    }]);
  });

  test('where the router is: --router-namespace, else the operator\'s namespace, else agent-sandbox-system; --router-pod-labels, else app=sandbox-router', () => {
    expect(routerLocation(new OperatorFlags({}), undefined)).toEqual({ routerNamespace: 'agent-sandbox-system', routerPodLabels: undefined });
    expect(routerLocation(new OperatorFlags({}), 'ops')).toEqual({ routerNamespace: 'ops', routerPodLabels: undefined });
    expect(routerLocation(new OperatorFlags({ 'router-namespace': 'edge', 'router-pod-labels': 'app=r,tier=edge' }), 'ops'))
      .toEqual({ routerNamespace: 'edge', routerPodLabels: { app: 'r', tier: 'edge' } });
    const spec = desiredNetworkPolicy(template(), routerLocation(new OperatorFlags({}), 'ops'))!.spec;
    expect(spec).toEqual(defaultSandboxNetworkPolicySpec('python', 'ops', { app: 'sandbox-router' }));
  });

  test('--router-pod-labels: key=value pairs, refused with the field and the fix otherwise', () => {
    expect(parseControllerFlagValue(controllerFlag('router-pod-labels')!, 'a=b,example.com/c=d')).toEqual({ value: 'a=b,example.com/c=d' });
    expect(parseControllerFlagValue(controllerFlag('router-pod-labels')!, 'app')).toEqual({
      error: '--router-pod-labels: "app" is not key=value; write labels as key=value,key2=value2, such as "app=sandbox-router"',
    });
    expect(parseControllerFlagValue(controllerFlag('router-namespace')!, 'Edge').error).toMatch(/^--router-namespace: "Edge" must consist of lowercase/);
  });

  test.each<[string, Partial<SandboxTemplate['spec']>, object]>([
    ['custom rules verbatim', { networkPolicy: CUSTOM }, CUSTOM],
    ['empty custom rules deny both directions', { networkPolicy: {} }, {}],
    ['empty lists deny too', { networkPolicy: { ingress: [], egress: [] } }, {}],
    ['only egress given: ingress denied', { networkPolicy: { egress: CUSTOM.egress } }, { egress: CUSTOM.egress }],
    ['explicit Managed', { networkPolicyManagement: 'Managed', networkPolicy: CUSTOM }, CUSTOM],
  ])('%s', (_, spec, rules) => {
    expect(desiredNetworkPolicy(template(spec))!.spec).toEqual({
      podSelector: sandboxTemplateSelector('python'),
      policyTypes: ['Ingress', 'Egress'],
      ...rules,
    });
  });

  test('Unmanaged: no policy, custom rules or not', () => {
    expect(desiredNetworkPolicy(template({ networkPolicyManagement: 'Unmanaged' }))).toBeUndefined();
    expect(desiredNetworkPolicy(template({ networkPolicyManagement: 'Unmanaged', networkPolicy: CUSTOM }))).toBeUndefined();
  });

  test('any Managed template: owned by it, selects its Pods, both directions (fast-check)', () => {
    fc.assert(fc.property(
      fc.stringMatching(/^[a-z][a-z0-9-]{0,40}$/),
      fc.constantFrom(undefined, 'Managed', 'Unmanaged'),
      fc.option(fc.record({ egress: fc.constant(CUSTOM.egress) }, { requiredKeys: [] }), { nil: undefined }),
      (name, management, networkPolicy) => {
        const t = template({ ...(management ? { networkPolicyManagement: management } : {}), ...(networkPolicy ? { networkPolicy } : {}) }, { name, uid: `${name}-uid` });
        const policy = desiredNetworkPolicy(t);
        if (management === 'Unmanaged') return expect(policy).toBeUndefined();
        expect(policy!.metadata.name).toBe(`${name}-network-policy`);
        expect(policy!.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'SandboxTemplate', name, uid: `${name}-uid`, controller: true })]);
        expect(policy!.spec.podSelector).toEqual(sandboxTemplateSelector(name));
        expect(policy!.spec.policyTypes).toEqual(['Ingress', 'Egress']);
        if (!networkPolicy) expect(policy!.spec).toEqual(defaultSandboxNetworkPolicySpec(name));
      },
    ));
  });

  test('the selector is the template-ref hash of the template name', () => {
    const policy = desiredNetworkPolicy(template({}, { name: 'node-20' }))!;
    expect(policy.spec.podSelector).toEqual({ matchLabels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('node-20') } });
  });
});

const owned = (t: SandboxTemplate, extra: Partial<NetworkPolicy['metadata']> = {}, spec = desiredNetworkPolicy(t)!.spec): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: {
    name: 'python-network-policy',
    namespace: NS,
    uid: 'np-uid',
    resourceVersion: '7',
    ownerReferences: [ownerRef('SandboxTemplate', 'python', 'tpl-uid')],
    ...extra,
  },
  spec,
});
const foreign = (t: SandboxTemplate) => owned(t, { ownerReferences: [] }, defaultSandboxNetworkPolicySpec('python'));

describe('networkPolicyAction', () => {
  const managed = template();
  const unmanaged = template({ networkPolicyManagement: 'Unmanaged' });
  const custom = template({ networkPolicy: CUSTOM });

  test.each<[string, SandboxTemplate, NetworkPolicy | undefined, NetworkPolicyAction['type']]>([
    ['Managed, missing: create', managed, undefined, 'create'],
    ['Managed, up to date: nothing', managed, owned(managed), 'none'],
    ['Managed, drifted: update', managed, owned(managed, {}, { podSelector: {}, policyTypes: ['Ingress'] }), 'update'],
    ['switched to custom rules: update', custom, owned(managed), 'update'],
    ['Managed, foreign owner: conflict', managed, foreign(managed), 'conflict'],
    ['Managed, owned by another template UID: conflict', managed, owned(managed, { ownerReferences: [ownerRef('SandboxTemplate', 'python', 'old-uid')] }), 'conflict'],
    ['Managed, owned but not as controller: conflict', managed, owned(managed, { ownerReferences: [ownerRef('SandboxTemplate', 'python', 'tpl-uid', false)] }), 'conflict'],
    ['Managed, being deleted: wait', managed, owned(managed, { deletionTimestamp: '2026-09-01T11:00:00Z' }), 'none'],
    ['Unmanaged, owned: delete', unmanaged, owned(managed), 'delete'],
    ['Unmanaged, owned and already deleting: nothing', unmanaged, owned(managed, { deletionTimestamp: '2026-09-01T11:00:00Z' }), 'none'],
    ['Unmanaged, foreign: leave it', unmanaged, foreign(managed), 'none'],
    ['Unmanaged, missing: nothing', unmanaged, undefined, 'none'],
  ])('%s', (_, t, existing, type) => {
    expect(networkPolicyAction(t, existing).type).toBe(type);
  });

  test('update keeps the resourceVersion precondition and foreign metadata, drops managedFields', () => {
    const existing = owned(managed, { labels: { audited: 'yes' }, managedFields: [{ manager: 'x' }] }, { podSelector: {}, policyTypes: [] });
    const { apiVersion, kind, ...rest } = existing;
    const action = networkPolicyAction(managed, rest as NetworkPolicy);
    expect(action.type).toBe('update');
    const object = (action as { object: NetworkPolicy }).object;
    expect(object.metadata.resourceVersion).toBe('7');
    expect(object.metadata.labels).toEqual({ audited: 'yes' });
    expect(object.metadata.managedFields).toBeUndefined();
    expect(object.spec).toEqual(desiredNetworkPolicy(managed)!.spec);
    expect([object.apiVersion, object.kind]).toEqual([apiVersion, kind]);
  });

  test('delete names the UID, so a namesake created meanwhile survives', () => {
    expect(networkPolicyAction(unmanaged, owned(managed))).toEqual({ type: 'delete', name: 'python-network-policy', uid: 'np-uid' });
  });

  test('the conflict message says how to fix it', () => {
    const action = networkPolicyAction(managed, foreign(managed));
    expect(action).toMatchObject({ type: 'conflict' });
    expect((action as { message: string }).message).toMatch(/not controlled by SandboxTemplate "python".*Unmanaged/);
  });

  test('server-defaulted port protocols and dropped empty lists are not drift', () => {
    const noProtocol = template({ networkPolicy: { ingress: [{ ports: [{ port: 80 } as never] }], egress: [] } });
    const asStored = owned(noProtocol, {}, {
      podSelector: sandboxTemplateSelector('python'),
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ ports: [{ protocol: 'TCP', port: 80 }] }],
    });
    expect(networkPolicyAction(noProtocol, asStored)).toEqual({ type: 'none', reason: 'up to date' });
  });

  const peer = fc.record({ podSelector: fc.constant({ matchLabels: { app: 'x' } }) }, { requiredKeys: [] });
  const port = fc.record({ protocol: fc.constantFrom('TCP', 'UDP'), port: fc.integer({ min: 1, max: 65535 }) });
  const rule = fc.record({ from: fc.array(peer, { maxLength: 2 }), ports: fc.array(port, { maxLength: 2 }) });
  const rules = fc.option(fc.array(rule, { maxLength: 3 }), { nil: undefined });
  const arbTemplate = fc.record({
    management: fc.constantFrom(undefined, 'Managed', 'Unmanaged'),
    policy: fc.option(
      fc.record({ ingress: rules, egress: rules.map((r) => r?.map(({ from, ports }) => ({ to: from, ports }))) }),
      { nil: undefined },
    ),
  }).map(({ management, policy }) => template({
    ...(management ? { networkPolicyManagement: management } : {}),
    ...(policy ? { networkPolicy: JSON.parse(JSON.stringify(policy)) } : {}),
  }));
  const arbExisting = fc.option(fc.record({
    owner: fc.constantFrom('template', 'foreign', 'none'),
    from: arbTemplate,
    deleting: fc.boolean(),
  }), { nil: undefined });

  /** The API server's view after performing `action` on `existing`. */
  function perform(action: NetworkPolicyAction, existing: NetworkPolicy | undefined): NetworkPolicy | undefined {
    switch (action.type) {
      case 'create': return { ...action.object, metadata: { ...action.object.metadata, uid: 'new', resourceVersion: '1' } };
      case 'update': return action.object;
      case 'delete': return undefined;
      default: return existing;
    }
  }

  test('converges in one step and never touches a policy it does not control (fast-check)', () => {
    fc.assert(fc.property(arbTemplate, arbExisting, (t, e) => {
      let existing: NetworkPolicy | undefined;
      if (e) {
        const base = desiredNetworkPolicy(e.from) ?? desiredNetworkPolicy(template())!;
        const refs = e.owner === 'template' ? [ownerRef('SandboxTemplate', 'python', 'tpl-uid')] : e.owner === 'foreign' ? [ownerRef('Other', 'x', 'u')] : [];
        existing = { ...base, metadata: { ...base.metadata, uid: 'np', resourceVersion: '3', ownerReferences: refs, ...(e.deleting ? { deletionTimestamp: 'x' } : {}) } };
      }
      const action = networkPolicyAction(t, existing);
      const ours = existing === undefined || (e!.owner === 'template' && !e!.deleting);
      // A policy someone else controls, or one being deleted, is never written.
      if (!ours) expect(['none', 'conflict']).toContain(action.type);
      if (action.type === 'update') expect(action.object.metadata.resourceVersion).toBe('3');
      if (!ours) return;
      // One step reaches the fixed point: the policy is the desired one, or gone when Unmanaged.
      const after = perform(action, existing);
      expect(networkPolicyAction(t, after).type).toBe('none');
      const desired = desiredNetworkPolicy(t);
      if (desired) expect(after!.spec).toEqual(desired.spec);
      else expect(after).toBeUndefined();
    }));
  });
});

describe('templateRefHashLabelPatch', () => {
  test('adds the label when missing or wrong, nothing when right', () => {
    const hash = NameHash.of('python');
    expect(templateRefHashLabelPatch(template())).toEqual({ metadata: { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: hash } } });
    expect(templateRefHashLabelPatch(template({}, { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: 'deadbeef' } }))).toBeDefined();
    expect(templateRefHashLabelPatch(template({}, { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: hash } }))).toBeUndefined();
  });

  test('applying the patch is a fixed point and keeps other labels (fast-check)', () => {
    fc.assert(fc.property(
      fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/),
      fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.string({ maxLength: 5 })),
      (name, labels) => {
        const t = template({}, { name, labels });
        const patch = templateRefHashLabelPatch(t);
        const after = patch ? applyMergePatch(t, patch) : t;
        expect(templateRefHashLabelPatch(after)).toBeUndefined();
        expect(after.metadata.labels).toEqual({ ...labels, [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of(name) });
      },
    ));
  });
});
