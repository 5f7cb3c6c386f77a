import { SandboxAnnotations } from '#api/labels';
import { NOW, condition, observed, pod, sandbox } from './fixtures';
import { KEY, catchUp, setup } from './harness';
import { IDLE_SUSPENDED } from '../../../src/controllers/sandbox/idle';
import { planSandbox, type Plan } from '../../../src/controllers/sandbox/plan';
import { activityStamp, type Condition, type IdlePolicy, RESOURCES, type Sandbox } from '../../../src/model';
import { RACE_RETRY_MS } from '../../../src/runtime/controller';
import type { OwnerReference } from '../../../src/runtime/types';

const PERIOD_S = 300;
const READY_AT_MS = NOW - 3_600_000;
const readyTrue = (atMs = READY_AT_MS): Condition => ({
  type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready', lastTransitionTime: new Date(atMs).toISOString(), observedGeneration: 1,
});
const NOT_READY: Condition = { ...readyTrue(), status: 'False', reason: 'DependenciesNotReady', message: 'Pod exists with phase: Pending' };
const extensions = 'extensions.agents.x-k8s.io/v1beta1';
const CLAIM_REF: OwnerReference = { apiVersion: extensions, kind: 'SandboxClaim', name: 'c', uid: 'uid-claim', controller: true };
const POOL_REF: OwnerReference = { apiVersion: extensions, kind: 'SandboxWarmPool', name: 'p', uid: 'uid-pool', controller: true };

interface Options {
  readonly policy?: IdlePolicy | null;
  /** ms before NOW of the last-activity stamp; none when undefined. */
  readonly stampedAgoMs?: number;
  readonly ready?: Condition;
  readonly mode?: 'Running' | 'Suspended';
  readonly owner?: OwnerReference;
  readonly shutdownInMs?: number;
  readonly extraAnnotations?: Record<string, string>;
}

