import * as fc from 'fast-check';
import { FLAGS, GRACE, NOW, NameHash, SandboxLabels, TEMPLATE, iso, member, notReady, pool, ready, template, unschedulable } from './fixtures';
import { classifyMembers, notReadySinceMs, type PoolMembers } from '../../../src/controllers/warm-pool/classify';
import { type Sandbox, type SandboxWarmPool } from '../../../src/model';
import { templateFingerprint, isStale, staleCheck } from '../../../src/model/blueprint';

const NEW_IMAGE = template({ podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });
const GROUPS = ['active', 'ready', 'terminating', 'stale', 'staleKept', 'stuck', 'unschedulableHeld', 'orphansToAdopt', 'orphansToDelete', 'needsLaunchTypeLabel'] as const;
type Group = typeof GROUPS[number];

/** The groups a single Sandbox lands in. */
function groupsOf(members: PoolMembers, s: Sandbox): Group[] {
  return GROUPS.filter((g) => members[g].includes(s));
}

interface Case {
  readonly name: string;
  readonly sandbox: Sandbox;
  readonly pool?: SandboxWarmPool;
  readonly template?: typeof TEMPLATE | null;
  readonly pendingDelete?: boolean;
  readonly groups: Group[];
}

const recreate = pool({ updateStrategy: { type: 'Recreate' } });
const CASES: Case[] = [
  { name: 'Ready member', sandbox: member(), groups: ['active', 'ready'] },
  { name: 'young not-Ready member', sandbox: member({ conditions: [notReady(iso(NOW - 1000))], age: 1000 }), groups: ['active'] },
  { name: 'not Ready past the grace period: stuck', sandbox: member({ conditions: [notReady(iso(NOW - GRACE))], age: GRACE }), groups: ['stuck'] },
  { name: 'no conditions at all, old: stuck', sandbox: member({ conditions: [], age: GRACE + 1 }), groups: ['stuck'] },
  {
    name: 'was Ready, lost it recently: a full grace period to recover',
    sandbox: member({ conditions: [notReady(iso(NOW - 1000))], age: 10 * GRACE }),
    groups: ['active'],
  },
  { name: 'unschedulable past the grace period: held', sandbox: member({ conditions: unschedulable(), age: 2 * GRACE }), groups: ['active', 'unschedulableHeld'] },
  { name: 'unschedulable but young: just not Ready yet', sandbox: member({ conditions: unschedulable(iso(NOW - 1000)), age: 1000 }), groups: ['active'] },
  { name: 'deleting: terminating', sandbox: member({ deleting: true }), groups: ['terminating'] },
  { name: 'delete issued, cache behind: terminating', sandbox: member(), pendingDelete: true, groups: ['terminating'] },
  { name: 'owned by a claim: not ours', sandbox: member({ owner: 'claim' }), groups: [] },
  { name: 'owned by an earlier pool of the same name: not ours', sandbox: member({ owner: 'old-pool' }), groups: [] },
  { name: 'another pool\'s label: not ours', sandbox: member({ labels: { [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of('other') } }), groups: [] },
  { name: 'no pool label: not ours', sandbox: member({ labels: { [SandboxLabels.WARM_POOL_SANDBOX]: undefined } }), groups: [] },
  { name: 'another namespace: not ours', sandbox: { ...member(), metadata: { ...member().metadata, namespace: 'other' } }, groups: [] },
  { name: 'missing launch-type: labelled', sandbox: member({ labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } }), groups: ['active', 'ready', 'needsLaunchTypeLabel'] },
  { name: 'stuck and unlabelled: deleted, not labelled', sandbox: member({ conditions: [], age: GRACE + 1, labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } }), groups: ['stuck'] },
  // Staleness.
  { name: 'OnReplenish, old blueprint: kept and claimable', sandbox: member({ template: NEW_IMAGE }), groups: ['active', 'ready', 'staleKept'] },
  { name: 'Recreate, old blueprint: deleted', pool: recreate, sandbox: member({ template: NEW_IMAGE, pool: recreate }), groups: ['stale'] },
  { name: 'Recreate, label-only template edit: fresh', pool: recreate, sandbox: member({ pool: recreate, template: template({ podTemplate: { metadata: { labels: { team: 'z' } }, spec: TEMPLATE.spec.podTemplate.spec } }) }), groups: ['active', 'ready'] },
  {
    name: 'Recreate, hash label from upstream but same blueprint: fresh by comparison',
    pool: recreate,
    sandbox: member({ pool: recreate, labels: { [SandboxLabels.SANDBOX_TEMPLATE_HASH]: 'c0ffee00' } }),
    groups: ['active', 'ready'],
  },
  { name: 'Recreate, other template ref: stale', pool: recreate, sandbox: member({ pool: recreate, labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: NameHash.of('node') } }), groups: ['stale'] },
  { name: 'Recreate, template missing: nothing judged stale', pool: recreate, template: null, sandbox: member({ pool: recreate, template: NEW_IMAGE }), groups: ['active', 'ready'] },
  // Orphans.
  { name: 'matching orphan: adopted and counted', sandbox: member({ owner: 'none' }), groups: ['active', 'ready', 'orphansToAdopt'] },
  { name: 'orphan with a forged hash label: compared, found stale, deleted', sandbox: member({ owner: 'none', template: NEW_IMAGE, labels: { [SandboxLabels.SANDBOX_TEMPLATE_HASH]: templateFingerprint(TEMPLATE).hash } }), groups: ['orphansToDelete'] },
  { name: 'orphan under OnReplenish with an old blueprint: deleted', sandbox: member({ owner: 'none', template: NEW_IMAGE }), groups: ['orphansToDelete'] },
  { name: 'orphan, template missing: left alone', template: null, sandbox: member({ owner: 'none' }), groups: [] },
  { name: 'orphan being deleted by someone else: not counted', sandbox: member({ owner: 'none', deleting: true }), groups: [] },
  { name: 'orphan whose delete we issued: terminating', sandbox: member({ owner: 'none', template: NEW_IMAGE }), pendingDelete: true, groups: ['terminating'] },
  { name: 'orphan not Ready past the grace period: adopted first', sandbox: member({ owner: 'none', conditions: [], age: 2 * GRACE }), groups: ['active', 'orphansToAdopt'] },
];

