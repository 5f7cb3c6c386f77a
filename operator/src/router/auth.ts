/**
 * Who may use the router, in two steps: `authenticate` (who is calling) runs before the router
 * looks at its caches, `authorize` (may they use this sandbox) once it knows which object owns the
 * sandbox.
 * - `kubernetes` (default): the bearer token is checked with a TokenReview; then a
 *   SubjectAccessReview asks whether that user may `create` the `connect` subresource of the
 *   SandboxClaim that controls the Sandbox (`sandboxclaims/connect`), or of the Sandbox itself
 *   (`sandboxes/connect`). Using a sandbox runs commands in it, so it is a permission of its own, as
 *   `pods/exec` is for Pods: reading claims or Sandboxes grants nothing here.
 * - `token`: one static bearer token from a file, compared in constant time (the legacy Python
 *   router's ROUTER_AUTH_TOKEN).
 * - `none`: everyone; only when asked for explicitly, and logged as a warning at start-up.
 *
 * An unauthenticated caller must not be able to make the router hammer the API server: answers to
 * TokenReviews are cached (bounded, failures in a cache of their own so a flood of bad tokens cannot
 * push out good ones), reviews of new tokens are rate-limited per client address and in total, at
 * most `maxPendingReviews` run at once, and a review the API server does not answer in time is a 503.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokenReviewOutcome } from './metrics';
import { KINDS } from '../../../src/api/groups';
import { TokenBucket } from '../runtime/rate-limit';
import type { KubeClient, KubeObject, ResourceType } from '../runtime/types';

export type AuthMode = 'kubernetes' | 'token' | 'none';
export const AUTH_MODES: readonly AuthMode[] = ['kubernetes', 'token', 'none'];

/** The audience of tokens minted for the router (TokenRequest `audiences`), and the router's default. */
export const ROUTER_AUDIENCE = 'sandbox-router';

/** The subresource whose `create` permission means "may use this sandbox". */
export const CONNECT_SUBRESOURCE = 'connect';

export interface Caller {
  /** The Authorization header, if any. */
  readonly authorization?: string;
  /** The client's address, for per-client limits. */
  readonly remoteAddress?: string;
}

/** The sandbox a request is for, and what the router's cache says controls it. */
export interface SandboxAccess {
  readonly namespace: string;
  readonly sandbox: string;
  /** The SandboxClaim that controls the Sandbox (its controller ownerReference), if one does. */
  readonly claim?: string;
}

/** An authenticated caller; `key` identifies it in caches (a digest of its token, never the token). */
export interface Principal {
  readonly key: string;
  readonly user?: UserInfo;
}

export interface Refusal {
  readonly allowed: false;
  readonly status: number;
  readonly detail: string;
  readonly headers?: Record<string, string>;
}

export type AuthDecision = { readonly allowed: true } | Refusal;

export interface Authorizer {
  /** Who is calling, or why they are refused (401, or 429/503 when the check cannot be made now). */
  authenticate(caller: Caller): Promise<Principal | Refusal>;
  /** Whether `principal` may use the sandbox. */
  authorize(principal: Principal, access: SandboxAccess): Promise<AuthDecision>;
}

export function isRefusal(value: Principal | Refusal | AuthDecision): value is Refusal {
  return 'allowed' in value && value.allowed === false;
}

const ALLOW: AuthDecision = { allowed: true };
const UNAUTHENTICATED: Refusal = { allowed: false, status: 401, detail: 'unauthenticated' };
const FORBIDDEN: Refusal = { allowed: false, status: 403, detail: 'forbidden' };
const RETRY_SOON = { 'retry-after': '1' };

