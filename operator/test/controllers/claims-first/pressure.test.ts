/** ClaimPressure and Deferral on a manual clock: who waits, for how long, and when deferred work comes back. */
import { ClaimPressure, Deferral, DeferredSends, PRESSURE_LINGER_MS } from '../../../src/controllers/claims-first';
import { FakeStore } from '../../fake-kube';
import { FakeClock } from '../../runtime/fake-clock';

const claim = (name: string, extra: { bound?: boolean; deleting?: boolean; pool?: string } = {}) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxClaim',
  metadata: { name, namespace: 'ns', uid: `${name}-uid`, ...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { warmPoolRef: { name: extra.pool ?? 'pool' } },
  ...(extra.bound ? { status: { sandbox: { name: `${name}-sbx` } } } : {}),
});

/** A listener that counts its calls. */
function counter(): (() => void) & { count: number } {
  const fn = Object.assign(() => { fn.count++; }, { count: 0 });
  return fn;
}

/** A clock whose timers of over 1 ms fire 1 ms early, as Node's whole-millisecond timers can against performance.now(). */
class EarlyClock extends FakeClock {
  public setTimeout(callback: () => void, delayMs: number) {
    return super.setTimeout(callback, delayMs > 1 ? delayMs - 1 : delayMs);
  }
}

