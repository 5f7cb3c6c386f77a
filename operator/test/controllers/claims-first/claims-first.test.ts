/** ClaimsFirst, the one claims-first object the controllers share: what it hands out under --claims-first-max-defer. */
import { OperatorFlags } from '../../../src/commands/controller-flags';
import { ClaimsFirst, HeldAnnotations } from '../../../src/controllers/claims-first';
import { FakeClock } from '../../runtime/fake-clock';

const NOW = 1_000_000;
const ctxWith = (maxDefer: number, clock = new FakeClock(NOW)) => ({ flags: new OperatorFlags({ 'claims-first-max-defer': maxDefer }), clock });

describe('ClaimsFirst', () => {
  test('with a bound, deferrable work waits while a claim waits, and comes back when it is served', () => {
    const clock = new FakeClock(NOW);
    const first = ClaimsFirst.of(ctxWith(3_000, clock));
    const woken: string[] = [];
    const deferral = first.deferral((key) => woken.push(key))!;
    expect(deferral.defer('ns/a')).toEqual({ defer: false });
    first.pressure.waitingOn('ns/c', 'ns/pool');
    expect(deferral.defer('ns/a')).toEqual({ defer: true, retryAfterMs: 3_000 });
    first.pressure.settled('ns/c');
    clock.advance(1_000);
    expect(woken).toEqual(['ns/a']);
  });

  test('the claim writes it holds: annotations held while another claim waits, written once it is served', () => {
    const clock = new FakeClock(NOW);
    const first = ClaimsFirst.of(ctxWith(3_000, clock));
    const { annotationsHeld, eventsHeld } = first.claimWrites(() => undefined);
    expect(eventsHeld).toBeDefined();
    first.pressure.waitingOn('ns/other', 'ns/pool');
    expect(annotationsHeld.next('ns/c', 'uid', { a: '1' }, undefined)).toEqual({ kind: 'held', retryAfterMs: 3_000 });
    first.pressure.settled('ns/other');
    clock.advance(1_000);
    // What was held wins over what a later pass computes.
    expect(annotationsHeld.next('ns/c', 'uid', { a: 'unknown' }, undefined)).toEqual({ kind: 'write', add: { a: '1' } });
    // Another claim of the same name (a new uid) does not inherit them.
    expect(annotationsHeld.next('ns/c', 'uid-2', { a: '2' }, { a: '2' })).toEqual({ kind: 'none' });
  });

  test('--claims-first-max-defer=0s defers nothing (the pressure is still followed)', () => {
    const first = ClaimsFirst.of(ctxWith(0));
    expect(first.deferral(() => undefined)).toBeUndefined();
    expect(first.sends()).toBeUndefined();
    const { annotationsHeld, eventsHeld } = first.claimWrites(() => undefined);
    expect(eventsHeld).toBeUndefined();
    first.pressure.waitingOn('ns/other', 'ns/pool');
    expect(first.pressure.busy).toBe(true);
    expect(annotationsHeld.next('ns/c', 'uid', { a: '1' }, undefined)).toEqual({ kind: 'write', add: { a: '1' } });
  });

  test('HeldAnnotations without a deferral never holds, and drops what the claim already has', () => {
    const held = new HeldAnnotations();
    expect(held.next('ns/c', 'uid', { a: '1', b: '2' }, { a: '1' })).toEqual({ kind: 'write', add: { b: '2' } });
    expect(held.size).toBe(0);
  });
});