/** The token of `Bearer <token>` (scheme case-insensitive), trimmed; undefined otherwise. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m ? m[1] : undefined;
}

export const ALLOW_ALL: Authorizer = {
  authenticate: async () => ({ key: 'anyone' }),
  authorize: async () => ALLOW,
};

export class StaticTokenAuthorizer implements Authorizer {
  private readonly digest: Buffer;

  public constructor(token: string) {
    const trimmed = token.trim();
    if (trimmed === '') throw new Error('the router token is empty');
    this.digest = sha256(trimmed);
  }

  public async authenticate(caller: Caller): Promise<Principal | Refusal> {
    const token = bearerToken(caller.authorization);
    // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
    return token !== undefined && timingSafeEqual(sha256(token), this.digest) ? { key: 'token' } : UNAUTHENTICATED;
  }

  public async authorize(): Promise<AuthDecision> {
    return ALLOW;
  }
}

export interface UserInfo {
  readonly username?: string;
  readonly uid?: string;
  readonly groups?: string[];
  readonly extra?: Record<string, string[]>;
}

/** A SubjectAccessReview's resourceAttributes. */
export interface ResourceAttributes {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly namespace: string;
  readonly name: string;
}

export interface TokenReviewResult {
  readonly user: UserInfo;
  /** The audiences the API server says the token is valid for (status.audiences). */
  readonly audiences?: string[];
}

/** The two API calls of the kubernetes mode; tests inject their own. */
export interface Reviewer {
  /**
   * The user the token belongs to, or undefined when the API server does not authenticate it.
   * `audiences` empty or absent: the API server's own audiences.
   */
  tokenReview(token: string, audiences?: readonly string[]): Promise<TokenReviewResult | undefined>;
  /** Whether `user` may do what `attributes` describe. */
  accessReview(user: UserInfo, attributes: ResourceAttributes): Promise<boolean>;
}

export interface KubernetesAuthorizerOptions {
  /** How long an answer (positive or negative) is kept. @default 10 s */
  readonly ttlMs?: number;
  /** Most authenticated tokens, and most authorization decisions, kept. @default 4096 */
  readonly maxEntries?: number;
  /** Most refused tokens kept (their own cache, so they cannot evict good ones). @default 4096 */
  readonly maxNegativeEntries?: number;
  /** TokenReviews of tokens not in the cache, per second, in total. @default 50 */
  readonly reviewQps?: number;
  /** Burst of the total review rate. @default 100 */
  readonly reviewBurst?: number;
  /** TokenReviews of new tokens per second from one client address. @default 5 */
  readonly clientReviewQps?: number;
  /** Burst of one client's review rate. @default 20 */
  readonly clientReviewBurst?: number;
  /** Reviews (token and access) waiting on the API server at once; more get 503. @default 64 */
  readonly maxPendingReviews?: number;
  /** A review the API server has not answered by then is a 503. @default 5 s */
  readonly reviewTimeoutMs?: number;
  /**
   * The audience of router-bound tokens (TokenRequest `audiences`). A token whose (unverified) `aud`
   * claim names it is reviewed for that audience only. @default ROUTER_AUDIENCE
   */
  readonly audience?: string;
  /**
   * Also accept tokens for the API server itself (a ServiceAccount's own token, as upstream's SDKs
   * send). Off, only tokens bound to `audience` pass. @default true
   */
  readonly acceptApiTokens?: boolean;
  readonly now?: () => number;
  /** Told the outcome of every token not found in the cache. */
  readonly onTokenReview?: (outcome: TokenReviewOutcome) => void;
}

interface Entry<T> {
  readonly value: T;
  readonly expires: number;
}

/** A map with a size bound (oldest entry out first) and per-entry expiry. */
class ExpiringCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  public constructor(private readonly max: number, private readonly ttlMs: number, private readonly now: () => number) {}

  public get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expires > this.now()) return entry.value;
    if (entry) this.entries.delete(key);
    return undefined;
  }

  public set(key: string, value: T): void {
    this.entries.delete(key);
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }

  public get size(): number {
    return this.entries.size;
  }
}

/** Per-key token buckets, at most `max` keys (the least recently used goes first). */
class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  public constructor(private readonly qps: number, private readonly burst: number, private readonly max: number) {}

  public tryTake(key: string): boolean {
    let bucket = this.buckets.get(key);
    if (bucket) this.buckets.delete(key);
    else bucket = new TokenBucket(this.qps, this.burst);
    this.buckets.set(key, bucket);
    while (this.buckets.size > this.max) this.buckets.delete(this.buckets.keys().next().value!);
    return bucket.tryTake();
  }
}

class ReviewTimeout extends Error {}

