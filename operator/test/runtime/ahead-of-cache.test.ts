import { AheadOfCache } from '../../src/runtime/ahead-of-cache';
import type { KubeObject } from '../../src/runtime/types';

const obj = (resourceVersion: string, note: string): KubeObject & { note: string } =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns', resourceVersion }, note });

describe('AheadOfCache', () => {
  test('our result stands in for the cached object while the cache shows the version it was based on', () => {
    const ahead = new AheadOfCache<ReturnType<typeof obj>>();
    const cached = obj('1', 'cached');
    ahead.wrote('ns/a', cached, obj('2', 'ours'));
    expect(ahead.current('ns/a', cached).note).toBe('ours');
    expect(ahead.current('ns/b', obj('1', 'other')).note).toBe('other');
  });

  test('a chain of writes on a stale cache stays valid, also while the cache shows its middle', () => {
    const ahead = new AheadOfCache<ReturnType<typeof obj>>();
    const cached = obj('1', 'cached');
    ahead.wrote('ns/a', cached, obj('2', 'first'));
    ahead.wrote('ns/a', cached, obj('3', 'second'));
    expect(ahead.current('ns/a', cached).note).toBe('second');
    expect(ahead.current('ns/a', obj('2', 'first as cached')).note).toBe('second');
    // Our last write arrives: the cache is the truth again.
    expect(ahead.current('ns/a', obj('3', 'second as cached')).note).toBe('second as cached');
    expect(ahead.size).toBe(0);
  });

  test('any other cached version wins and ends the entry: ours arriving, or a foreign write', () => {
    const ahead = new AheadOfCache<ReturnType<typeof obj>>();
    ahead.wrote('ns/a', obj('1', 'cached'), obj('2', 'ours'));
    expect(ahead.current('ns/a', obj('5', 'foreign')).note).toBe('foreign');
    expect(ahead.size).toBe(0);
    expect(ahead.current('ns/a', obj('1', 'cached')).note).toBe('cached');
  });
});
