import { FirstSeen } from '../../src/runtime/first-seen';
import type { Informer, InformerHandlers, KubeObject } from '../../src/runtime/types';

const obj = (uid: string): KubeObject => ({ metadata: { name: uid, namespace: 'ns', uid } });

test('the first sighting is the informer add; a pass before it notes its own time; a delete forgets', () => {
  let handlers!: InformerHandlers<KubeObject>;
  const informer = { addHandlers: (h: InformerHandlers<KubeObject>) => (handlers = h) } as unknown as Informer<KubeObject>;
  let now = 100;
  const seen = new FirstSeen<KubeObject>();
  seen.follow(informer, () => now);
  handlers.onAdd!(obj('a'));
  now = 250;
  expect(seen.saw(obj('a'), now)).toBe(100);
  expect(seen.saw(obj('b'), now)).toBe(250);
  handlers.onAdd!(obj('b'));
  expect(seen.saw(obj('b'), 300)).toBe(250);
  handlers.onDelete!(obj('a'));
  expect(seen.size).toBe(1);
  expect(seen.saw(obj('a'), 400)).toBe(400);
});
