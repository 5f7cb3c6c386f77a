import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, TEMPLATE, claim, iso, member, notReady, ownerRef, pool, template, unschedulable } from './fixtures';
import { CandidateRanking, claimPath, isAdoptable, needsColdStart, pendingStuck, type Selection, type SelectionContext, type StuckCheck } from '../../../src/controllers/claim/select';
import { isReady, type Sandbox } from '../../../src/model';
import { templateFingerprint } from '../../../src/model/blueprint';

/** Members made at or before `cutoffMs` count as stuck (timestamps alone). */
const madeBy = (cutoffMs: number): StuckCheck => (s: Sandbox) => Date.parse(s.metadata.creationTimestamp ?? '') <= cutoffMs;

const NEW_IMAGE = template({ podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });
const CTX: SelectionContext = { claim: claim(), poolUid: 'pool-uid', templateName: 'python', fingerprint: templateFingerprint(TEMPLATE) };
const warm = (name: string, o: Parameters<typeof member>[0] = {}) => member({ name, podIPs: ['10.0.0.1'], nodeName: 'n1', ...o });
const picked = (s: Selection) => (s.kind === 'candidate' ? s.sandbox.metadata.name : s.kind);
type PickContext = SelectionContext & { readonly exclude?: ReadonlySet<string> };
const selectCandidate = (members: Sandbox[], strategy: string | undefined, ctx: PickContext) =>
  new CandidateRanking(members, strategy, ctx).best(ctx.exclude);

