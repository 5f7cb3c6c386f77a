/**
 * Resume on request (ours): a request for a Sandbox its idle policy suspended (resumeOnRequest, the
 * default) resumes it instead of being refused, and is held until the caches show it serving.
 *
 * Only an authorized caller resumes anything (the Router asks here after its authorize step). One
 * merge patch per Sandbox however many requests arrive at once: they share it, and keep sharing it
 * until the caches show the Sandbox serving (or the wait bound passes), so a request that arrives
 * while the watch still shows the suspension does not patch again. The patch stamps last activity
 * with the resume, so the operator does not suspend it again before the request gets through, and
 * is conditional on the cached resourceVersion and uid (see `patch`).
 */
import { SandboxAnnotations } from '#api/labels';
import { type ResolveRequest, type Resolved, type Settled, SUSPENDED_REASON, type SettleOutcome, type Unresolved } from './resolve';
import { activityStamp, activityStampIntervalMs, idlePolicyOf, isReady, lastActivityMs, RESOURCES, resumesOnRequest, type Sandbox } from '../model';
import type { RouterMetrics } from './metrics';
import { SYSTEM_CLOCK } from '../runtime/clock';
import type { Logger } from '../runtime/log';
import { ApiError, type Informer, type KubeClient } from '../runtime/types';

/** The reason of the 503 for a request whose resume did not finish within its bound. */
export const RESUMING_REASON = 'SandboxResuming';
/** A resume takes a few seconds (a new Pod): asking again sooner would only be refused again. */
const RESUMING_RETRY_AFTER_SECONDS = '2';
/** How long a resume patch that met a 409 waits for the cache to show the change (the watch lags by milliseconds). */
const CONFLICT_WAIT_MS = 1000;
/**
 * Resume patches tried again after a 409 on a Sandbox still suspended and allowed a wake. Just
 * after a suspension the operator writes the Sandbox's status a few times (the Pod terminating,
 * then gone), so a patch can meet more than one newer version in a row; each try waits for the
 * cache to show the change first, so this bounds a burst, never a loop.
 */
const CONFLICT_RETRIES = 8;

/** A refusal as the Router answers it (the shape of proxy.ts's Refused, which imports this module). */
export interface ResumeRefusal {
  readonly status: number;
  readonly detail: string;
  readonly headers?: Record<string, string>;
  readonly reason?: string;
}

export interface ResumerOptions {
  readonly client: Pick<KubeClient, 'patch'>;
  readonly sandboxes: Informer<Sandbox>;
  /** --resume-wait: the longest a request is held for a resume (0: no resume on request). */
  readonly waitMs: number;
  readonly log: Logger;
  readonly metrics?: RouterMetrics;
}

interface Resume {
  /** Settles with undefined once the patch is accepted, or with the refusal its failure means. */
  readonly done: Promise<ResumeRefusal | undefined>;
  /** An event has shown the Sandbox Running since: a suspension after that is a new one. */
  shownRunning: boolean;
  timer?: NodeJS.Timeout;
}

export class Resumer {
  private readonly resumes = new Map<string, Resume>();
  /** Resume patches that met a 409, each waiting for the cache to show what changed. */
  private readonly conflicted = new Set<() => void>();

  public constructor(private readonly opts: ResumerOptions) {
    const observe = (s: Sandbox) => {
      this.conflicted.forEach((check) => check());
      if (this.resumes.size > 0) this.observe(s);
    };
    opts.sandboxes.addHandlers({
      onAdd: observe,
      onUpdate: (_, s) => observe(s),
      onDelete: (s) => {
        this.conflicted.forEach((check) => check());
        this.end(keyOf(s));
      },
    });
  }

  public get waitMs(): number {
    return this.opts.waitMs;
  }

  /** Resumes under way or not yet seen serving. */
  public get pending(): number {
    return this.resumes.size;
  }

  /**
   * The resume a request for `req` is to wait for: this router's resume of that Sandbox still
   * under way, a new one when the cache shows it suspended and its idle policy lets a request
   * resume it, or one with nothing to patch when it is Running and waking (`waking`: another
   * router resumed it, or this one's resume ended at its bound); undefined when no resume applies
   * (the caller then gets today's answers). Call only for an authorized caller.
   */
  public resumeFor(req: ResolveRequest): Promise<ResumeRefusal | undefined> | undefined {
    if (this.opts.waitMs <= 0) return undefined;
    const sandbox = this.opts.sandboxes.get(req.namespace, req.id);
    if (!sandbox || (req.uid !== undefined && sandbox.metadata.uid !== req.uid)) return undefined;
    const key = keyOf(sandbox);
    const pending = this.resumes.get(key);
    if (pending) return pending.done;
    // Another router's resume (or an earlier one of this router's that ended at its bound): held the same way, nothing to patch.
    if (sandbox.spec?.operatingMode !== 'Suspended') return waking(sandbox, this.opts.waitMs) ? this.start(key, Promise.resolve(undefined), true) : undefined;
    return resumesOnRequest(sandbox) ? this.start(key, this.patch(sandbox), false) : undefined;
  }