export class KubernetesAuthorizer implements Authorizer {
  private readonly users: ExpiringCache<Principal>;
  private readonly refused: ExpiringCache<Refusal>;
  private readonly decisions: ExpiringCache<boolean>;
  /** Reviews under way, so a burst with one token (or one access) asks the API server once. */
  private readonly pendingTokens = new Map<string, Promise<Principal | Refusal>>();
  private readonly pendingAccess = new Map<string, Promise<AuthDecision>>();
  private readonly total: TokenBucket;
  private readonly perClient: KeyedBuckets;
  private readonly maxPending: number;
  private readonly timeoutMs: number;
  private readonly audience: string;
  private readonly acceptApiTokens: boolean;
  private readonly onTokenReview?: (outcome: TokenReviewOutcome) => void;
  private inFlight = 0;
  /** TokenReviews sent, for tests and the metrics. */
  public tokenReviews = 0;

  public constructor(private readonly reviewer: Reviewer, options: KubernetesAuthorizerOptions = {}) {
    const ttl = options.ttlMs ?? 10_000;
    const now = options.now ?? Date.now;
    const max = options.maxEntries ?? 4096;
    this.users = new ExpiringCache(max, ttl, now);
    this.decisions = new ExpiringCache(max, ttl, now);
    this.refused = new ExpiringCache(options.maxNegativeEntries ?? 4096, ttl, now);
    this.total = new TokenBucket(options.reviewQps ?? 50, options.reviewBurst ?? 100);
    this.perClient = new KeyedBuckets(options.clientReviewQps ?? 5, options.clientReviewBurst ?? 20, 4096);
    this.maxPending = options.maxPendingReviews ?? 64;
    this.timeoutMs = options.reviewTimeoutMs ?? 5_000;
    this.audience = options.audience ?? ROUTER_AUDIENCE;
    this.acceptApiTokens = options.acceptApiTokens ?? true;
    this.onTokenReview = options.onTokenReview;
  }

  /** Cached answers (authenticated tokens, refused tokens, authorization decisions). */
  public get cacheSize(): number {
    return this.users.size + this.refused.size + this.decisions.size;
  }

  public async authenticate(caller: Caller): Promise<Principal | Refusal> {
    const token = bearerToken(caller.authorization);
    if (token === undefined) return UNAUTHENTICATED;
    const key = sha256(token).toString('hex');
    const known = this.users.get(key) ?? this.refused.get(key);
    if (known) return known;
    const inFlight = this.pendingTokens.get(key);
    if (inFlight) return inFlight;
    // A token nobody has shown yet costs a TokenReview: those are paced, per client and in total.
    if (!this.perClient.tryTake(caller.remoteAddress ?? '')) {
      this.report('throttled');
      return { allowed: false, status: 429, detail: 'Too many new tokens from this client; retry later.', headers: RETRY_SOON };
    }
    if (!this.total.tryTake()) {
      this.report('throttled');
      return { allowed: false, status: 429, detail: 'Too many new tokens; retry later.', headers: RETRY_SOON };
    }
    const asked = this.reviewToken(key, token).finally(() => this.pendingTokens.delete(key));
    this.pendingTokens.set(key, asked);
    return asked;
  }

  public async authorize(principal: Principal, access: SandboxAccess): Promise<AuthDecision> {
    if (!principal.user) return FORBIDDEN;
    const key = `${principal.key} ${access.namespace}/${access.sandbox} ${access.claim ?? ''}`;
    const known = this.decisions.get(key);
    if (known !== undefined) return known ? ALLOW : FORBIDDEN;
    const inFlight = this.pendingAccess.get(key);
    if (inFlight) return inFlight;
    const asked = this.reviewAccess(key, principal.user, access).finally(() => this.pendingAccess.delete(key));
    this.pendingAccess.set(key, asked);
    return asked;
  }