describe('ClaimPressure', () => {
  test('a linger timer that fires a little early waits out the rest: calm still comes once, right after the linger', () => {
    const clock = new EarlyClock();
    const pressure = new ClaimPressure(clock, 10_000);
    const calm = counter();
    pressure.onCalm(calm);
    pressure.waitingOn('ns/a', 'ns/p');
    pressure.settled('ns/a');
    clock.advance(PRESSURE_LINGER_MS - 1);
    expect([pressure.busy, calm.count]).toEqual([true, 0]);
    clock.advance(2);
    expect([pressure.busy, pressure.busyOn('ns/p'), calm.count]).toEqual([false, false, 1]);
    clock.advance(20_000);
    expect(calm.count).toBe(1);
  });

  test('claims count per pool until settled; with no linger the operator turns calm (once) when the last settles', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock, 10_000, 0);
    const calm = counter();
    pressure.onCalm(calm);
    expect(pressure.busy).toBe(false);
    pressure.waitingOn('ns/a', 'ns/p');
    pressure.waitingOn('ns/a', 'ns/p');
    pressure.waitingOn('ns/b', 'ns/q');
    expect([pressure.busy, pressure.waitingFor('ns/p'), pressure.waitingFor('ns/q'), pressure.waitingFor('ns/r')]).toEqual([true, 1, 1, 0]);
    pressure.settled('ns/a');
    expect([pressure.waitingFor('ns/p'), calm.count]).toEqual([0, 0]);
    pressure.settled('ns/b');
    pressure.settled('ns/b');
    expect([pressure.busy, calm.count]).toEqual([false, 1]);
  });

  test('members are wanted only while claims wait on a pool that is short of Ready members', () => {
    const pressure = new ClaimPressure(new FakeClock(), 10_000);
    pressure.poolShort('ns/p', true);
    expect(pressure.membersWanted('ns/p')).toBe(false);
    pressure.waitingOn('ns/a', 'ns/p');
    expect(pressure.membersWanted('ns/p')).toBe(true);
    pressure.poolShort('ns/p', false);
    expect(pressure.membersWanted('ns/p')).toBe(false);
    pressure.poolShort('ns/p', true);
    pressure.settled('ns/a');
    expect(pressure.membersWanted('ns/p')).toBe(false);
  });

  test('a claim waiting past the window stops counting, and its window\'s end turns the operator calm without a settle', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock, 10_000);
    const calm = counter();
    pressure.onCalm(calm);
    pressure.waitingOn('ns/stuck', 'ns/p');
    clock.advance(4_000);
    pressure.waitingOn('ns/later', 'ns/p');
    clock.advance(6_000);
    expect([pressure.waitingFor('ns/p'), calm.count]).toEqual([1, 0]);
    clock.advance(4_000);
    expect([pressure.busy, calm.count, clock.pending]).toEqual([false, 1, 0]);
  });

  test('a claim whose member is taken is still pressure but asks for no member; a namesake\'s Sandbox binds nothing', () => {
    const pressure = new ClaimPressure(new FakeClock(), 10_000, 0);
    const claims = new FakeStore<any>();
    const sandboxes = new FakeStore<any>();
    pressure.follow(claims, sandboxes);
    pressure.poolShort('ns/pool', true);
    claims.put(claim('a'), claim('b'));
    const owned = (name: string, owner: string, uid: string, kind = 'SandboxClaim') => ({
      metadata: { name, namespace: 'ns', ownerReferences: [{ apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind, name: owner, uid, controller: true }] },
    });
    // Negative controls: another kind's controller, an earlier claim of the same name (another UID), a Sandbox being deleted.
    const deleting = { ...owned('m9', 'a', 'a-uid'), metadata: { ...owned('m9', 'a', 'a-uid').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    sandboxes.put(owned('m0', 'a', 'a-uid', 'SandboxWarmPool'), owned('m1', 'a', 'old-a-uid'), deleting);
    expect([pressure.waitingFor('ns/pool'), pressure.busyOn('ns/pool')]).toEqual([2, true]);
    sandboxes.put(owned('m2', 'a', 'a-uid'));
    sandboxes.put(owned('m2', 'a', 'a-uid'));
    expect([pressure.waitingFor('ns/pool'), pressure.busyOn('ns/pool'), pressure.busy, pressure.membersWanted('ns/pool')]).toEqual([1, true, true, true]);
    sandboxes.put(owned('m3', 'b', 'b-uid'));
    // Bound claims still want the short pool's members in the normal lane (the take is what woke the pool).
    expect([pressure.waitingFor('ns/pool'), pressure.busyOn('ns/pool'), pressure.membersWanted('ns/pool')]).toEqual([0, true, true]);
    claims.put(claim('a', { bound: true }), claim('b', { bound: true }));
    expect([pressure.waitingFor('ns/pool'), pressure.busyOn('ns/pool'), pressure.busy, pressure.membersWanted('ns/pool')]).toEqual([0, false, false, false]);
    // Settled and waiting again (a namesake): counted afresh, unbound; the old claim's Sandbox binds it not.
    const namesake = (uid: string) => ({ ...claim('a'), metadata: { ...claim('a').metadata, uid } });
    claims.remove('ns', 'a');
    claims.put(namesake('a2-uid'));
    sandboxes.put(owned('m2', 'a', 'a-uid'));
    expect(pressure.waitingFor('ns/pool')).toBe(1);
    sandboxes.put(owned('m4', 'a', 'a2-uid'));
    expect(pressure.waitingFor('ns/pool')).toBe(0);
    // A namesake seen as an update of the bound one (a relist folds a delete and a create into one):
    // it replaces the old entry, unbound.
    claims.put(namesake('a3-uid'));
    expect(pressure.waitingFor('ns/pool')).toBe(1);
    sandboxes.put(owned('m5', 'a', 'a3-uid'));
    expect(pressure.waitingFor('ns/pool')).toBe(0);
  });

  test('follows an informer: unbound claims wait; bound, deleting and deleted ones do not', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock);
    const store = new FakeStore<any>();
    pressure.follow(store);
    store.put(claim('a'), claim('b', { pool: 'other' }), claim('c', { bound: true }), claim('d', { deleting: true }));
    expect([pressure.waitingFor('ns/pool'), pressure.waitingFor('ns/other')]).toEqual([1, 1]);
    store.put(claim('a', { bound: true }));
    store.remove('ns', 'b');
    expect(pressure.busy).toBe(true);
    clock.advance(PRESSURE_LINGER_MS);
    expect(pressure.busy).toBe(false);
  });

  test('the pressure lingers after the last claim is served: a claim in that gap keeps it busy, then calm comes once, a linger later', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock, 10_000, 100);
    const calm = counter();
    pressure.onCalm(calm);
    pressure.waitingOn('ns/a', 'ns/p');
    pressure.settled('ns/a');
    expect([pressure.busy, pressure.busyOn('ns/p'), pressure.waitingFor('ns/p'), pressure.busyOn('ns/q'), calm.count]).toEqual([true, true, 0, false, 0]);
    clock.advance(60);
    // The next claim of a sequence arrives in the gap: still the same busy stretch.
    pressure.waitingOn('ns/b', 'ns/q');
    clock.advance(60);
    expect([pressure.busy, pressure.busyOn('ns/p'), pressure.busyOn('ns/q'), calm.count]).toEqual([true, false, true, 0]);
    pressure.settled('ns/b');
    clock.advance(99);
    expect([pressure.busy, calm.count]).toEqual([true, 0]);
    clock.advance(1);
    expect([pressure.busy, pressure.busyOn('ns/q'), calm.count, clock.pending]).toEqual([false, false, 1, 0]);
  });

  test('a claim that waits past its window does not linger: it was never served', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock, 1_000, 100);
    const calm = counter();
    pressure.onCalm(calm);
    pressure.waitingOn('ns/stuck', 'ns/p');
    clock.advance(1_000);
    expect([pressure.busy, pressure.busyOn('ns/p'), calm.count]).toEqual([false, false, 1]);
  });
});