  private start(key: string, done: Promise<ResumeRefusal | undefined>, shownRunning: boolean): Promise<ResumeRefusal | undefined> {
    const resume: Resume = { done, shownRunning };
    this.resumes.set(key, resume);
    // However the caches lag, the shared resume ends with the longest any request waits for it.
    resume.timer = setTimeout(() => this.end(key, resume), this.opts.waitMs).unref();
    void resume.done.then((failed) => failed && this.end(key, resume));
    return resume.done;
  }

  /**
   * Holds a request for `resume` (from resumeFor): its patch, then `settle` (the caches' wait for
   * the Sandbox to serve, with the time left), the whole bounded by --resume-wait and the request's
   * X-Sandbox-Timeout counted from `startedMs` (performance.now()) and cut short by `signal`. A slow
   * patch ends the hold like a slow Pod does (`timeout`, then held()'s 503). The refusal of a failed
   * resume, or how the wait settled.
   */
  public async hold(resume: Promise<ResumeRefusal | undefined>, timeoutMs: number | undefined, startedMs: number, signal: AbortSignal,
    settle: (waitMs: number) => Promise<Settled>): Promise<ResumeRefusal | Settled> {
    const bound = Math.min(this.opts.waitMs, timeoutMs ?? Infinity);
    const left = () => Math.max(0, bound - (performance.now() - startedMs));
    const patched = await within(resume, left(), signal);
    if (patched === 'timeout' || patched === 'aborted') return { ...(await settle(0)), outcome: patched };
    return patched ?? settle(left());
  }

  /**
   * After a request's wait for a resume (`waitedMs` since it asked): counts it, and returns the
   * 503 SandboxResuming when the Sandbox still does not serve at the bound. A refusal that is no
   * longer about the resume (the Sandbox was deleted: 404) stands as it is.
   */
  public held(req: ResolveRequest, result: Resolved | Unresolved, outcome: SettleOutcome, waitedMs: number): ResumeRefusal | undefined {
    const served = !('detail' in result);
    const counted = outcome === 'aborted' ? 'aborted' : served ? 'served' : 'timeout';
    this.opts.metrics?.resumeWaited(req.namespace, counted, waitedMs / 1000);
    if (counted !== 'timeout' || ('detail' in result && result.status === 404)) return undefined;
    const detail = `Sandbox ${req.namespace}/${req.id} was suspended and is resuming; it did not serve within ${Math.round(waitedMs)} ms (X-Sandbox-Timeout or --resume-wait). Retry shortly.`;
    return { status: 503, detail, reason: RESUMING_REASON, headers: { 'retry-after': RESUMING_RETRY_AFTER_SECONDS } };
  }

  public close(): void {
    for (const [key, resume] of this.resumes) this.end(key, resume);
  }

  /**
   * The resume patch, conditional on the Sandbox the cache shows (its resourceVersion and uid): a
   * change the cache has not seen (another router's resume, a newer suspension, a Sandbox made
   * anew, or only a status write just after the suspension) fails it with 409. Then, once the cache
   * shows the change: a Sandbox resumed meanwhile is joined, one still suspended and allowed a wake
   * is patched again on the newer version (up to CONFLICT_RETRIES times), anything else refused.
   */
  private async patch(sandbox: Sandbox, retriesLeft = CONFLICT_RETRIES): Promise<ResumeRefusal | undefined> {
    const { namespace, name, resourceVersion, uid } = sandbox.metadata;
    const annotations = { [SandboxAnnotations.IDLE_SUSPENDED_AT]: null, [SandboxAnnotations.LAST_ACTIVITY]: activityStamp(SYSTEM_CLOCK.now()) };
    const body = { spec: { operatingMode: 'Running' }, metadata: { resourceVersion: resourceVersion ?? '', uid, annotations } };
    try {
      await this.opts.client.patch(RESOURCES.sandboxes, namespace, name, 'merge', body);
      this.opts.metrics?.resumeStarted(namespace!, 'resumed');
      this.opts.log.info({ namespace, sandbox: name }, 'resuming an idle-suspended sandbox on request');
      return undefined;
    } catch (err) {
      if (retriesLeft > 0 && err instanceof ApiError && err.statusCode === 409) {
        const fresh = await this.changed(sandbox);
        if (!fresh) return { status: 404, detail: `Sandbox ${namespace}/${name} not found.` };
        if (fresh.spec?.operatingMode !== 'Suspended') return undefined;
        if (resumesOnRequest(fresh)) return this.patch(fresh, retriesLeft - 1);
      }
      this.opts.metrics?.resumeStarted(namespace!, 'failed');
      this.opts.log.warn({ namespace, sandbox: name, err: (err as Error).message }, 'could not resume a suspended sandbox on request');
      return resumeFailure(`${namespace}/${name}`, err as Error);
    }
  }

