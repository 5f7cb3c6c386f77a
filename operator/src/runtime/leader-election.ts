/**
 * Leader election on a coordination.k8s.io/v1 Lease with client-go LeaseLock semantics:
 * - a standby takes the Lease when it is free (empty holder, e.g. released) or expired, judged by
 *   when THIS process last saw the record change (never by the holder's clock);
 * - the leader renews every retryPeriod with a conditional update (resourceVersion) and gives up
 *   leadership when no renew has succeeded for renewDeadline;
 * - a graceful shutdown releases the Lease (empty holder, leaseDurationSeconds 1) so a standby takes
 *   over at once. A standby also watches the Lease, so it reacts to a release immediately and
 *   retries exactly when a crashed leader's Lease expires, instead of at its next jittered retry.
 * Times are written as MicroTime (six fractional digits), which the API server requires.
 */
import { Clock, MONOTONIC_CLOCK, SYSTEM_CLOCK, sleep } from './clock';
import { Logger, SILENT_LOGGER } from './log';
import { formatMicroTime } from './micro-time';
import { ApiError, KubeClient, KubeObject, ResourceType, WatchHandle } from './types';

export const LEASE: ResourceType = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespaced: true };
/** Upstream's Lease name, so a migration from upstream never runs two leaders. */
export const DEFAULT_LEASE_NAME = 'a3317529.agent-sandbox.x-k8s.io';

/** The Lease spec fields leader election reads and writes. */
export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  [field: string]: unknown;
}

interface Lease extends KubeObject {
  spec?: LeaseRecord;
}

export interface ElectionInput {
  readonly identity: string;
  readonly now: number;
  /** The Lease's spec as read now; undefined when the Lease does not exist. */
  readonly record: LeaseRecord | undefined;
  /** When this process first saw `record` in its current form. */
  readonly observedAt: number;
  /** Used when the record has no leaseDurationSeconds. */
  readonly leaseDurationMs: number;
}

export type ElectionDecision =
  | { readonly action: 'create' }
  | { readonly action: 'renew' }
  | { readonly action: 'acquire'; readonly reason: 'free' | 'expired' }
  | { readonly action: 'wait'; readonly holder: string; readonly expiresAt: number };

/** What to do with the Lease as it is now (client-go's tryAcquireOrRenew, as a pure function). */
export function decideElection(input: ElectionInput): ElectionDecision {
  const { record } = input;
  if (!record) return { action: 'create' };
  const holder = record.holderIdentity ?? '';
  if (holder === input.identity) return { action: 'renew' };
  if (holder === '') return { action: 'acquire', reason: 'free' };
  const durationMs = record.leaseDurationSeconds ? record.leaseDurationSeconds * 1000 : input.leaseDurationMs;
  const expiresAt = input.observedAt + durationMs;
  return input.now < expiresAt ? { action: 'wait', holder, expiresAt } : { action: 'acquire', reason: 'expired' };
}

/** The record to write for a create, acquire or renew decision. */
export function nextRecord(old: LeaseRecord | undefined, identity: string, now: number, leaseDurationMs: number): LeaseRecord {
  const time = formatMicroTime(new Date(now));
  const ours = old?.holderIdentity === identity;
  return {
    ...old,
    holderIdentity: identity,
    leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
    acquireTime: ours ? old?.acquireTime ?? time : time,
    renewTime: time,
    leaseTransitions: (old?.leaseTransitions ?? 0) + (old && !ours ? 1 : 0),
  };
}

/** The record a leader writes when it steps down gracefully (client-go's release). */
export function releasedRecord(old: LeaseRecord, now: number): LeaseRecord {
  const time = formatMicroTime(new Date(now));
  return { ...old, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: time, renewTime: time };
}

export interface LeaderElectorOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name?: string;
  readonly identity: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly onStartedLeading: () => void;
  /** Leadership was lost (not released): stop reconciling now; the runtime exits the process. */
  readonly onStoppedLeading: () => void;
  readonly onNewLeader?: (identity: string) => void;
  /** Measures retries, deadlines and lease expiry as this process observes it. @default MONOTONIC_CLOCK */
  readonly clock?: Clock;
  /** The times written into the Lease (acquireTime, renewTime). @default `clock` when given, else SYSTEM_CLOCK */
  readonly wallClock?: Clock;
  readonly log?: Logger;
}