describe('classifyMembers', () => {
  test.each(CASES)('$name', (c) => {
    const t = c.template === null ? undefined : c.template ?? TEMPLATE;
    const pending = new Set(c.pendingDelete ? [c.sandbox.metadata.uid!] : []);
    const members = classifyMembers(c.pool ?? pool(), t, [c.sandbox], NOW, FLAGS, pending);
    expect(groupsOf(members, c.sandbox)).toEqual(c.groups);
  });

  test('the next stuck check is when the youngest not-Ready member reaches the grace period', () => {
    const a = member({ conditions: [notReady(iso(NOW - 1000))], age: 1000 });
    const b = member({ conditions: [notReady(iso(NOW - 5000))], age: 5000 });
    expect(classifyMembers(pool(), TEMPLATE, [a, b, member()], NOW, FLAGS).nextStuckCheckAtMs).toBe(NOW - 5000 + GRACE);
    expect(classifyMembers(pool(), TEMPLATE, [member()], NOW, FLAGS).nextStuckCheckAtMs).toBeUndefined();
  });

  test('with what this process watched: stuck only when not Ready for the grace period by both the timestamps and the watch', () => {
    // Born an hour ago by this process's wall clock (a clock ahead of the API server's): not stuck while watched for less than the grace.
    const skewed = member({ conditions: [], age: 3_600_000 });
    const watched = (ms: number | undefined) => () => ms;
    expect(groupsOf(classifyMembers(pool(), TEMPLATE, [skewed], NOW, FLAGS, new Set(), watched(0)), skewed)).toEqual(['active']);
    expect(classifyMembers(pool(), TEMPLATE, [skewed], NOW, FLAGS, new Set(), watched(1000)).nextStuckCheckAtMs).toBe(NOW + GRACE - 1000);
    expect(groupsOf(classifyMembers(pool(), TEMPLATE, [skewed], NOW, FLAGS, new Set(), watched(GRACE)), skewed)).toEqual(['stuck']);
    // Not seen by this process at all counts as seen just now.
    expect(groupsOf(classifyMembers(pool(), TEMPLATE, [skewed], NOW, FLAGS, new Set(), watched(undefined)), skewed)).toEqual(['active']);
    // The timestamps still bound it: watched long, but born a moment ago, is not stuck.
    const young = member({ conditions: [], age: 1000 });
    expect(classifyMembers(pool(), TEMPLATE, [young], NOW, FLAGS, new Set(), watched(10 * GRACE)).nextStuckCheckAtMs).toBe(NOW - 1000 + GRACE);
    // A Ready transition stamped an hour ahead (the clock stepped back since): the watch alone decides.
    const ahead = member({ conditions: [notReady(iso(NOW + 3_600_000))], age: 3_600_000 });
    expect(groupsOf(classifyMembers(pool(), TEMPLATE, [ahead], NOW, FLAGS, new Set(), watched(GRACE)), ahead)).toEqual(['stuck']);
    expect(classifyMembers(pool(), TEMPLATE, [ahead], NOW, FLAGS, new Set(), watched(0)).nextStuckCheckAtMs).toBe(NOW + GRACE);
    // The negative control: by the timestamps alone (no watch given), the skewed member is stuck at once.
    expect(groupsOf(classifyMembers(pool(), TEMPLATE, [skewed], NOW, FLAGS), skewed)).toEqual(['stuck']);
  });

  test('notReadySinceMs is the later of creation and the last Ready transition', () => {
    expect(notReadySinceMs(member({ age: 10_000, conditions: [notReady(iso(NOW - 2000))] }))).toBe(NOW - 2000);
    expect(notReadySinceMs(member({ age: 10_000, conditions: [] }))).toBe(NOW - 10_000);
  });

  test('isStale: a matching hash label settles it for members, never for orphans', () => {
    const forged = member({ template: NEW_IMAGE, labels: { [SandboxLabels.SANDBOX_TEMPLATE_HASH]: templateFingerprint(TEMPLATE).hash } });
    expect(isStale(forged, 'python', templateFingerprint(TEMPLATE), false)).toBe(false);
    expect(isStale(forged, 'python', templateFingerprint(TEMPLATE), true)).toBe(true);
  });

  test('staleCheck: one comparison per old hash label answers for every member built with it', () => {
    const check = staleCheck('python', templateFingerprint(NEW_IMAGE));
    const old = member();
    // Same label, different spec: only possible if someone edited a member by hand; the memo answers from the first.
    const edited = { ...old, spec: { ...old.spec, podTemplate: { ...old.spec.podTemplate, spec: NEW_IMAGE.spec.podTemplate.spec } } };
    expect(check(old, false)).toBe(true);
    expect(check(edited, false)).toBe(true);
    // Orphans are never answered from the memo.
    expect(check(member({ owner: 'none', template: NEW_IMAGE, labels: { [SandboxLabels.SANDBOX_TEMPLATE_HASH]: old.metadata.labels![SandboxLabels.SANDBOX_TEMPLATE_HASH] } }), true)).toBe(false);
  });

  test('staleCheck agrees with isStale for members built from templates (fast-check)', () => {
    const templates = [TEMPLATE, NEW_IMAGE, template({ service: true }), template({ networkPolicyManagement: 'Unmanaged' })];
    const arbSpecs = fc.array(fc.record({ t: fc.integer({ min: 0, max: 3 }), orphan: fc.boolean() }), { maxLength: 10 });
    fc.assert(fc.property(fc.integer({ min: 0, max: 3 }), arbSpecs, (current, specs) => {
      const fp = templateFingerprint(templates[current]);
      const check = staleCheck('python', fp);
      for (const s of specs) {
        const m = member({ template: templates[s.t], owner: s.orphan ? 'none' : 'pool' });
        expect(check(m, s.orphan)).toBe(isStale(m, 'python', fp, s.orphan));
      }
    }));
  });

  const arbMember = fc.record({
    owner: fc.constantFrom('pool', 'none', 'claim', 'old-pool') as fc.Arbitrary<'pool' | 'none' | 'claim' | 'old-pool'>,
    state: fc.constantFrom('ready', 'young', 'stuck', 'unschedulable'),
    old: fc.boolean(),
    deleting: fc.boolean(),
    pending: fc.boolean(),
    unlabelled: fc.boolean(),
  });

  test('partition: every Sandbox of the pool lands in exactly one of active/terminating/stale/stuck/orphansToDelete, or none if not ours (fast-check)', () => {
    fc.assert(fc.property(fc.array(arbMember, { maxLength: 12 }), fc.boolean(), fc.boolean(), (specs, isRecreate, haveTemplate) => {
      const p = isRecreate ? recreate : pool();
      const sandboxes = specs.map((s) => member({
        pool: p,
        owner: s.owner,
        deleting: s.deleting,
        template: s.old ? NEW_IMAGE : TEMPLATE,
        age: s.state === 'young' ? 1000 : 2 * GRACE,
        conditions: s.state === 'ready' ? [ready()] : s.state === 'unschedulable' ? unschedulable() : [notReady(iso(NOW - (s.state === 'young' ? 1000 : 2 * GRACE)))],
        ...(s.unlabelled ? { labels: { [SandboxLabels.LAUNCH_TYPE]: undefined } } : {}),
      }));
      const pending = new Set(sandboxes.filter((_, i) => specs[i].pending).map((s) => s.metadata.uid!));
      const m = classifyMembers(p, haveTemplate ? TEMPLATE : undefined, sandboxes, NOW, FLAGS, pending);
      sandboxes.forEach((s, i) => {
        const primary = (['active', 'terminating', 'stale', 'stuck', 'orphansToDelete'] as const).filter((g) => m[g].includes(s));
        const foreign = specs[i].owner === 'claim' || specs[i].owner === 'old-pool';
        expect(primary.length).toBeLessThanOrEqual(1);
        if (foreign) expect(groupsOf(m, s)).toEqual([]);
        if (specs[i].owner === 'pool') expect(primary.length).toBe(1);
      });
      // Subsets of active.
      for (const g of ['ready', 'staleKept', 'unschedulableHeld', 'orphansToAdopt', 'needsLaunchTypeLabel'] as const) {
        for (const s of m[g]) expect(m.active).toContain(s);
      }
      // Nothing is deleted for being stale without a template; Recreate alone deletes stale members.
      if (!haveTemplate) expect([...m.stale, ...m.orphansToDelete]).toEqual([]);
      if (!isRecreate) expect(m.stale).toEqual([]);
    }));
  });
});