describe('Deferral', () => {
  test('defers while claims wait, at most maxDeferMs, and wakes every deferred key when calm', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock);
    const woken: string[] = [];
    const deferral = new Deferral(pressure, (key) => woken.push(key), 3_000);
    expect(deferral.defer('x')).toEqual({ defer: false });
    pressure.waitingOn('ns/a', 'ns/p');
    expect(deferral.defer('x')).toEqual({ defer: true, retryAfterMs: 3_000 });
    clock.advance(1_000);
    expect(deferral.defer('x')).toEqual({ defer: true, retryAfterMs: 2_000 });
    expect(deferral.defer('y')).toEqual({ defer: true, retryAfterMs: 3_000 });
    clock.advance(2_000);
    // Claims still wait, but x has waited long enough: it runs now (never starved by a load that never ends).
    expect(deferral.defer('x')).toEqual({ defer: false });
    pressure.settled('ns/a');
    expect(deferral.defer('z')).toEqual({ defer: true, retryAfterMs: 3_000 });
    clock.advance(PRESSURE_LINGER_MS);
    expect(woken).toEqual(['y', 'z']);
    expect(deferral.size).toBe(0);
  });
});

describe('DeferredSends', () => {
  test('held in order while claims wait; sent when calm, or maxDeferMs after the first was held', () => {
    const clock = new FakeClock();
    const pressure = new ClaimPressure(clock);
    const sent: string[] = [];
    const sends = new DeferredSends(pressure, clock, 3_000);
    sends.run(() => sent.push('calm'));
    pressure.waitingOn('ns/a', 'ns/p');
    sends.run(() => sent.push('one'));
    sends.run(() => sent.push('two'));
    expect([sent, sends.size]).toEqual([['calm'], 2]);
    pressure.settled('ns/a');
    expect(sent).toEqual(['calm']);
    clock.advance(PRESSURE_LINGER_MS);
    expect(sent).toEqual(['calm', 'one', 'two']);

    pressure.waitingOn('ns/b', 'ns/p');
    sends.run(() => sent.push('three'));
    clock.advance(2_999);
    expect(sent).toHaveLength(3);
    clock.advance(1);
    expect([sent.slice(3), sends.size, clock.pending]).toEqual([['three'], 0, 1]);
  });
});
