/**
 * Waiting for a claim to become Ready, on a watch (never by polling), and turning what the claim
 * says into the SDK's errors: a missing pool or template, a cold start the caller refused, a state
 * that waiting cannot fix, the claim's deletion, or the time running out (as a cold-start error
 * when a cold start was under way).
 */
import {
  SandboxClaimError, SandboxClaimFailedError, SandboxClaimTimeoutError, SandboxColdStartError, SandboxPoolNotFoundError,
} from './errors.js';
import { KubeApi } from './kube.js';
import { follow } from './watch-object.js';
import { CLAIMS, ClaimReason, CONDITION_READY, TERMINAL_CLAIM_REASONS } from './wire.js';

export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** The fields of a SandboxClaim the SDK reads. */
export interface ClaimObject {
  readonly metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };
  readonly spec: {
    warmPoolRef: { name: string };
    lifecycle?: { shutdownTime?: string; shutdownPolicy?: string };
    idlePolicy?: { suspendAfterSeconds: number; resumeOnRequest?: boolean };
  };
  readonly status?: { conditions?: Condition[]; sandbox?: { name?: string; Name?: string; podIPs?: string[] } };
}

export interface WaitOptions {
  readonly name: string;
  readonly namespace: string;
  readonly uid?: string;
  /** Refuse a cold start instead of waiting for it. */
  readonly failOnColdStart: boolean;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** What the wait learned: the Ready claim and whether its Sandbox came from a cold start. */
export interface ReadyClaim {
  readonly claim: ClaimObject;
  readonly sandbox: string;
  readonly coldStart: boolean;
}

export function readyCondition(claim: ClaimObject): Condition | undefined {
  return claim.status?.conditions?.find((c) => c.type === CONDITION_READY);
}

export function sandboxNameOf(claim: ClaimObject): string | undefined {
  return claim.status?.sandbox?.name || claim.status?.sandbox?.Name || undefined;
}

/** Waits on a watch until the claim is Ready; rejects with a SandboxClaimError subclass otherwise. */
export function waitForReady(api: KubeApi, options: WaitOptions): Promise<ReadyClaim> {
  let last: ClaimObject | undefined;
  let coldStart = false;
  return follow<ReadyClaim>(api, CLAIMS, options.namespace, options.name, (claim: ClaimObject, deleted) => {
    if (options.uid && claim.metadata.uid && claim.metadata.uid !== options.uid) {
      throw failed(options, claim, 'was replaced by another claim of the same name');
    }
    if (deleted || claim.metadata.deletionTimestamp) throw failed(options, claim, 'was deleted while waiting for it');
    last = claim;
    const condition = readyCondition(claim);
    const sandbox = sandboxNameOf(claim);
    // A cold-started Sandbox takes the claim's name; an adopted warm one keeps its pool name.
    if (condition?.reason === ClaimReason.SANDBOX_CREATE_PENDING || sandbox === claim.metadata.name) coldStart = true;
    if (condition?.status === 'True' && sandbox) return { claim, sandbox, coldStart };
    checkProblems(options, claim, condition, coldStart);
    return undefined;
  }, { timeoutMs: options.timeoutMs, signal: options.signal, onTimeout: () => timedOut(options, last, coldStart) });
}

function checkProblems(options: WaitOptions, claim: ClaimObject, condition: Condition | undefined, coldStart: boolean): void {
  const reasons = (claim.status?.conditions ?? []).map((c) => c.reason);
  if (reasons.includes(ClaimReason.WARM_POOL_NOT_FOUND) || (condition?.status === 'False' && condition.reason === ClaimReason.TEMPLATE_NOT_FOUND)) {
    const what = condition?.reason === ClaimReason.TEMPLATE_NOT_FOUND ? 'its SandboxTemplate' : `SandboxWarmPool "${claim.spec.warmPoolRef.name}"`;
    throw new SandboxPoolNotFoundError(
      `claim ${options.namespace}/${options.name}: ${what} does not exist in namespace ${options.namespace} (${condition?.reason}: ${condition?.message ?? ''}); create the pool or pass the right pool name`,
      options.name, options.namespace, condition?.reason, condition?.message,
    );
  }
  if (condition?.status === 'False' && condition.reason && TERMINAL_CLAIM_REASONS.includes(condition.reason)) {
    throw failed(options, claim, `cannot become Ready (${condition.reason}: ${condition.message ?? ''})`);
  }
  if (coldStart && options.failOnColdStart) {
    throw new SandboxColdStartError(
      `claim ${options.namespace}/${options.name}: pool "${claim.spec.warmPoolRef.name}" has no warm sandbox and coldStart is "fail" (${condition?.reason}: ${condition?.message ?? ''})`,
      options.name, options.namespace, condition?.reason, condition?.message,
    );
  }
}

function failed(options: WaitOptions, claim: ClaimObject, what: string): SandboxClaimFailedError {
  const condition = readyCondition(claim);
  return new SandboxClaimFailedError(`claim ${options.namespace}/${options.name} ${what}`, options.name, options.namespace, condition?.reason, condition?.message, { sandbox: sandboxNameOf(claim) });
}

function timedOut(options: WaitOptions, claim: ClaimObject | undefined, coldStart: boolean): SandboxClaimError {
  const condition = claim ? readyCondition(claim) : undefined;
  const state = condition ? `last ${condition.reason ?? 'no reason'}: ${condition.message ?? ''}` : 'the controller has not reported on it yet; is the operator running?';
  if (coldStart) {
    return new SandboxColdStartError(
      `claim ${options.namespace}/${options.name}: not Ready within ${options.timeoutMs} ms while its Sandbox was cold-starting (${state}); add warm replicas to the pool or raise timeoutMs`,
      options.name, options.namespace, condition?.reason, condition?.message,
    );
  }
  return new SandboxClaimTimeoutError(
    `claim ${options.namespace}/${options.name}: not Ready within ${options.timeoutMs} ms (${state}); raise timeoutMs`,
    options.name, options.namespace, condition?.reason, condition?.message,
  );
}