/** A claimed, Ready Sandbox with its Pod, under a 300 s idle policy unless told otherwise. */
function idling(o: Options = {}): Sandbox {
  const sb = sandbox({
    annotations: {
      [SandboxAnnotations.POD_NAME]: 'my-sandbox',
      ...(o.stampedAgoMs !== undefined ? { [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(NOW - o.stampedAgoMs) } : {}),
      ...o.extraAnnotations,
    },
    ownerReferences: [o.owner ?? CLAIM_REF],
    spec: {
      operatingMode: o.mode ?? 'Running',
      ...(o.policy === null ? {} : { idlePolicy: o.policy ?? { suspendAfterSeconds: PERIOD_S, resumeOnRequest: true } }),
      ...(o.shutdownInMs !== undefined ? { shutdownTime: new Date(NOW + o.shutdownInMs).toISOString() } : {}),
    },
    conditions: [o.ready ?? readyTrue()],
  });
  return { ...sb, metadata: { ...sb.metadata, resourceVersion: '42' } };
}

const plan = (sb: Sandbox): Plan => planSandbox(observed(sb, { pods: sb.spec.operatingMode === 'Suspended' ? [] : [pod()] }));
/** The plan's writes that touch the idle-suspended mark. */
const markWrites = (p: Plan) => p.actions.filter((a) => a.op === 'patch-sandbox' && SandboxAnnotations.IDLE_SUSPENDED_AT in ((a.patch as any).metadata?.annotations ?? {}));
const suspends = (p: Plan) => p.actions.some((a) => a.op === 'patch-sandbox' && (a.patch as any).spec?.operatingMode === 'Suspended');

describe('planSandbox: idle suspension', () => {
  test.each<[string, Options, boolean, number | undefined]>([
    // name, sandbox, suspends, requeueAfterMs
    ['Ready an hour, never stamped, 300 s policy: due', {}, true, undefined],
    ['stamped 299.5 s ago: not due, the timer fires at the deadline', { stampedAgoMs: 299_500 }, false, 500],
    ['stamped exactly 300 s ago: due', { stampedAgoMs: 300_000 }, true, undefined],
    ['a stamp newer than the Ready transition moves the deadline', { stampedAgoMs: 60_000 }, false, 240_000],
    ['Ready 10 s ago (resumed) and an older stamp: the Ready transition counts', { ready: readyTrue(NOW - 10_000), stampedAgoMs: 3_000_000 }, false, 290_000],
    ['not Ready: nothing', { ready: NOT_READY }, false, undefined],
    ['Suspended: nothing', { mode: 'Suspended' }, false, undefined],
    ['an unclaimed warm-pool member: nothing', { owner: POOL_REF }, false, undefined],
    ['no policy: nothing', { policy: null }, false, undefined],
    ['shutdownTime sooner than the idle deadline: its timer', { stampedAgoMs: 0, shutdownInMs: 5_000 }, false, 5_000],
    ['idle deadline sooner than shutdownTime: the idle timer', { stampedAgoMs: 0, shutdownInMs: 600_000 }, false, 300_000],
  ])('%s', (_name, options, suspend, requeueAfterMs) => {
    const p = plan(idling(options));
    expect(suspends(p)).toBe(suspend);
    expect(p.requeueAfterMs).toBe(requeueAfterMs);
    expect(p.event?.reason === IDLE_SUSPENDED).toBe(suspend);
  });

  test('due: one conditional write of the cached resourceVersion, nothing else, and a Normal event naming the period', () => {
    const p = plan(idling({ policy: { suspendAfterSeconds: 2, resumeOnRequest: true }, stampedAgoMs: 2_000 }));
    expect(p.actions).toEqual([{
      op: 'patch-sandbox',
      patch: {
        metadata: { resourceVersion: '42', annotations: { [SandboxAnnotations.IDLE_SUSPENDED_AT]: '2026-09-01T12:00:00.000Z' } },
        spec: { operatingMode: 'Suspended' },
      },
    }]);
    expect(p.writeStatus).toBe(false);
    expect(p.event).toEqual({ type: 'Normal', reason: IDLE_SUSPENDED, action: 'Suspending', note: 'no request, connection or process for 2 s (idlePolicy.suspendAfterSeconds)' });
  });

  test('past shutdownTime and idle: expiry comes first', () => {
    const p = plan(idling({ shutdownInMs: -1 }));
    expect(suspends(p)).toBe(false);
    expect(condition(p.status.conditions, 'Ready')?.reason).toBe('SandboxExpired');
  });

  test('resumed while marked idle-suspended: the mark goes and the resume counts as use, in one write; never suspended again at once', () => {
    const marked = { [SandboxAnnotations.IDLE_SUSPENDED_AT]: activityStamp(NOW - 50) };
    // Its Ready condition still dates from before the suspension (the Pod was never seen gone).
    const p = plan(idling({ extraAnnotations: marked }));
    expect(suspends(p)).toBe(false);
    expect(p.actions).toEqual([{
      op: 'patch-sandbox',
      patch: { metadata: { annotations: { [SandboxAnnotations.IDLE_SUSPENDED_AT]: null, [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(NOW) } } },
    }]);
    // Negative controls: still suspended keeps the mark; no policy any more clears it without a stamp.
    expect(markWrites(plan(idling({ extraAnnotations: marked, mode: 'Suspended' })))).toEqual([]);
    expect(plan(idling({ extraAnnotations: marked, policy: null })).actions).toEqual([{
      op: 'patch-sandbox', patch: { metadata: { annotations: { [SandboxAnnotations.IDLE_SUSPENDED_AT]: null } } },
    }]);
  });
});

/** `sb` with the status its Pod gives it, so a pass has no status to write. */
function converged(sb: Sandbox): Sandbox {
  const { idlePolicy: _, ...spec } = sb.spec;
  return { ...sb, status: planSandbox(observed({ ...sb, spec }, { pods: [pod()] })).status };
}

describe('SandboxReconciler: idle suspension', () => {
  const due = () => converged(idling({ stampedAgoMs: PERIOD_S * 1000 }));

  test('due: the conditional patch, then the Normal event and the metric hook; the next pass on the lagging cache deletes the Pod', async () => {
    const suspended: string[] = [];
    const { client, reconciler } = setup(due(), { pods: [pod()] }, { idleSuspended: (sb) => suspended.push(sb.metadata.name) });
    await expect(reconciler.reconcile(KEY)).resolves.toBeUndefined();
    expect(client.writes).toEqual(['patch sandboxes my-sandbox']);
    expect(client.calls[0].body).toMatchObject({ metadata: { resourceVersion: '42' }, spec: { operatingMode: 'Suspended' } });
    expect(client.calls.filter((c) => c.verb === 'event').map((c) => c.body)).toEqual([
      { type: 'Normal', reason: 'IdleSuspended', action: 'Suspending', note: 'no request, connection or process for 300 s (idlePolicy.suspendAfterSeconds)' },
    ]);
    expect(suspended).toEqual(['my-sandbox']);
    expect((client.live.get('sandboxes/my-sandbox') as Sandbox).spec.operatingMode).toBe('Suspended');

    client.calls.length = 0;
    await reconciler.reconcile(KEY);
    expect(client.writes).toEqual(['delete pods my-sandbox', 'patch sandboxes my-sandbox/status']);
    expect(client.calls.some((c) => c.verb === 'event')).toBe(false);
  });

  test('a router stamp the cache has not shown wins: 409, a quiet retry, no event; the fresher cache re-decides to wait', async () => {
    const suspended: string[] = [];
    const { client, stores, reconciler } = setup(due(), { pods: [pod()] }, { idleSuspended: (sb) => suspended.push(sb.metadata.name) });
    // The router stamps the Sandbox (resourceVersion 42 -> next) before our pass.
    await client.patch(RESOURCES.sandboxes, 'team-a', 'my-sandbox', 'merge',
      { metadata: { annotations: { [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(NOW - 100) } } });
    client.calls.length = 0;
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: RACE_RETRY_MS });
    expect(client.writes).toEqual(['patch sandboxes my-sandbox']);
    expect(client.calls.some((c) => c.verb === 'event')).toBe(false);
    expect(suspended).toEqual([]);
    expect((client.live.get('sandboxes/my-sandbox') as Sandbox).spec.operatingMode).toBe('Running');

    catchUp(client, stores);
    client.calls.length = 0;
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: PERIOD_S * 1000 - 100 });
    expect(client.writes).toEqual([]);
  });

  test('the version our own Sandbox write left is what the next conditional write sends (the cache still behind)', async () => {
    let now = NOW;
    // Not due yet, and missing the pod-name annotation: this pass writes it.
    const sb = converged(idling({ stampedAgoMs: PERIOD_S * 1000 - 1000 }));
    const stamp = sb.metadata.annotations![SandboxAnnotations.LAST_ACTIVITY];
    const bare = { ...sb, metadata: { ...sb.metadata, annotations: { [SandboxAnnotations.LAST_ACTIVITY]: stamp } } };
    const { client, reconciler } = setup(bare, { pods: [pod()] }, { now: () => now });
    await expect(reconciler.reconcile(KEY)).resolves.toEqual({ requeueAfterMs: 1000 });
    expect(client.writes).toEqual(['patch sandboxes my-sandbox']);
    const serverVersion = client.live.get('sandboxes/my-sandbox')!.metadata.resourceVersion;
    expect(serverVersion).not.toBe('42');

    now += 1000;
    client.calls.length = 0;
    await reconciler.reconcile(KEY);
    expect(client.calls[0].body).toMatchObject({ metadata: { resourceVersion: serverVersion }, spec: { operatingMode: 'Suspended' } });
    expect((client.live.get('sandboxes/my-sandbox') as Sandbox).spec.operatingMode).toBe('Suspended');
  });

  test('a failed suspension write records no Normal event', async () => {
    const { client, reconciler } = setup(due(), { pods: [pod()] });
    client.failOnce({ verb: 'patch', resource: 'sandboxes', error: new Error('connection reset') });
    await expect(reconciler.reconcile(KEY)).rejects.toThrow('connection reset');
    expect(client.calls.some((c) => c.verb === 'event')).toBe(false);
  });
});
