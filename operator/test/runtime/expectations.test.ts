import * as fc from 'fast-check';
import { Expectations, OwnWrites } from '../../src/runtime/expectations';
import type { Informer, InformerHandlers, KubeObject } from '../../src/runtime/types';

const obj = (resourceVersion: string, note: string, name = 'a'): KubeObject & { note: string } =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion }, note });
type Obj = ReturnType<typeof obj>;

/** "Created, until the cache has the object": the simplest expectation. */
const creates = (ttlMs = 1_000) => new Expectations<Obj, Obj>({ isShown: (_v, cached) => cached !== undefined, ttlMs });

describe('Expectations', () => {
  test('an entry stands until the cache shows the write', () => {
    const e = creates();
    e.expect('ns/a', obj('1', 'created'), 0);
    expect(e.pending('ns/a', undefined, 10)?.note).toBe('created');
    expect(e.pending('ns/b', undefined, 10)).toBeUndefined();
    expect(e.pending('ns/a', obj('1', 'cached'), 20)).toBeUndefined();
    expect(e.size).toBe(0);
  });

  test('an entry expires after ttlMs, so a lost event misleads for that long only', () => {
    const e = creates(100);
    e.expect('ns/a', obj('1', 'created'), 0);
    expect(e.nextExpiryAtMs()).toBe(100);
    expect(e.pending('ns/a', undefined, 99)).toBeDefined();
    expect(e.pending('ns/a', undefined, 100)).toBeUndefined();
    expect(e.nextExpiryAtMs()).toBeUndefined();
  });

  test('an event that shows the write ends the entry; one that does not leaves it', () => {
    const e = new Expectations<string, Obj>({ isShown: (rv, cached) => cached?.metadata.resourceVersion === rv });
    e.expect('ns/a', '7', 0);
    e.observe('ns/a', obj('6', 'older'));
    expect(e.size).toBe(1);
    e.observe('ns/a', obj('7', 'ours'));
    expect(e.size).toBe(0);
  });

  test('follow() wires an informer: adds, updates and deletes are observed under the mapped key', () => {
    const handlers: InformerHandlers<Obj>[] = [];
    const informer = { addHandlers: (h: InformerHandlers<Obj>) => handlers.push(h) } as unknown as Informer<Obj>;
    const deletes = new Expectations<true, Obj>({ isShown: (_v, cached) => cached === undefined });
    deletes.follow(informer, (o) => o.metadata.name);
    deletes.expect('a', true, 0);
    deletes.expect('b', true, 0);
    handlers[0].onUpdate!(obj('1', 'x'), obj('2', 'still there'));
    expect(deletes.size).toBe(2);
    handlers[0].onDelete!(obj('2', 'gone'));
    expect(deletes.sweep(0, () => obj('1', 'cached', 'b')).map(([k]) => k)).toEqual(['b']);
  });

  test('sweep() reads the cache for every entry, so a missed event cannot leave one behind', () => {
    const e = creates();
    e.expect('ns/a', obj('1', 'a'), 0);
    e.expect('ns/b', obj('1', 'b'), 0);
    const cache = new Map([['ns/b', obj('1', 'b cached', 'b')]]);
    expect(e.sweep(5, (k) => cache.get(k)).map(([k]) => k)).toEqual(['ns/a']);
    expect(e.size).toBe(1);
  });

  test('nextExpiryAtMs() can be limited to some entries, e.g. one owner\'s', () => {
    const e = new Expectations<string, Obj>({ isShown: () => false, ttlMs: 100 });
    e.expect('ns/a', 'owner-1', 0);
    e.expect('ns/b', 'owner-2', 50);
    expect(e.nextExpiryAtMs()).toBe(100);
    expect(e.nextExpiryAtMs((owner) => owner === 'owner-2')).toBe(150);
    expect(e.nextExpiryAtMs((owner) => owner === 'owner-3')).toBeUndefined();
  });

  test('expect() drops expired entries whose keys are never read again, once per ttl', () => {
    const e = creates(100);
    e.expect('ns/gone', obj('1', 'never read again'), 0);
    e.expect('ns/a', obj('1', 'a'), 50);
    expect(e.size).toBe(2);
    e.expect('ns/b', obj('1', 'b'), 120);
    expect(e.size).toBe(2);
    expect(e.pending('ns/a', undefined, 120)).toBeDefined();
  });

  test('with ttlMs Infinity an entry lapses only when shown or forgotten', () => {
    const e = new Expectations<true, Obj>({ isShown: (_v, cached) => cached !== undefined, ttlMs: Infinity });
    e.expect('k', true, 0);
    e.expect('other', true, Number.MAX_SAFE_INTEGER);
    expect(e.pending('k', undefined, Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(e.pending('k', obj('1', 'shown'), Number.MAX_SAFE_INTEGER)).toBeUndefined();
  });

  test('forget() drops an entry at once (a definite failure)', () => {
    const e = creates();
    e.expect('ns/a', obj('1', 'a'), 0);
    e.forget('ns/a');
    expect(e.pending('ns/a', undefined, 1)).toBeUndefined();
  });

  test('property: pending() is defined exactly while unexpired and not shown', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 2000 }), fc.boolean(), (ttl, age, shown) => {
      const e = creates(ttl);
      e.expect('k', obj('1', 'x'), 0);
      const defined = e.pending('k', shown ? obj('1', 'c') : undefined, age) !== undefined;
      return defined === (age < ttl && !shown);
    }));
  });
});

