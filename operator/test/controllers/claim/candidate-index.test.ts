/**
 * The warm candidate index against CandidateRanking, its specification: the same pick for any
 * pool, any history of Sandbox events, any template and any exclusions; and the work a pick costs
 * as the pool grows, counted rather than timed.
 */
import * as fc from 'fast-check';
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, TEMPLATE, claim, iso, member, notReady, template } from './fixtures';
import { WarmCandidateIndex } from '../../../src/controllers/claim/candidate-index';
import { CandidateRanking, pendingStuck, type Selection, type SelectionContext } from '../../../src/controllers/claim/select';
import { type Sandbox } from '../../../src/model';
import { templateFingerprint } from '../../../src/model/blueprint';
import { FakeStore } from '../../fake-kube';

const NEW_IMAGE = template({ podTemplate: { spec: { containers: [{ name: 'main', image: 'python:3.13' }] } } });
const CURRENT: SelectionContext = { claim: claim(), poolUid: 'pool-uid', templateName: 'python', fingerprint: templateFingerprint(TEMPLATE) };
const EDITED: SelectionContext = { ...CURRENT, fingerprint: templateFingerprint(NEW_IMAGE) };
const warm = (name: string, o: Parameters<typeof member>[0] = {}) => member({ name, podIPs: ['10.0.0.1'], nodeName: 'n1', ...o });
const summary = (s: Selection) => (s.kind === 'candidate' ? `${s.sandbox.metadata.name} ready=${s.ready} stale=${s.stale}`
  : s.kind === 'network-pending' ? `network-pending ${s.count}` : `none: ${s.reason}`);

function indexed(...members: Sandbox[]) {
  const cache = new FakeStore<Sandbox>();
  const index = new WarmCandidateIndex().follow(cache);
  cache.put(...members);
  return { cache, index };
}

describe('WarmCandidateIndex picks what CandidateRanking picks (fast-check)', () => {
  /** Mostly not `rare`: enough members stay candidates for ties and exclusions to matter. */
  const sometimes = (rare: boolean) => fc.constantFrom(!rare, !rare, !rare, !rare, !rare, rare);
  const spec = fc.record({
    ready: fc.boolean(),
    ip: sometimes(false),
    stale: fc.boolean(),
    owner: fc.constantFrom('pool', 'pool', 'pool', 'claim', 'old-pool', 'none') as fc.Arbitrary<'pool' | 'claim' | 'old-pool' | 'none'>,
    node: fc.constantFrom('n1', 'n2', 'n3', ''),
    // Whole seconds from a small range: equal creation times, decided by name, are common.
    ageSeconds: fc.integer({ min: 0, max: 5 }),
    deleting: sometimes(true),
    foreignPoolLabel: sometimes(true),
  });
  const event = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('put' as const), i: fc.integer({ min: 0, max: 11 }), spec }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), i: fc.integer({ min: 0, max: 11 }) }) },
  );
  const check = fc.record({
    strategy: fc.constantFrom(undefined, 'OnReplenish', 'Recreate'),
    context: fc.constantFrom(CURRENT, EDITED, { ...CURRENT, fingerprint: undefined }, { ...CURRENT, poolUid: undefined }),
    excluded: fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 5 }),
  });
  const build = (i: number, s: typeof spec extends fc.Arbitrary<infer S> ? S : never): Sandbox => {
    const m = warm(`m${i.toString().padStart(2, '0')}`, {
      conditions: s.ready ? undefined : [notReady()],
      podIPs: s.ip ? ['10.0.0.1'] : undefined,
      template: s.stale ? NEW_IMAGE : TEMPLATE,
      owner: s.owner,
      nodeName: s.node || undefined,
      deleting: s.deleting,
      ...(s.foreignPoolLabel ? { labels: { [SandboxLabels.WARM_POOL_SANDBOX]: NameHash.of('other') } } : {}),
    });
    return { ...m, metadata: { ...m.metadata, creationTimestamp: iso(NOW - s.ageSeconds * 1000) } };
  };

  test('after every event, for every template, strategy and set of exclusions, and down the ranking', () => {
    fc.assert(fc.property(fc.array(fc.record({ event, check }), { maxLength: 40, size: 'max' }), (steps) => {
      const { cache, index } = indexed();
      for (const { event: e, check: c } of steps) {
        if (e.op === 'put') cache.put(build(e.i, e.spec));
        else cache.remove('team-a', `m${e.i.toString().padStart(2, '0')}`);
        const exclude = new Set(c.excluded.map((i) => `m${i.toString().padStart(2, '0')}-uid`));
        const reference = new CandidateRanking(cache.list(), c.strategy, c.context);
        const candidates = index.candidates(c.strategy, c.context);
        // Walk down: each pick excluded in turn, as conflicting adoptions do.
        for (;;) {
          const expected = reference.best(exclude);
          expect(summary(candidates.best(exclude))).toBe(summary(expected));
          expect(candidates.oldestPending(exclude)?.metadata.name).toBe(reference.oldestPending(exclude)?.metadata.name);
          // Stuck by the timestamps (the cut-off 30 s before an instant 27.5 s after NOW), and by a watch of some members.
          const stuck = pendingStuck(NOW + 27_500, (sb) => (sb.metadata.name.endsWith('3') ? 40_000 : 1_000));
          expect(candidates.oldestPending(exclude, stuck)?.metadata.name).toBe(reference.oldestPending(exclude, stuck)?.metadata.name);
          if (expected.kind !== 'candidate') break;
          exclude.add(expected.sandbox.metadata.uid!);
        }
      }
    }), { numRuns: 200 });
  });
});

