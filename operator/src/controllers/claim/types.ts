/**
 * The outcome type of the claim decisions, and the claim's events.
 */

/** Why a claim cannot make progress: its Ready=False reason (ClaimReadyReason) and message. */
export interface ClaimProblem {
  readonly reason: string;
  readonly message: string;
}

/** A decision that either produced a value or found a problem to report on the claim. */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: ClaimProblem };

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const fail = <T>(reason: string, message: string): Outcome<T> => ({ ok: false, problem: { reason, message } });

/** An Event about a claim (events.k8s.io: reason, action, note). */
export interface ClaimEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly action: string;
  readonly note: string;
}

/** The claim's events, with upstream's reasons and actions. */
export const ClaimEvents = {
  adopted: (sandbox: string): ClaimEvent => ({ type: 'Normal', reason: 'SandboxAdopted', action: 'Adoption', note: `Adopted warm pool Sandbox "${sandbox}"` }),
  provisioned: (sandbox: string): ClaimEvent => ({ type: 'Normal', reason: 'SandboxProvisioned', action: 'Provisioning', note: `Created Sandbox "${sandbox}"` }),
  expired: (): ClaimEvent => ({ type: 'Normal', reason: 'ClaimExpired', action: 'Claim Expired', note: 'Claim expired' }),
  deleting: (policy: string): ClaimEvent => ({ type: 'Normal', reason: 'ClaimExpired', action: 'Deleting', note: `Deleting Claim (ShutdownPolicy=${policy})` }),
} as const;