export class LeaderElector {
  private readonly name: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly wallClock: Clock;
  private readonly log: Logger;
  private readonly stopper = new AbortController();
  private wake = new AbortController();
  private observed?: Lease;
  private observedRaw = '';
  private observedAt = 0;
  private leading = false;
  private lastLeader = '';
  private standbyWatch?: WatchHandle;
  private watchForbidden = false;
  private loop?: Promise<void>;

  public constructor(private readonly options: LeaderElectorOptions) {
    this.name = options.name ?? DEFAULT_LEASE_NAME;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!(this.leaseDurationMs > this.renewDeadlineMs && this.renewDeadlineMs > this.retryPeriodMs)) {
      throw new Error(`leader election needs leaseDuration > renewDeadline > retryPeriod (got ${this.leaseDurationMs}, ${this.renewDeadlineMs}, ${this.retryPeriodMs} ms)`);
    }
    // Durations on a clock that never steps: a wall-clock step forward must not look like a
    // renew deadline missed (the leader would exit), nor a step back like a Lease renewed.
    this.clock = options.clock ?? MONOTONIC_CLOCK;
    this.wallClock = options.wallClock ?? options.clock ?? SYSTEM_CLOCK;
    this.log = (options.log ?? SILENT_LOGGER).child({ lease: `${options.namespace}/${this.name}`, identity: options.identity });
  }

  public get isLeader(): boolean {
    return this.leading;
  }

  /** Start campaigning; resolves when this elector stops (released or lost). */
  public run(): Promise<void> {
    this.loop ??= this.campaign();
    return this.loop;
  }

  /** Stop campaigning; if leading, hand the Lease back so a standby takes over at once. */
  public async release(): Promise<void> {
    const wasLeading = this.leading;
    this.stopper.abort();
    this.wake.abort();
    this.standbyWatch?.abort();
    // A renew in flight could take a request timeout; do not hold the shutdown for it.
    if (this.loop) await this.withDeadline(this.loop.then(() => true, () => true), this.retryPeriodMs);
    if (!wasLeading || !this.observed?.spec || this.observed.spec.holderIdentity !== this.options.identity) return;
    this.leading = false;
    try {
      const body = { ...this.observed, spec: releasedRecord(this.observed.spec, this.wallClock.now()) };
      await this.options.client.update(LEASE, this.options.namespace, body);
      this.log.info('released the leader lease');
    } catch (err) {
      this.log.warn({ err }, 'could not release the leader lease; a standby takes over when it expires');
    }
  }

  private async campaign(): Promise<void> {
    const signal = this.stopper.signal;
    this.log.info('waiting to acquire the leader lease');
    while (!signal.aborted && !(await this.tryAcquireOrRenew())) {
      this.watchWhileStandingBy();
      await sleep(this.clock, this.standbyDelay(), signal, this.wake.signal);
      if (this.wake.signal.aborted && !signal.aborted) this.wake = new AbortController();
    }
    this.standbyWatch?.abort();
    if (signal.aborted) return;
    this.leading = true;
    this.log.info('acquired the leader lease');
    this.options.onStartedLeading();
    let lastRenew = this.clock.now();
    while (!signal.aborted) {
      await sleep(this.clock, this.retryPeriodMs, signal);
      if (signal.aborted) return;
      const budget = lastRenew + this.renewDeadlineMs - this.clock.now();
      if (budget > 0 && (await this.withDeadline(this.tryAcquireOrRenew(), budget))) {
        lastRenew = this.clock.now();
        continue;
      }
      if (signal.aborted) return;
      if (this.clock.now() - lastRenew >= this.renewDeadlineMs || this.lastLeader !== this.options.identity) {
        this.leading = false;
        this.log.error({ sinceRenewMs: this.clock.now() - lastRenew }, 'lost the leader lease');
        this.options.onStoppedLeading();
        return;
      }
    }
  }

  /**
   * How long a standby waits before its next attempt: client-go's JitterUntil(retryPeriod, 1.2) so
   * standbys do not retry in lockstep, but no later than the moment the Lease as last seen expires.
   * With the standby watch keeping that moment exact, a crashed leader is replaced about one lease
   * duration after its last renew instead of up to two jittered retries later.
   */
  private standbyDelay(): number {
    const jittered = this.retryPeriodMs * (1 + Math.random() * 1.2);
    const seconds = this.observed?.spec?.leaseDurationSeconds;
    const untilExpiry = this.observedAt + (seconds ? seconds * 1000 : this.leaseDurationMs) - this.clock.now();
    // Only a future expiry shortens the wait: a failed read must never turn into a hot loop.
    return untilExpiry > 0 ? Math.min(jittered, untilExpiry + 10) : jittered;
  }

  /** True when this process holds the Lease afterwards. Never throws. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, identity } = this.options;
    const now = this.clock.now();
    const wallNow = this.wallClock.now();
    // Fast path (as client-go): the leader updates the Lease it last wrote without reading it.
    if (this.leading && this.observed?.spec?.holderIdentity === identity) {
      try {
        const spec = nextRecord(this.observed.spec, identity, wallNow, this.leaseDurationMs);
        this.observe(await client.update<Lease>(LEASE, namespace, { ...this.observed, spec }), now);
        return true;
      } catch (err) {
        this.log.warn({ err }, 'renewing the leader lease failed; re-reading it');
      }
    }
    let lease: Lease | undefined;
    try {
      lease = await client.get<Lease>(LEASE, namespace, this.name);
    } catch (err) {
      if (!(err instanceof ApiError && err.notFound)) {
        this.log.warn({ err }, 'could not read the leader lease');
        return false;
      }
    }
    if (lease) this.observe(lease, now);
    const decision = decideElection({ identity, now, record: lease?.spec, observedAt: this.observedAt, leaseDurationMs: this.leaseDurationMs });
    if (decision.action === 'wait') return false;
    const spec = nextRecord(lease?.spec, identity, wallNow, this.leaseDurationMs);
    try {
      const written = lease
        ? await client.update<Lease>(LEASE, namespace, { ...lease, spec })
        : await client.create<Lease>(LEASE, namespace, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.name, namespace }, spec });
      this.observe(written, now);
      return true;
    } catch (err) {
      // Conflict/AlreadyExists: another replica wrote first, which is how the race is meant to end.
      const raced = err instanceof ApiError && (err.conflict || err.alreadyExists);
      if (!raced) this.log.warn({ err }, `could not ${decision.action} the leader lease`);
      return false;
    }
  }

  private observe(lease: Lease, now: number): void {
    const raw = JSON.stringify(lease.spec ?? {});
    if (raw !== this.observedRaw) {
      this.observedRaw = raw;
      this.observedAt = now;
    }
    this.observed = lease;
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.lastLeader) {
      this.lastLeader = holder;
      if (holder) {
        this.log.info({ leader: holder }, 'new leader elected');
        this.options.onNewLeader?.(holder);
      }
    }
  }

  /**
   * While standing by, watch the Lease so a release (empty holder) or deletion wakes the campaign
   * at once. Best effort: without the watch verb (or on any error) the retry period still applies,
   * and the watch is reopened at most once per retry.
   */
  private watchWhileStandingBy(): void {
    const rv = this.observed?.metadata.resourceVersion;
    if (this.standbyWatch || !rv || this.watchForbidden) return;
    const handle = this.options.client.watch<Lease>(LEASE, this.options.namespace,
      { fieldSelector: `metadata.name=${this.name}`, resourceVersion: rv, timeoutSeconds: 300 },
      (event) => {
        if (event.type === 'MODIFIED' || event.type === 'ADDED') {
          // A renew seen now is observed now: the expiry estimate stays exact between reads.
          if (!this.leading) this.observe(event.object, this.clock.now());
          if (!event.object.spec?.holderIdentity) this.wake.abort();
        } else if (event.type === 'DELETED') {
          this.wake.abort();
        }
      });
    this.standbyWatch = handle;
    handle.done
      .catch((err) => {
        // Without RBAC `watch` on leases there is no point asking again every retry.
        if (err instanceof ApiError && err.statusCode === 403) {
          this.watchForbidden = true;
          this.log.info('no permission to watch the leader lease; standing by with periodic retries only');
        } else {
          this.log.debug({ err }, 'standby watch of the leader lease ended');
        }
      })
      .finally(() => {
        if (this.standbyWatch === handle) this.standbyWatch = undefined;
      });
  }

  private async withDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
    let timer: unknown;
    const timeout = new Promise<boolean>((resolve) => (timer = this.clock.setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([attempt, timeout]);
    } finally {
      this.clock.clearTimeout(timer);
    }
  }
}