describe('WarmCandidateIndex', () => {
  test('a template change re-tiers the pool\'s members: the old current ones turn stale and the new ones current', () => {
    const { index } = indexed(warm('old-blueprint', { age: 90_000 }), warm('new-blueprint', { template: NEW_IMAGE, age: 1000 }));
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('old-blueprint ready=true stale=false');
    expect(summary(index.candidates(undefined, EDITED).best())).toBe('new-blueprint ready=true stale=false');
    expect(summary(index.candidates(undefined, EDITED).best(new Set(['new-blueprint-uid'])))).toBe('old-blueprint ready=true stale=true');
    expect(summary(index.candidates('Recreate', EDITED).best(new Set(['new-blueprint-uid'])))).toBe('none: the pool has no unclaimed member to take');
    // Members arriving after the change are judged against the new template.
    const late = indexed(warm('old-blueprint'));
    late.index.candidates(undefined, EDITED).best();
    late.cache.put(warm('new-blueprint', { template: NEW_IMAGE, age: 1000 }));
    expect(summary(late.index.candidates(undefined, EDITED).best())).toBe('new-blueprint ready=true stale=false');
  });

  test('re-tiering happens once per template change, not once per pick', () => {
    const { index } = indexed(...Array.from({ length: 200 }, (_, i) => warm(`m${i}`, { age: 1000 * i })));
    index.candidates(undefined, EDITED).best();
    const after = { ...index.counters };
    for (let i = 0; i < 50; i++) index.candidates(undefined, EDITED).best();
    expect(index.counters.compared - after.compared).toBe(0);
    expect(index.counters.visited - after.visited).toBe(50 * 2);
  });

  test('deleted, claimed and deleting Sandboxes leave the index on their events; an emptied pool is forgotten', () => {
    const { cache, index } = indexed(warm('a', { age: 3000 }), warm('b', { age: 2000 }), warm('c', { age: 1000 }));
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('a ready=true stale=false');
    cache.remove('team-a', 'a');
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('b ready=true stale=false');
    cache.put(warm('b', { age: 2000, owner: 'claim' }));
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('c ready=true stale=false');
    cache.put(warm('c', { age: 1000, deleting: true }));
    expect(index.size).toBe(0);
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('none: the pool has no unclaimed member to take');
  });

  test('a member getting its Pod IP moves from network-pending to candidate', () => {
    const { cache, index } = indexed(member({ name: 'a', nodeName: 'n1' }));
    expect(index.candidates(undefined, CURRENT).best()).toEqual({ kind: 'network-pending', count: 1 });
    cache.put(warm('a'));
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('a ready=true stale=false');
  });

  test('follow() starts from what the cache already holds', () => {
    const cache = new FakeStore<Sandbox>().put(warm('a'));
    const index = new WarmCandidateIndex().follow(cache);
    expect(summary(index.candidates(undefined, CURRENT).best())).toBe('a ready=true stale=false');
  });
});

describe('the work a pick costs does not grow with the pool (operations counted, not timed)', () => {
  /** `size` Ready members over 7 nodes (and some unscheduled), cloned from one built member: building each would dominate. */
  function pool(size: number) {
    const base = warm('base');
    const members = Array.from({ length: size }, (_, i): Sandbox => ({
      ...base,
      metadata: { ...base.metadata, name: `m${i}`, uid: `m${i}-uid`, creationTimestamp: iso(NOW - ((i * 7919) % 100_000) * 1000) },
      status: { ...base.status, nodeName: i % 10 === 9 ? undefined : `n${i % 7}` },
    }));
    return indexed(...members);
  }

  /** Per claim: nodes and members looked at by its pick, and by a pick after a conflict; comparisons made by both and by the update taking it. */
  function costs(size: number) {
    const { cache, index } = pool(size);
    const picks = 5;
    let visited = 0;
    let compared = 0;
    let visitedExcluding = 0;
    const excluded = new Set<string>();
    for (let i = 0; i < picks; i++) {
      const before = { ...index.counters };
      const pick = index.candidates(undefined, CURRENT).best();
      visited += index.counters.visited - before.visited;
      if (pick.kind !== 'candidate') throw new Error('the pool ran dry');
      const beforeExcluding = index.counters.visited;
      excluded.add(pick.sandbox.metadata.uid!);
      index.candidates(undefined, CURRENT).best(excluded);
      visitedExcluding += index.counters.visited - beforeExcluding;
      excluded.delete(pick.sandbox.metadata.uid!);
      // The claim takes it: its update event removes it from the index.
      const taken = warm(pick.sandbox.metadata.name, { owner: 'claim' });
      cache.put({ ...taken, metadata: { ...taken.metadata, uid: pick.sandbox.metadata.uid } });
      compared += index.counters.compared - before.compared;
    }
    return { visited: visited / picks, visitedExcluding: visitedExcluding / picks, compared: compared / picks };
  }

  test('10 vs 10,000 members: the same members visited per pick; comparisons grow only logarithmically', () => {
    const small = costs(10);
    const large = costs(10_000);
    // Shown in the test output: these are the figures docs/operator.md quotes ("Warm pools and claims").
    process.stdout.write(`per pick, 10 members: ${JSON.stringify(small)}; 10,000 members: ${JSON.stringify(large)}\n`);
    expect(large.visited).toBe(small.visited);
    expect(large.visited).toBe(2);
    expect(large.visitedExcluding).toBeLessThanOrEqual(small.visitedExcluding + 2);
    expect(large.compared).toBeLessThan(4 * Math.log2(10_000));
  });

  test('the reference ranking, for contrast, visits every member', () => {
    let visited = 0;
    const { cache } = pool(1000);
    const counting = cache.list().map((s) => new Proxy(s, { get: (t, p) => (p === 'metadata' && visited++, (t as any)[p]) }));
    new CandidateRanking(counting, undefined, CURRENT).best();
    expect(visited).toBeGreaterThanOrEqual(1000);
  });
});
