import { SandboxAnnotations } from '#api/labels';
import {
  activityStamp, activityStampIntervalMs, idleDeadlineMs, idlePolicyOf, idleSinceMs, lastActivityMs, resumesOnRequest,
  type Condition, type IdlePolicy, type Sandbox,
} from '../../src/model';
import type { OwnerReference } from '../../src/runtime/types';

const NOW = Date.parse('2026-09-01T12:00:00Z');
const READY_AT = '2026-09-01T11:00:00Z';
const ready = (status: Condition['status'] = 'True', at = READY_AT): Condition =>
  ({ type: 'Ready', status, reason: status === 'True' ? 'DependenciesReady' : 'DependenciesNotReady', message: '', lastTransitionTime: at });
const ref = (apiVersion: string, kind: string): OwnerReference => ({ apiVersion, kind, name: 'owner', uid: 'uid-owner', controller: true });
const POOL = ref('extensions.agents.x-k8s.io/v1beta1', 'SandboxWarmPool');
const CLAIM = ref('extensions.agents.x-k8s.io/v1beta1', 'SandboxClaim');

interface Options {
  policy?: IdlePolicy | null;
  mode?: 'Running' | 'Suspended';
  conditions?: Condition[];
  lastActivity?: string;
  owner?: OwnerReference;
}

function sandbox(o: Options = {}): Sandbox {
  return {
    metadata: {
      name: 'sb',
      namespace: 'ns',
      ...(o.lastActivity !== undefined ? { annotations: { [SandboxAnnotations.LAST_ACTIVITY]: o.lastActivity } } : {}),
      ...(o.owner ? { ownerReferences: [o.owner] } : {}),
    },
    spec: {
      podTemplate: { spec: { containers: [{ name: 'main', image: 'busybox' }] } },
      operatingMode: o.mode ?? 'Running',
      ...(o.policy === null ? {} : { idlePolicy: o.policy ?? { suspendAfterSeconds: 300, resumeOnRequest: true } }),
    },
    status: { conditions: o.conditions ?? [ready()] },
  };
}

describe('idlePolicyOf and resumesOnRequest', () => {
  test.each<[string, Options, boolean, boolean]>([
    ['a claimed Sandbox with a policy', { owner: CLAIM }, true, true],
    ['a bare Sandbox with a policy', {}, true, true],
    ['resumeOnRequest false', { policy: { suspendAfterSeconds: 5, resumeOnRequest: false } }, true, false],
    ['resumeOnRequest unset: the default, true', { policy: { suspendAfterSeconds: 5 } }, true, true],
    ['no policy', { policy: null }, false, false],
    ['an unclaimed warm-pool member: idle by design', { owner: POOL }, false, false],
    ['a SandboxWarmPool of another API group is no pool of ours', { owner: ref('example.com/v1', 'SandboxWarmPool') }, true, true],
    ['suspendAfterSeconds 0 (an object the schema did not check)', { policy: { suspendAfterSeconds: 0 } }, false, false],
  ])('%s', (_name, options, governed, resumes) => {
    expect(idlePolicyOf(sandbox(options)) !== undefined).toBe(governed);
    expect(resumesOnRequest(sandbox(options))).toBe(resumes);
  });
});

describe('the idle clock', () => {
  /** READY_AT has whole seconds (metav1.Time): the transition may have come up to 999 ms after it. */
  const readyMs = Date.parse(READY_AT) + 999;
  test.each<[string, Options, number | undefined]>([
    ['Ready, never stamped: idle since it turned Ready', {}, readyMs],
    ['a stamp after the Ready transition moves the clock', { lastActivity: '2026-09-01T11:30:00.250Z' }, Date.parse('2026-09-01T11:30:00.250Z')],
    ['a stamp before the Ready transition (a resume since) does not', { lastActivity: '2026-09-01T10:00:00.000Z' }, readyMs],
    ['an unparsable stamp is ignored', { lastActivity: 'yesterday' }, readyMs],
    ['not Ready: never idle', { conditions: [ready('False')] }, undefined],
    ['no Ready condition: never idle', { conditions: [] }, undefined],
    ['Suspended: not idling', { mode: 'Suspended' }, undefined],
    ['no policy: no clock', { policy: null }, undefined],
    ['an unclaimed warm-pool member: no clock', { owner: POOL }, undefined],
  ])('%s', (_name, options, since) => {
    expect(idleSinceMs(sandbox(options))).toBe(since);
    expect(idleDeadlineMs(sandbox(options))).toBe(since === undefined ? undefined : since + 300_000);
  });

  test('a whole-second Ready time is read as the end of its second; one with a fraction as it is', () => {
    // Ready at 11:00:00.700, shown as 11:00:00 (metav1.Time): idle from 11:00:00.999, never before it turned Ready.
    const truncated = sandbox({ policy: { suspendAfterSeconds: 1 }, conditions: [ready('True', '2026-09-01T11:00:00Z')] });
    expect(idleSinceMs(truncated)).toBe(Date.parse('2026-09-01T11:00:00.999Z'));
    expect(idleDeadlineMs(truncated)).toBe(Date.parse('2026-09-01T11:00:01.999Z'));
    const precise = sandbox({ conditions: [ready('True', '2026-09-01T11:00:00.250Z')] });
    expect(idleSinceMs(precise)).toBe(Date.parse('2026-09-01T11:00:00.250Z'));
    expect(idleSinceMs(sandbox({ conditions: [ready('True', '2026-09-01T11:00:00+02:00')] }))).toBe(Date.parse('2026-09-01T09:00:00.999Z'));
  });

  test('the deadline is the policy period after the clock', () => {
    const sb = sandbox({ policy: { suspendAfterSeconds: 2 }, lastActivity: activityStamp(NOW) });
    expect(idleDeadlineMs(sb)).toBe(NOW + 2000);
  });

  test('the stamp keeps milliseconds and reads back exactly', () => {
    const ms = NOW + 123;
    expect(activityStamp(ms)).toBe('2026-09-01T12:00:00.123Z');
    expect(lastActivityMs(sandbox({ lastActivity: activityStamp(ms) }))).toBe(ms);
    expect(lastActivityMs(sandbox())).toBeUndefined();
  });

  test.each([[1, 500], [2, 1000], [4, 1000], [8, 2000], [300, 75_000]])('stamp interval for %i s: %i ms (a quarter, at least a second, at most half)', (seconds, ms) => {
    expect(activityStampIntervalMs({ suspendAfterSeconds: seconds })).toBe(ms);
  });
});