describe('OwnWrites', () => {
  test('our result stands in for the cached object while the cache shows the version it was based on', () => {
    const ahead = new OwnWrites<Obj>();
    const cached = obj('1', 'cached');
    ahead.wrote('ns/a', cached, obj('2', 'ours'), 0);
    expect(ahead.current('ns/a', cached, 1).note).toBe('ours');
    expect(ahead.current('ns/b', obj('1', 'other'), 1).note).toBe('other');
  });

  test('a chain of writes on a stale cache stays valid, also while the cache shows its middle', () => {
    const ahead = new OwnWrites<Obj>();
    const cached = obj('1', 'cached');
    ahead.wrote('ns/a', cached, obj('2', 'first'), 0);
    ahead.wrote('ns/a', cached, obj('3', 'second'), 0);
    expect(ahead.current('ns/a', cached, 1).note).toBe('second');
    expect(ahead.current('ns/a', obj('2', 'first as cached'), 1).note).toBe('second');
    // Our last write arrives: the cache is the truth again.
    expect(ahead.current('ns/a', obj('3', 'second as cached'), 1).note).toBe('second as cached');
    expect(ahead.size).toBe(0);
  });

  test('any other cached version wins and ends the entry: ours arriving, or a foreign write', () => {
    const ahead = new OwnWrites<Obj>();
    ahead.wrote('ns/a', obj('1', 'cached'), obj('2', 'ours'), 0);
    expect(ahead.current('ns/a', obj('5', 'foreign'), 1).note).toBe('foreign');
    expect(ahead.size).toBe(0);
    expect(ahead.current('ns/a', obj('1', 'cached'), 1).note).toBe('cached');
  });

  test('no expiry by default (a lagging cache must not lead to writes with a stale version); a given ttl applies', () => {
    const forever = new OwnWrites<Obj>();
    forever.wrote('ns/a', obj('1', 'cached'), obj('2', 'ours'), 0);
    expect(forever.current('ns/a', obj('1', 'cached'), 3_600_000).note).toBe('ours');
    const ahead = new OwnWrites<Obj>(50);
    const cached = obj('1', 'cached');
    ahead.wrote('ns/a', cached, obj('2', 'ours'), 0);
    expect(ahead.current('ns/a', cached, 49).note).toBe('ours');
    expect(ahead.current('ns/a', cached, 50).note).toBe('cached');
  });
});
