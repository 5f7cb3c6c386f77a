import * as fc from 'fast-check';
import { controllerFlag, parseControllerFlagValue } from '#api/controller-flags';
import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { defaultSandboxNetworkPolicySpec, networkPolicyNameFor, sandboxTemplateSelector } from '#api/network-policy-defaults';
import { NS, ownerRef, template } from './fixtures';
import { OperatorFlags } from '../../../src/commands/controller-flags';
import { desiredNetworkPolicy, templateRefHashLabelPatch } from '../../../src/controllers/template/desired';
import { networkPolicyAction, orphanedPolicyAction, templateConditions, type NetworkPolicyAction } from '../../../src/controllers/template/plan';
import { routerLocation } from '../../../src/controllers/template-policy';
import { applyMergePatch, type Condition, type NetworkPolicy, type SandboxTemplate } from '../../../src/model';

const CUSTOM = {
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 8080 }] }],
  egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
};

describe('desiredNetworkPolicy', () => {
  test('Managed without rules: the secure default, named after the template, marked as its policy, with no ownerReference for GC to act on', () => {
    const policy = desiredNetworkPolicy(template())!;
    expect(policy.metadata).toEqual({
      name: 'python-network-policy',
      namespace: NS,
      labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') },
      annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'python' },
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
    expect(routerLocation(new OperatorFlags({}), undefined)).toEqual({ routerNamespace: 'agent-sandbox-system', routerPodLabels: undefined, clusterCidrs: [] });
    expect(routerLocation(new OperatorFlags({}), 'ops')).toEqual({ routerNamespace: 'ops', routerPodLabels: undefined, clusterCidrs: [] });
    expect(routerLocation(new OperatorFlags({ 'router-namespace': 'edge', 'router-pod-labels': 'app=r,tier=edge' }), 'ops'))
      .toEqual({ routerNamespace: 'edge', routerPodLabels: { app: 'r', tier: 'edge' }, clusterCidrs: [] });
    const spec = desiredNetworkPolicy(template(), routerLocation(new OperatorFlags({}), 'ops'))!.spec;
    expect(spec).toEqual(defaultSandboxNetworkPolicySpec('python', 'ops', { app: 'sandbox-router' }));
  });

  test('--cluster-cidrs reaches the default policy: its public-internet egress leaves those ranges out too', () => {
    const location = routerLocation(new OperatorFlags({ 'cluster-cidrs': '198.18.0.0/15, fd00:10::/56' }), 'ops');
    expect(location.clusterCidrs).toEqual(['198.18.0.0/15', 'fd00:10::/56']);
    const [v4, v6] = desiredNetworkPolicy(template(), location)!.spec.egress![0].to!.map((p) => p.ipBlock!.except);
    expect(v4).toContain('198.18.0.0/15');
    expect(v6).toContain('fd00:10::/56');
    // Custom rules are the user's, verbatim: the flag does not reach them.
    const custom = desiredNetworkPolicy(template({ networkPolicy: CUSTOM }), location)!.spec;
    expect(JSON.stringify(custom)).not.toContain('198.18.0.0/15');
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

  test('a template name too long for upstream\'s policy name: the bounded name, the full name in the annotation', () => {
    const name = 'x'.repeat(250);
    const policy = desiredNetworkPolicy(template({}, { name }))!;
    expect(policy.metadata.name).toBe(networkPolicyNameFor(name));
    expect(policy.metadata.name.length).toBeLessThanOrEqual(253);
    expect(policy.metadata.annotations).toEqual({ [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: name });
  });

  test('any Managed template: marked as its policy, selects its Pods, both directions (fast-check)', () => {
    fc.assert(fc.property(
      fc.stringMatching(/^[a-z][a-z0-9-]{0,40}$/),
      fc.constantFrom(undefined, 'Managed', 'Unmanaged'),
      fc.option(fc.record({ egress: fc.constant(CUSTOM.egress) }, { requiredKeys: [] }), { nil: undefined }),
      (name, management, networkPolicy) => {
        const t = template({ ...(management ? { networkPolicyManagement: management } : {}), ...(networkPolicy ? { networkPolicy } : {}) }, { name, uid: `${name}-uid` });
        const policy = desiredNetworkPolicy(t);
        if (management === 'Unmanaged') return expect(policy).toBeUndefined();
        expect(policy!.metadata.name).toBe(`${name}-network-policy`);
        expect(policy!.metadata.ownerReferences).toBeUndefined();
        expect(policy!.metadata.annotations).toEqual({ [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: name });
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
    ...desiredNetworkPolicy(template())!.metadata,
    uid: 'np-uid',
    resourceVersion: '7',
    ...extra,
  },
  spec,
});
const foreign = (t: SandboxTemplate) => owned(t, { labels: undefined, annotations: undefined }, defaultSandboxNetworkPolicySpec('python'));
/** What upstream (and this operator before) wrote: a controller reference to the template, no marks. */
const legacy = (t: SandboxTemplate, uid = 'tpl-uid') => owned(t, { labels: undefined, annotations: undefined, ownerReferences: [ownerRef('SandboxTemplate', 'python', uid)] });

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
    ['Managed, upstream\'s policy controlled by the template: update (take the ownerReference off)', managed, legacy(managed), 'update'],
    ['Managed, controlled by an earlier namesake template: update (same name, same selector)', managed, legacy(managed, 'old-uid'), 'update'],
    ['Managed, marked for another template: conflict', managed, owned(managed, { annotations: { [SandboxAnnotations.SANDBOX_TEMPLATE_REF]: 'ruby' } }), 'conflict'],
    ['Managed, a template reference but not as controller: conflict', managed, owned(managed, { labels: undefined, annotations: undefined, ownerReferences: [ownerRef('SandboxTemplate', 'python', 'tpl-uid', false)] }), 'conflict'],
    ['Managed, being deleted: wait', managed, owned(managed, { deletionTimestamp: '2026-09-01T11:00:00Z' }), 'none'],
    ['Unmanaged, owned: delete', unmanaged, owned(managed), 'delete'],
    ['Unmanaged, upstream\'s policy: delete', unmanaged, legacy(managed), 'delete'],
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
    expect(object.metadata.labels).toEqual({ audited: 'yes', [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('python') });
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
    expect((action as { message: string }).message).toMatch(/is not the policy of SandboxTemplate "python".*Unmanaged/);
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
    owner: fc.constantFrom('template', 'legacy', 'foreign', 'none'),
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
        const refs = e.owner === 'legacy' ? [ownerRef('SandboxTemplate', 'python', 'tpl-uid')] : e.owner === 'foreign' ? [ownerRef('Other', 'x', 'u')] : [];
        const marks = e.owner === 'template' ? {} : { labels: undefined, annotations: undefined };
        existing = { ...base, metadata: { ...base.metadata, ...marks, uid: 'np', resourceVersion: '3', ownerReferences: refs, ...(e.deleting ? { deletionTimestamp: 'x' } : {}) } };
      }
      const action = networkPolicyAction(t, existing);
      const ours = existing === undefined || ((e!.owner === 'template' || e!.owner === 'legacy') && !e!.deleting);
      // A policy someone else controls, or one being deleted, is never written.
      if (!ours) expect(['none', 'conflict']).toContain(action.type);
      if (action.type === 'update') expect(action.object.metadata.resourceVersion).toBe('3');
      if (!ours) return;
      // One step reaches the fixed point: the policy is the desired one, or gone when Unmanaged.
      const after = perform(action, existing);
      expect(networkPolicyAction(t, after).type).toBe('none');
      const desired = desiredNetworkPolicy(t);
      if (desired) expect(after!.spec).toEqual(desired.spec);
      // Nothing a garbage collector would delete with the template.
      if (desired) expect(after!.metadata.ownerReferences ?? []).toEqual([]);
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

describe('orphanedPolicyAction: the policy of a deleted template', () => {
  const policy = owned(template());
  test.each<[string, NetworkPolicy | undefined, number, NetworkPolicyAction['type']]>([
    ['Sandboxes built from it remain: kept', policy, 2, 'none'],
    ['none remains: deleted', policy, 0, 'delete'],
    ['already being deleted: nothing', owned(template(), { deletionTimestamp: '2026-09-01T11:00:00Z' }), 0, 'none'],
    ['someone else\'s policy under that name: never touched', foreign(template()), 0, 'none'],
    ['upstream\'s, still controlled by the template: garbage collection\'s business', legacy(template()), 0, 'none'],
    ['no policy: nothing', undefined, 0, 'none'],
  ])('%s', (_, existing, left, type) => {
    expect(orphanedPolicyAction('python', existing, left).type).toBe(type);
  });

  test('the delete names the UID, so a policy a new namesake template created meanwhile survives', () => {
    expect(orphanedPolicyAction('python', policy, 0)).toEqual({ type: 'delete', name: 'python-network-policy', uid: 'np-uid' });
    expect(orphanedPolicyAction('python', policy, 1)).toMatchObject({ reason: expect.stringMatching(/1 Sandbox\(es\) built from the deleted template/) });
  });
});

describe('templateConditions', () => {
  const conditionsOf = (t: SandboxTemplate, existing: NetworkPolicy | undefined, router?: Record<string, string>) =>
    templateConditions(t, existing, networkPolicyAction(t, existing), router, Date.parse('2026-09-01T12:00:00Z'));
  const byType = (list: Condition[]) => Object.fromEntries(list.map((c) => [c.type, `${c.status}/${c.reason}`]));

  test.each<[string, SandboxTemplate, NetworkPolicy | undefined, string]>([
    ['Managed, policy in the cache', template(), owned(template()), 'True/NetworkPolicyReady'],
    ['Managed, policy about to be created', template(), undefined, 'False/NetworkPolicyPending'],
    ['Managed, policy being deleted', template(), owned(template(), { deletionTimestamp: '2026-09-01T11:00:00Z' }), 'False/NetworkPolicyPending'],
    ['Managed, someone else\'s policy under the name', template(), foreign(template()), 'False/NetworkPolicyConflict'],
    ['Unmanaged', template({ networkPolicyManagement: 'Unmanaged' }), undefined, 'True/Unmanaged'],
  ])('NetworkPolicyReady: %s', (_, t, existing, expected) => {
    expect(byType(conditionsOf(t, existing)).NetworkPolicyReady).toBe(expected);
  });

  test('PodLabelsAllowed is False, naming the label and the fix, when the Pods would carry the router\'s labels', () => {
    const spoof = template({ podTemplate: { metadata: { labels: { app: 'sandbox-router' } }, spec: { containers: [{ name: 'main', image: 'i' }] } } });
    const [, labels] = conditionsOf(spoof, owned(spoof));
    expect(labels).toMatchObject({ type: 'PodLabelsAllowed', status: 'False', reason: 'RouterLabelsRefused', observedGeneration: expect.any(Number) });
    expect(labels.message).toMatch(/spec.podTemplate.metadata.labels carries app=sandbox-router.*remove it/);
    expect(byType(conditionsOf(template(), owned(template()))).PodLabelsAllowed).toBe('True/NoRouterLabels');
    // Configured router labels: any one of them is refused, so a claim cannot add the rest.
    const partial = template({ podTemplate: { metadata: { labels: { app: 'r' } }, spec: { containers: [{ name: 'main', image: 'i' }] } } });
    expect(byType(conditionsOf(partial, owned(partial), { app: 'r', tier: 'edge' })).PodLabelsAllowed).toBe('False/RouterLabelsRefused');
    expect(byType(conditionsOf(partial, owned(partial), { app: 'r' })).PodLabelsAllowed).toBe('False/RouterLabelsRefused');
    expect(byType(conditionsOf(partial, owned(partial), { tier: 'edge' })).PodLabelsAllowed).toBe('True/NoRouterLabels');
  });
});
