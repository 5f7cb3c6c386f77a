import { isProgressOnly, statusNeedsWrite, statusPatch } from '../../../src/controllers/sandbox/status';
import { type Condition, metaTime, removeCondition, setCondition } from '../../../src/model';

const T0 = Date.parse('2026-09-01T10:00:00.750Z');
const T1 = Date.parse('2026-09-01T10:05:00Z');

describe('conditions (meta.SetStatusCondition semantics)', () => {
  const ready: Condition = { type: 'Ready', status: 'False', reason: 'A', message: 'a', lastTransitionTime: metaTime(T0), observedGeneration: 1 };

  test('metav1.Time has whole seconds', () => {
    expect(metaTime(T0)).toBe('2026-09-01T10:00:00Z');
  });

  test('a new type is appended with the current time', () => {
    expect(setCondition([ready], { type: 'Suspended', status: 'False', reason: 'NotSuspended', message: 'm' }, T1)).toEqual([
      ready, { type: 'Suspended', status: 'False', reason: 'NotSuspended', message: 'm', lastTransitionTime: '2026-09-01T10:05:00Z' },
    ]);
  });

  test.each([
    ['same status: reason, message and generation change, transition time stays', 'False', '2026-09-01T10:00:00Z'],
    ['status flips: the transition time moves', 'True', '2026-09-01T10:05:00Z'],
  ])('%s', (_name, status, time) => {
    const [c] = setCondition([ready], { type: 'Ready', status: status as Condition['status'], reason: 'B', message: 'b', observedGeneration: 2 }, T1);
    expect(c).toEqual({ type: 'Ready', status, reason: 'B', message: 'b', observedGeneration: 2, lastTransitionTime: time });
  });

  test('position is kept on update; remove drops only that type', () => {
    const two = setCondition([ready], { type: 'X', status: 'True', reason: 'R', message: '' }, T1);
    expect(setCondition(two, { type: 'Ready', status: 'True', reason: 'R', message: '' }, T1).map((c) => c.type)).toEqual(['Ready', 'X']);
    expect(removeCondition(two, 'Ready').map((c) => c.type)).toEqual(['X']);
  });
});

describe('status writes', () => {
  const readyWith = (status: 'True' | 'False'): Condition[] => [{ type: 'Ready', status, reason: 'R', message: '', lastTransitionTime: 'x' }];

  test.each([
    ['identical (key order aside)', { conditions: readyWith('False'), selector: 's' }, { selector: 's', conditions: readyWith('False') }, false],
    ['nodeName alone while not Ready waits for the Ready transition', { conditions: readyWith('False') }, { conditions: readyWith('False'), nodeName: 'n' }, false],
    ['nodeName alone while Ready is written', { conditions: readyWith('True') }, { conditions: readyWith('True'), nodeName: 'n' }, true],
    ['nodeName with anything else is written', { conditions: readyWith('False') }, { conditions: readyWith('False'), nodeName: 'n', podIPs: ['127.64.0.1'] }, true],
    ['first status', undefined, { conditions: readyWith('False') }, true],
  ])('%s', (_name, current, next, expected) => {
    expect(statusNeedsWrite(current, next)).toBe(expected);
  });

  test('merge patch: changed fields, null for vanished ones, nothing for unchanged', () => {
    expect(statusPatch({ selector: 's', podIPs: ['a'], nodeName: 'n', conditions: readyWith('True') }, { selector: 's', conditions: readyWith('False') }))
      .toEqual({ status: { conditions: readyWith('False'), podIPs: null, nodeName: null } });
  });
});

describe('isProgressOnly', () => {
  const cond = (type: string, status: Condition['status'], reason: string): Condition =>
    ({ type, status, reason, message: '', lastTransitionTime: metaTime(T0) });
  const notSuspended = cond('Suspended', 'False', 'NotSuspended');
  const progress = { conditions: [notSuspended, cond('Ready', 'False', 'DependenciesNotReady')] };

  test.each([
    ['a first status that is not Ready yet', undefined, progress, true],
    ['more progress while not Ready', progress, progress, true],
    ['Ready gained', progress, { conditions: [notSuspended, cond('Ready', 'True', 'DependenciesReady')] }, false],
    ['Ready lost', { conditions: [notSuspended, cond('Ready', 'True', 'DependenciesReady')] }, progress, false],
    ['an error cleared', { conditions: [notSuspended, cond('Ready', 'False', 'ReconcilerError')] }, progress, false],
    ['an error', undefined, { conditions: [notSuspended, cond('Ready', 'False', 'ReconcilerError')] }, false],
    ['suspending', undefined, { conditions: [cond('Suspended', 'False', 'PodTerminating'), cond('Ready', 'False', 'DependenciesNotReady')] }, false],
    ['finished', undefined, { conditions: [...progress.conditions, cond('Finished', 'True', 'PodSucceeded')] }, false],
  ])('%s: %s', (_name, current, next, expected) => {
    expect(isProgressOnly(current, next)).toBe(expected);
  });
});