  /** The cached Sandbox once it differs from `sent` (another resourceVersion, or gone), or as it is after CONFLICT_WAIT_MS. */
  private changed(sent: Sandbox): Promise<Sandbox | undefined> {
    const { namespace, name, resourceVersion } = sent.metadata;
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.conflicted.delete(check);
        resolve(this.opts.sandboxes.get(namespace!, name));
      };
      const check = () => {
        if (this.opts.sandboxes.get(namespace!, name)?.metadata.resourceVersion !== resourceVersion) finish();
      };
      const timer = setTimeout(finish, CONFLICT_WAIT_MS);
      this.conflicted.add(check);
      check();
    });
  }

  private observe(sandbox: Sandbox): void {
    const key = keyOf(sandbox);
    const resume = this.resumes.get(key);
    if (!resume) return;
    if (sandbox.spec?.operatingMode === 'Suspended') {
      // Suspended again after the resume showed: requests from now on start a resume of their own.
      if (resume.shownRunning) this.end(key, resume);
      return;
    }
    resume.shownRunning = true;
    if (isReady(sandbox)) this.end(key, resume);
  }

  private end(key: string, resume = this.resumes.get(key)): void {
    if (!resume || this.resumes.get(key) !== resume) return;
    clearTimeout(resume.timer);
    this.resumes.delete(key);
  }
}

/**
 * Whether the Running, not yet Ready `sandbox` is waking from an idle suspension: its policy lets a
 * request wake it, and the resume is recent: the suspension mark is still on it (resumed by a
 * client; the operator clears it), or its last activity is within --resume-wait and a stamp interval
 * (a router's resume stamps it, and requests held meanwhile renew it every interval). A Sandbox that stays broken while requests
 * keep coming is held as well, each request at most --resume-wait, then 503 SandboxResuming with
 * Retry-After; one nobody asked for in that window gets the --ready-wait answers again.
 */
function waking(sandbox: Sandbox, waitMs: number): boolean {
  if (!resumesOnRequest(sandbox) || isReady(sandbox)) return false;
  if (sandbox.metadata.annotations?.[SandboxAnnotations.IDLE_SUSPENDED_AT] !== undefined) return true;
  const last = lastActivityMs(sandbox);
  return last !== undefined && SYSTEM_CLOCK.now() - last < waitMs + activityStampIntervalMs(idlePolicyOf(sandbox)!);
}

/** `promise`'s value, or 'timeout' after `ms`, or 'aborted' when `signal` aborts first. */
function within<T>(promise: Promise<T>, ms: number, signal: AbortSignal): Promise<T | 'timeout' | 'aborted'> {
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve, reject) => {
    const end = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
    };
    const aborted = () => resolve('aborted');
    const timer = setTimeout(() => resolve('timeout'), ms);
    signal.addEventListener('abort', aborted, { once: true });
    promise.then((value) => resolve(value), reject).finally(end);
  });
}

function keyOf(sandbox: Sandbox): string {
  return `${sandbox.metadata.namespace}/${sandbox.metadata.name}`;
}

/** What a failed resume patch means for the request, with the API server's answer in the detail. */
export function resumeFailure(name: string, err: Error): ResumeRefusal {
  const api = err instanceof ApiError ? err : undefined;
  const why = api ? `${api.statusCode} ${api.reason}: ${api.message}` : err.message;
  const detail = `Sandbox ${name} is suspended and the router could not resume it (${why})`;
  if (api?.notFound) return { status: 404, detail: `Sandbox ${name} not found.` };
  // The router's own configuration: it needs patch on sandboxes (the install bundle's ClusterRole grants it).
  if (api?.statusCode === 403) return { status: 502, detail: `${detail}; the router needs patch on sandboxes.agents.x-k8s.io.` };
  // The API server refused the change itself (a conflict, validation, an admission webhook): it stays suspended.
  if (api && api.statusCode >= 400 && api.statusCode < 500) return { status: 409, detail: `${detail}.`, reason: SUSPENDED_REASON };
  return { status: 503, detail: `${detail}; retry shortly.`, headers: { 'retry-after': '1' } };
}