describe('isAdoptable', () => {
  const c = claim();
  test.each<[string, Sandbox, boolean]>([
    ['an unclaimed member of the pool', warm('a'), true],
    ['another namespace', { ...warm('a'), metadata: { ...warm('a').metadata, namespace: 'x' } }, false],
    ['being deleted', warm('a', { deleting: true }), false],
    ['another pool\'s label', warm('a', { labels: { [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of('x') } }), false],
    ['no template-ref label', warm('a', { labels: { [SandboxLabels.SANDBOX_TEMPLATE_REF_HASH]: undefined } }), false],
    ['owned by a claim', warm('a', { owner: 'claim' }), false],
    ['an orphan', warm('a', { owner: 'none' }), false],
    ['a v1alpha1-era pool ref still counts', { ...warm('a'), metadata: { ...warm('a').metadata, ownerReferences: [{ ...ownerRef('SandboxWarmPool', 'py-pool', 'pool-uid'), apiVersion: 'extensions.agents.x-k8s.io/v1alpha1' }] } }, true],
  ])('%s', (_, s, expected) => {
    expect(isAdoptable(s, c)).toBe(expected);
  });

  test('a pool UID, when known, must match (members of a deleted pool of the same name are refused)', () => {
    expect(isAdoptable(warm('a', { owner: 'old-pool' }), c)).toBe(true);
    expect(isAdoptable(warm('a', { owner: 'old-pool' }), c, 'pool-uid')).toBe(false);
  });
});

describe('CandidateRanking', () => {
  test.each<[string, Sandbox[], string | undefined, Partial<PickContext>, string]>([
    ['empty pool', [], undefined, {}, 'none'],
    ['the Ready one over an older starting one', [warm('starting', { conditions: [notReady()], age: 90_000 }), warm('ready', { age: 1000 })], undefined, {}, 'ready'],
    ['a starting one with an IP beats a cold start', [warm('starting', { conditions: [notReady()] })], undefined, {}, 'starting'],
    ['no IPs anywhere: wait for the network', [member({ name: 'a' }), member({ name: 'b' })], undefined, {}, 'network-pending'],
    ['no IP is never taken, even if Ready', [member({ name: 'no-ip' }), warm('starting', { conditions: [notReady()] })], undefined, {}, 'starting'],
    ['the oldest among equals', [warm('young', { age: 1000 }), warm('old', { age: 50_000 })], undefined, {}, 'old'],
    ['excluded ones are skipped', [warm('taken', { age: 50_000 }), warm('free', { age: 1000 })], undefined, { exclude: new Set(['taken-uid']) }, 'free'],
    ['OnReplenish: current before stale', [warm('stale', { template: NEW_IMAGE, age: 90_000 }), warm('fresh', { age: 1000 })], undefined, {}, 'fresh'],
    ['OnReplenish: stale rather than nothing', [warm('stale', { template: NEW_IMAGE })], 'OnReplenish', {}, 'stale'],
    ['OnReplenish: Ready stale before starting current', [warm('stale', { template: NEW_IMAGE }), warm('starting', { conditions: [notReady()] })], undefined, {}, 'stale'],
    ['Recreate: never stale', [warm('stale', { template: NEW_IMAGE })], 'Recreate', {}, 'none'],
    ['Recreate: current ones are fine', [warm('stale', { template: NEW_IMAGE }), warm('fresh')], 'Recreate', {}, 'fresh'],
    ['Recreate with the template unknown: nothing', [warm('fresh')], 'Recreate', { fingerprint: undefined }, 'none'],
    ['another pool UID is refused', [warm('old', { owner: 'old-pool' })], undefined, {}, 'none'],
  ])('%s', (_, candidates, strategy, ctx, expected) => {
    expect(picked(selectCandidate(candidates, strategy, { ...CTX, ...ctx }))).toBe(expected);
  });

  test('spread: from the node holding the most candidates, then the oldest there', () => {
    const candidates = [
      warm('n1-old', { nodeName: 'n1', age: 90_000 }),
      warm('n2-a', { nodeName: 'n2', age: 10_000 }),
      warm('n2-b', { nodeName: 'n2', age: 20_000 }),
    ];
    expect(picked(selectCandidate(candidates, undefined, CTX))).toBe('n2-b');
    expect(picked(selectCandidate(candidates.slice(0, 2), undefined, CTX))).toBe('n1-old');
  });

  test('down the ranking as picks are excluded, node spread judged over the members left', () => {
    const ranking = new CandidateRanking([
      warm('n1-old', { nodeName: 'n1', age: 90_000 }),
      warm('n2-a', { nodeName: 'n2', age: 10_000 }),
      warm('n2-b', { nodeName: 'n2', age: 20_000 }),
      warm('starting', { conditions: [notReady()] }),
      member({ name: 'no-ip' }),
    ], undefined, CTX);
    const order: string[] = [];
    const excluded = new Set<string>();
    for (let s = ranking.best(excluded); s.kind === 'candidate'; s = ranking.best(excluded)) {
      order.push(s.sandbox.metadata.name);
      excluded.add(s.sandbox.metadata.uid!);
    }
    // n2 holds two: n2-b (its oldest); then n1 and n2 hold one each, n1-old is older; then n2-a.
    expect(order).toEqual(['n2-b', 'n1-old', 'n2-a', 'starting']);
    expect(ranking.best(excluded)).toEqual({ kind: 'network-pending', count: 1 });
    expect(ranking.best(new Set([...excluded, 'no-ip-uid']))).toMatchObject({ kind: 'none' });
  });

  test('oldestPending: the oldest member without an IP, up to date before stale, never stale under Recreate', () => {
    const members = [
      member({ name: 'young', age: 1000 }),
      member({ name: 'old', age: 5000 }),
      member({ name: 'stale-older', age: 9000, template: NEW_IMAGE }),
      warm('with-ip', { age: 20_000, conditions: [notReady()] }),
      member({ name: 'claimed', age: 30_000, owner: 'claim' }),
    ];
    const oldest = (strategy: string | undefined, exclude?: ReadonlySet<string>) =>
      new CandidateRanking(members, strategy, CTX).oldestPending(exclude)?.metadata.name;
    expect(oldest(undefined)).toBe('old');
    expect(oldest(undefined, new Set(['old-uid']))).toBe('young');
    expect(oldest(undefined, new Set(['old-uid', 'young-uid']))).toBe('stale-older');
    expect(oldest('Recreate', new Set(['old-uid', 'young-uid']))).toBeUndefined();
    expect(new CandidateRanking(members, 'Recreate', { ...CTX, fingerprint: undefined }).oldestPending()).toBeUndefined();
    // Made before the cutoff (stuck): passed over for a younger one, even a stale one; none left: undefined.
    const ranking = new CandidateRanking(members, undefined, CTX);
    expect(ranking.oldestPending(undefined, madeBy(NOW - 2000))?.metadata.name).toBe('young');
    expect(ranking.oldestPending(new Set(['young-uid', 'old-uid']), madeBy(NOW - 9500))?.metadata.name).toBe('stale-older');
    expect(ranking.oldestPending(new Set(['young-uid', 'old-uid']), madeBy(NOW - 8000))).toBeUndefined();
    expect(ranking.oldestPending(undefined, madeBy(NOW - 500))).toBeUndefined();
  });

  test('scheduled candidates before ones without a node name', () => {
    const candidates = [warm('nowhere', { nodeName: '', age: 90_000 }), warm('n1', { age: 1000 })];
    expect(picked(selectCandidate(candidates, undefined, CTX))).toBe('n1');
  });

  const arb = fc.array(fc.record({
    ready: fc.boolean(),
    ip: fc.boolean(),
    stale: fc.boolean(),
    owner: fc.constantFrom('pool', 'pool', 'claim', 'old-pool') as fc.Arbitrary<'pool' | 'claim' | 'old-pool'>,
    node: fc.constantFrom('n1', 'n2', 'n3', ''),
    age: fc.integer({ min: 0, max: 100_000 }),
    excluded: fc.boolean(),
    deleting: fc.boolean(),
  }), { maxLength: 15 });

  test('the pick is adoptable, reachable, allowed, and as good as any other (fast-check)', () => {
    fc.assert(fc.property(arb, fc.constantFrom(undefined, 'OnReplenish', 'Recreate'), (specs, strategy) => {
      const candidates = specs.map((s, i) => warm(`m${i}`, {
        conditions: s.ready ? undefined : [notReady()],
        podIPs: s.ip ? ['10.0.0.1'] : undefined,
        template: s.stale ? NEW_IMAGE : TEMPLATE,
        owner: s.owner,
        nodeName: s.node || undefined,
        age: s.age,
        deleting: s.deleting,
      }));
      const exclude = new Set(candidates.filter((_, i) => specs[i].excluded).map((s) => s.metadata.uid!));
      const result = selectCandidate(candidates, strategy, { ...CTX, exclude });
      const eligible = candidates.filter((s, i) => isAdoptable(s, CTX.claim, 'pool-uid') && !specs[i].excluded && !(strategy === 'Recreate' && specs[i].stale));
      const reachable = eligible.filter((s) => (s.status?.podIPs?.length ?? 0) > 0);
      if (result.kind !== 'candidate') {
        expect(reachable).toEqual([]);
        expect(result.kind).toBe(eligible.length > 0 ? 'network-pending' : 'none');
        return;
      }
      const i = candidates.indexOf(result.sandbox);
      expect(reachable).toContain(result.sandbox);
      if (reachable.some(isReady)) expect(isReady(result.sandbox)).toBe(true);
      const sameReadiness = reachable.filter((s) => isReady(s) === isReady(result.sandbox));
      if (sameReadiness.some((s) => !specs[candidates.indexOf(s)].stale)) expect(specs[i].stale).toBe(false);
      expect(result.ready).toBe(isReady(result.sandbox));
    }));
  });
});

describe('claimPath', () => {
  const candidate = { kind: 'candidate', sandbox: warm('a'), ready: true, stale: false } as const;
  test.each<[string, Parameters<typeof claim>[0], Selection, number, ReturnType<typeof claimPath>['kind'], number | undefined]>([
    ['a candidate: adopt', {}, candidate, NOW, 'adopt', undefined],
    ['env forces cold', { env: [{ name: 'A', value: '1' }] }, candidate, NOW, 'cold', undefined],
    ['volume claim templates force cold', { volumeClaimTemplates: [{ metadata: { name: 'd' }, spec: {} }] }, candidate, NOW, 'cold', undefined],
    ['nothing in the pool: cold', {}, { kind: 'none', reason: 'empty' }, NOW, 'cold', undefined],
    ['only network-pending, young claim: wait', {}, { kind: 'network-pending', count: 2 }, NOW, 'wait', 500],
    ['only network-pending, grace nearly over: wait the rest', {}, { kind: 'network-pending', count: 2 }, NOW + 1800, 'wait', 100],
    ['only network-pending, grace over: cold', {}, { kind: 'network-pending', count: 2 }, NOW + 5000, 'cold', undefined],
  ])('%s', (_, spec, selection, now, kind, afterMs) => {
    const path = claimPath(claim(spec, { creationTimestamp: iso(NOW - 100) }), selection, now);
    expect(path.kind).toBe(kind);
    if (afterMs !== undefined) expect(path).toEqual({ kind: 'wait', afterMs });
  });

  test('conflicts that emptied the list: retry shortly with AdoptionConflict, not cold', () => {
    const path = claimPath(claim(), { kind: 'none', reason: 'empty' }, NOW, { conflicts: 2 });
    expect(path).toEqual({ kind: 'wait', afterMs: 50, problem: { reason: 'AdoptionConflict', message: expect.stringContaining('retrying') } });
    expect(claimPath(claim(), candidate, NOW, { conflicts: 2 }).kind).toBe('adopt');
    expect(claimPath(claim({ env: [{ name: 'A', value: '1' }] }), { kind: 'none', reason: 'x' }, NOW, { conflicts: 1 }).kind).toBe('cold');
  });

  test('grace over with members still without an IP: the oldest is taken unless it looks stuck, then cold', () => {
    const pendingSel: Selection = { kind: 'network-pending', count: 2 };
    const c = claim({}, { creationTimestamp: iso(NOW - 3000) });
    const starting = member({ name: 'starting', age: 4000 });
    const checks: StuckCheck[] = [];
    expect(claimPath(c, pendingSel, NOW, { oldestPending: (stuck) => (checks.push(stuck), starting) })).toEqual({ kind: 'adopt', sandbox: starting });
    // Members starting for 30 s or more count as stuck: the check handed to oldestPending.
    expect(checks).toHaveLength(1);
    expect(checks[0](member({ name: 'm30', age: 30_000 }))).toBe(true);
    expect(checks[0](member({ name: 'm29', age: 29_000 }))).toBe(false);
    // Only stuck ones: cold, saying why.
    expect(claimPath(c, pendingSel, NOW, { oldestPending: () => undefined }))
      .toEqual({ kind: 'cold', why: expect.stringContaining('those without one have been starting for 30s or more or cannot be scheduled') });
    // Negative control: within the grace the claim still waits for the first member to get an IP.
    const young = claim({}, { creationTimestamp: iso(NOW - 100) });
    expect(claimPath(young, pendingSel, NOW, { oldestPending: () => starting })).toEqual({ kind: 'wait', afterMs: 500 });
    // env still forces cold.
    expect(claimPath(claim({ env: [{ name: 'A', value: '1' }] }, { creationTimestamp: iso(NOW - 3000) }), pendingSel, NOW, { oldestPending: () => starting }).kind).toBe('cold');
  });

  test('pendingStuck: unschedulable, or 30 s without an IP as this process watched it, else by its timestamp', () => {
    const at = (age: number) => member({ name: `aged-${age}`, age });
    // Timestamps alone (no watch): 30 s or more is stuck; a future or unreadable timestamp as before.
    expect(pendingStuck(NOW)(at(30_000))).toBe(true);
    expect(pendingStuck(NOW)(at(29_999))).toBe(false);
    expect(pendingStuck(NOW)(at(-5_000))).toBe(false);
    const unreadable = at(1_000);
    unreadable.metadata.creationTimestamp = 'not a time';
    expect(pendingStuck(NOW)(unreadable)).toBe(true);
    // The wall clock an hour ahead of the API server's: an hour old by the timestamp, watched 2 s: not stuck;
    // watched 30 s: stuck (the control).
    const ahead = NOW + 3_600_000;
    expect(pendingStuck(ahead, () => 2_000)(at(1_000))).toBe(false);
    expect(pendingStuck(ahead, () => 30_000)(at(1_000))).toBe(true);
    expect(pendingStuck(ahead, () => undefined)(at(1_000))).toBe(false);
    // The wall clock an hour behind: the timestamp is in the future, so the watch alone decides.
    const behind = NOW - 3_600_000;
    expect(pendingStuck(behind, () => 30_000)(at(1_000))).toBe(true);
    expect(pendingStuck(behind, () => 29_000)(at(1_000))).toBe(false);
    // With a watch the timestamp is not read at all: watched 30 s, stuck whatever it says.
    expect(pendingStuck(NOW, () => 30_000)(at(1_000))).toBe(true);
    expect(pendingStuck(NOW, () => 29_999)(at(3_600_000))).toBe(false);
    // Unschedulable: stuck at once, by either rule (the control: the same member schedulable is not).
    const unplaceable = member({ name: 'unplaceable', age: 1_000, conditions: unschedulable() });
    expect(pendingStuck(NOW, () => 0)(unplaceable)).toBe(true);
    expect(pendingStuck(NOW)(unplaceable)).toBe(true);
    expect(pendingStuck(NOW, () => 0)(at(1_000))).toBe(false);
  });

  test('the grace for members without an IP runs on the watch of the claim when there is one, else on its timestamp', () => {
    const pendingSel: Selection = { kind: 'network-pending', count: 1 };
    const starting = member({ name: 'starting', age: 4000 });
    const c = claim({}, { creationTimestamp: iso(NOW - 100) });
    const take = { oldestPending: () => starting };
    // Wall clock an hour ahead: the claim looks an hour old; watched 0.1 s it still waits, watched 2 s it takes the member.
    const ahead = NOW + 3_600_000;
    expect(claimPath(c, pendingSel, ahead, { ...take, watchedMs: 100 })).toEqual({ kind: 'wait', afterMs: 500 });
    expect(claimPath(c, pendingSel, ahead, { ...take, watchedMs: 1_800 })).toEqual({ kind: 'wait', afterMs: 200 });
    expect(claimPath(c, pendingSel, ahead, { ...take, watchedMs: 2_000 })).toEqual({ kind: 'adopt', sandbox: starting });
    // Negative control, timestamps alone (no watch): the grace is over at once.
    expect(claimPath(c, pendingSel, ahead, take)).toEqual({ kind: 'adopt', sandbox: starting });
    // Wall clock an hour behind: the claim's timestamp is in the future; the watch alone ends the grace
    // (timestamps alone would wait an hour).
    const behind = NOW - 3_600_000;
    expect(claimPath(c, pendingSel, behind, { ...take, watchedMs: 2_000 })).toEqual({ kind: 'adopt', sandbox: starting });
    expect(claimPath(c, pendingSel, behind, take)).toEqual({ kind: 'wait', afterMs: 500 });
    // First seen after a restart: made 10 s ago, watched 1.5 s, it waits 0.5 s more; watched 2 s, it takes the member.
    const older = claim({}, { creationTimestamp: iso(NOW - 10_000) });
    expect(claimPath(older, pendingSel, NOW, { ...take, watchedMs: 1_500 })).toEqual({ kind: 'wait', afterMs: 500 });
    expect(claimPath(older, pendingSel, NOW, { ...take, watchedMs: 2_000 })).toEqual({ kind: 'adopt', sandbox: starting });
  });

  test('the grace period is configurable', () => {
    expect(claimPath(claim(), { kind: 'network-pending', count: 1 }, NOW, { graceMs: 50 }).kind).toBe('cold');
  });

  test('cold whenever env or VCTs are set; adopt only a candidate; waits are short (fast-check)', () => {
    const arbSelection: fc.Arbitrary<Selection> = fc.oneof(
      fc.constant(candidate as Selection),
      fc.integer({ min: 1, max: 5 }).map((count) => ({ kind: 'network-pending', count }) as Selection),
      fc.constant({ kind: 'none', reason: 'empty' } as Selection),
    );
    const arbAge = fc.integer({ min: 0, max: 5000 });
    const arbConflicts = fc.integer({ min: 0, max: 3 });
    fc.assert(fc.property(arbSelection, fc.boolean(), arbAge, arbConflicts, (selection, env, age, conflicts) => {
      const c = claim(env ? { env: [{ name: 'A', value: '1' }] } : {}, { creationTimestamp: iso(NOW - age) });
      const path = claimPath(c, selection, NOW, { conflicts });
      if (env) return expect(path.kind).toBe('cold');
      expect(path.kind === 'adopt').toBe(selection.kind === 'candidate');
      if (path.kind === 'wait') {
        expect(path.afterMs).toBeGreaterThan(0);
        expect(path.afterMs).toBeLessThanOrEqual(500);
      }
      if (selection.kind === 'network-pending' && age >= 2000) expect(path.kind).toBe('cold');
    }));
  });

  test('needsColdStart', () => {
    expect(needsColdStart(claim())).toBe(false);
    expect(needsColdStart(claim({ env: [] }))).toBe(false);
    expect(needsColdStart(claim({ env: [{ name: 'A', value: '1' }] }))).toBe(true);
  });

  test('pool() is the pool the claim names', () => {
    expect(pool().metadata.name).toBe(claim().spec.warmPoolRef.name);
  });
});
