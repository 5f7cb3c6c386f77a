import { pod } from './fixtures';
import { UnseenCreates } from '../../../src/controllers/sandbox/unseen';

describe('UnseenCreates', () => {
  const created = pod();
  const { namespace, name } = created.metadata;

  test('a create is remembered until the cache shows the object, which then wins', () => {
    const unseen = new UnseenCreates(1000);
    unseen.created('pod', created, 0);
    expect(unseen.resolve('pod', namespace, name, undefined, 10)).toBe(created);
    const cached = pod({ uid: 'from-cache' });
    expect(unseen.resolve('pod', namespace, name, cached, 20)).toBe(cached);
    expect(unseen.resolve('pod', namespace, name, undefined, 30)).toBeUndefined();
    expect(unseen.size).toBe(0);
  });

  test('kinds do not mix: a Service of the same name is another object', () => {
    const unseen = new UnseenCreates(1000);
    unseen.created('pod', created, 0);
    expect(unseen.resolve('service', namespace, name, undefined, 10)).toBeUndefined();
  });

  test('an informer event, our delete, or the TTL ends the memory', () => {
    const unseen = new UnseenCreates(1000);
    unseen.created('pod', created, 0);
    unseen.seen('pod', created);
    expect(unseen.resolve('pod', namespace, name, undefined, 1)).toBeUndefined();
    unseen.created('pod', created, 0);
    unseen.deleted('pod', namespace, name);
    expect(unseen.resolve('pod', namespace, name, undefined, 1)).toBeUndefined();
    unseen.created('pod', created, 0);
    expect(unseen.resolve('pod', namespace, name, undefined, 1000)).toBe(created);
    expect(unseen.resolve('pod', namespace, name, undefined, 1001)).toBeUndefined();
  });
});