  private async reviewToken(key: string, token: string): Promise<Principal | Refusal> {
    const bound = audiencesOf(token).includes(this.audience);
    if (!bound && !this.acceptApiTokens) {
      const refusal: Refusal = { ...UNAUTHENTICATED, detail: `unauthenticated: the router accepts only tokens for the audience "${this.audience}" (TokenRequest audiences: ["${this.audience}"])` };
      this.refused.set(key, refusal);
      return refusal;
    }
    let result: TokenReviewResult | undefined;
    try {
      this.tokenReviews++;
      result = await this.bounded(() => this.reviewer.tokenReview(token, bound ? [this.audience] : undefined));
    } catch (err) {
      this.report('error');
      return unavailable('TokenReview', err as Error); // not cached: the next request asks again
    }
    // With audiences asked for, the API server must say the token is valid for ours.
    if (!result || (bound && !(result.audiences ?? []).includes(this.audience))) {
      this.report('unauthenticated');
      this.refused.set(key, UNAUTHENTICATED);
      return UNAUTHENTICATED;
    }
    this.report('authenticated');
    const principal: Principal = { key, user: result.user };
    this.users.set(key, principal);
    return principal;
  }

  private async reviewAccess(key: string, user: UserInfo, access: SandboxAccess): Promise<AuthDecision> {
    const connect = (resource: string, name: string): ResourceAttributes => ({
      verb: 'create', group: resource === KINDS.claim.plural ? KINDS.claim.group : KINDS.sandbox.group, resource, subresource: CONNECT_SUBRESOURCE, namespace: access.namespace, name,
    });
    // The claim's permission first (what an agent is granted); `sandboxes/connect` also covers a
    // claimed Sandbox, for operators granted it namespace-wide.
    const asks = [
      ...(access.claim !== undefined ? [connect(KINDS.claim.plural, access.claim)] : []),
      connect(KINDS.sandbox.plural, access.sandbox),
    ];
    let allowed = false;
    try {
      for (const attributes of asks) {
        if ((allowed = await this.bounded(() => this.reviewer.accessReview(user, attributes)))) break;
      }
    } catch (err) {
      return unavailable('SubjectAccessReview', err as Error);
    }
    this.decisions.set(key, allowed);
    return allowed ? ALLOW : FORBIDDEN;
  }

  private report(outcome: TokenReviewOutcome): void {
    this.onTokenReview?.(outcome);
  }

  /** One review, counted against maxPendingReviews and cut off at the review timeout. */
  private async bounded<T>(review: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.maxPending) throw new Error('too many reviews waiting on the API server');
    this.inFlight++;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        review(),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ReviewTimeout(`the API server did not answer within ${this.timeoutMs} ms`)), this.timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
      this.inFlight--;
    }
  }
}

function unavailable(review: string, err: Error): Refusal {
  return { allowed: false, status: 503, detail: `Cannot check the credentials now (${review}: ${err.message}); retry later.`, headers: RETRY_SOON };
}

/**
 * The `aud` claim of a JWT, read without verifying it: it only picks which audience the TokenReview
 * asks the API server to verify. Anything that is not a JWT has none.
 */
export function audiencesOf(token: string): string[] {
  const parts = token.split('.');
  if (parts.length !== 3) return [];
  try {
    const aud = (JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { aud?: unknown }).aud;
    if (typeof aud === 'string') return [aud];
    return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
  } catch {
    return [];
  }
}

const TOKEN_REVIEWS: ResourceType = { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews', namespaced: false };
const ACCESS_REVIEWS: ResourceType = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews', namespaced: false };

interface Review extends KubeObject {
  status?: { authenticated?: boolean; allowed?: boolean; user?: UserInfo; audiences?: string[]; error?: string };
}

/** TokenReview and SubjectAccessReview through the operator's client. */
export class KubeReviewer implements Reviewer {
  public constructor(private readonly client: KubeClient) {}

  public async tokenReview(token: string, audiences?: readonly string[]): Promise<TokenReviewResult | undefined> {
    const review = await this.client.create<Review>(TOKEN_REVIEWS, undefined, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token, ...(audiences?.length ? { audiences } : {}) },
    });
    return review.status?.authenticated ? { user: review.status.user ?? {}, audiences: review.status.audiences } : undefined;
  }

  public async accessReview(user: UserInfo, attributes: ResourceAttributes): Promise<boolean> {
    const review = await this.client.create<Review>(ACCESS_REVIEWS, undefined, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, resourceAttributes: attributes },
    });
    return review.status?.allowed === true;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
