/** routerLabelsIn: which of the router's Pod labels a Pod's labels carry. */
import { routerLabelsIn } from '../../src/model/template-gate';

describe('routerLabelsIn', () => {
  const router = { app: 'edge', tier: 'router' };

  test.each<[string, Record<string, string> | undefined, string | undefined]>([
    ['no labels', undefined, undefined],
    ['other labels', { app: 'python', team: 'a' }, undefined],
    ['the key with another value', { tier: 'web' }, undefined],
    // A template carrying one and a claim the other would each pass a full-set check.
    ['one of two router labels', { tier: 'router', team: 'a' }, 'tier=router'],
    ['both', { app: 'edge', tier: 'router' }, 'app=edge,tier=router'],
  ])('%s', (_, labels, expected) => {
    expect(routerLabelsIn(labels, router)).toBe(expected);
  });

  test('the default router label app=sandbox-router', () => {
    expect(routerLabelsIn({ app: 'sandbox-router' })).toBe('app=sandbox-router');
    expect(routerLabelsIn({ app: 'sandbox' })).toBeUndefined();
  });
});
