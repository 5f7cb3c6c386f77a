import { Duration } from 'cdk8s';
import { describeValue } from './api/schema-values';
import { propName } from './api/spelling';
import { ErrorList } from './api/validation';
import { dropUndefined } from './container';
import { _checkDuration } from './custom-resource';

/**
 * When the operator suspends a Sandbox nobody uses, and whether the next request resumes it.
 * Suspending deletes the Pod and keeps its PersistentVolumeClaims and Service, as
 * `OperatingMode.SUSPENDED` does: only files on volume claim templates survive.
 */
export interface IdlePolicy {
  /**
   * Suspend the Sandbox after this long with no request through the router, no open connection
   * or stream, and no process its runtime runs. Whole seconds, at least one.
   */
  readonly suspendAfter: Duration;
  /**
   * Whether a request through the router for the suspended Sandbox resumes it. The request is held
   * until the Sandbox is Ready (at most the router's `--resume-wait`). false: such a request gets
   * 409 SandboxSuspended, and the Sandbox stays suspended until its operatingMode is set to Running.
   * @default true
   */
  readonly resumeOnRequest?: boolean;
}

/** The largest value of the int32 seconds fields the Durations render to. */
const MAX_SECONDS = 2147483647;

/**
 * @internal Check a Duration that renders to an int32 `...Seconds` field with minimum 1: whole
 * seconds, at least 1 s (0 would mean "at once", which the CRD refuses), at most int32 max.
 */
export function _checkPositiveSeconds(errors: ErrorList, field: string, value: unknown): void {
  if (value === undefined) return;
  if (!(value instanceof Duration)) {
    _checkDuration(errors, field, value, true);
    return;
  }
  const ms = value.toMilliseconds();
  if (ms < 1000 || ms % 1000 !== 0) {
    const nearest = Math.max(1, Math.round(ms / 1000));
    errors.prop(field, `must be whole seconds of at least 1s (it is ${ms}ms); use Duration.seconds(${nearest}) or more`);
  } else if (ms / 1000 > MAX_SECONDS) {
    errors.prop(field, `must be whole seconds of at most ${MAX_SECONDS}s, the largest the field holds (it is ${ms / 1000}s); use a shorter Duration`);
  }
}

/** @internal Check an `idlePolicy` prop (jsii callers can pass any value), naming fields under `field`. */
export function _checkIdlePolicy(errors: ErrorList, field: string, policy: IdlePolicy | undefined): void {
  if (policy === undefined) return;
  if (policy === null || typeof policy !== 'object') {
    errors.prop(field, `must be an IdlePolicy, got ${describeValue(policy)}; give an IdlePolicy with ${propName('suspendAfter')} set, such as Duration.minutes(10), or leave it out`);
    return;
  }
  if (policy.suspendAfter === undefined) {
    errors.prop(`${field}.suspendAfter`, 'is required; give how long the Sandbox may sit unused, such as Duration.minutes(10)');
  }
  _checkPositiveSeconds(errors, `${field}.suspendAfter`, policy.suspendAfter);
  if (policy.resumeOnRequest !== undefined && typeof policy.resumeOnRequest !== 'boolean') {
    errors.prop(`${field}.resumeOnRequest`, `must be true or false, got ${describeValue(policy.resumeOnRequest)}`);
  }
}

/**
 * @internal `spec.idlePolicy`. `resumeOnRequest` is written only when given: the CRD defaults it
 * to true, and leaving it out keeps the manifest as the user wrote it.
 */
export function _idlePolicyToKube(policy: IdlePolicy | undefined): { [key: string]: unknown } | undefined {
  if (policy === undefined) return undefined;
  return dropUndefined({
    suspendAfterSeconds: policy.suspendAfter.toSeconds(),
    resumeOnRequest: policy.resumeOnRequest,
  });
}
