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
 * An unauthenticated caller must not be able to make the router hammer the API server, nor lock
 * out the callers it already knows: answers to TokenReviews are cached (bounded, refusals in a cache
 * of their own so a flood of bad tokens cannot push out good ones); a token that passed within
 * `trustTtlMs` is reviewed again without any rate limit, and while the API server does not answer it
 * keeps its last answer; a token never seen costs a review only within a total rate, and a client
 * address (IPv6 by /64) may have only so many such reviews under way and so many refused per second.
 * Token and access reviews each have their own bound on reviews under way, and a review the API
 * server does not answer in time is a 503.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { KINDS } from '#api/groups';
import type { TokenReviewOutcome } from './metrics';
import { TokenBucket } from '../runtime/rate-limit';
import type { KubeObject, ResourceType } from '../runtime/types';

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
  /** TokenReviews of tokens never seen (or not within `trustTtlMs`), per second, in total. @default 100 */
  readonly reviewQps?: number;
  /** Burst of the total review rate. @default 200 */
  readonly reviewBurst?: number;
  /** Refused tokens per second one client address (IPv6: its /64) may present before it gets 429. @default 5 */
  readonly clientReviewQps?: number;
  /** Burst of one client's refused tokens, and the most reviews of its new tokens under way at once. @default 20 */
  readonly clientReviewBurst?: number;
  /** TokenReviews waiting on the API server at once (SubjectAccessReviews have as many of their own); more get 503. @default 64 */
  readonly maxPendingReviews?: number;
  /** How long a token that passed a review is trusted: reviewed again unthrottled, its last answer kept while the API server is down. @default 5 min */
  readonly trustTtlMs?: number;
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

  public delete(key: string): void {
    this.entries.delete(key);
  }

  public get size(): number {
    return this.entries.size;
  }
}

/** One client address's budget for new tokens: reviews under way, and refusals per second. */
interface ClientBudget {
  pending: number;
  readonly refusals: TokenBucket;
}

/** Budgets by client address (IPv6 grouped by /64), at most `max` of them (the least recently used goes first). */
class ClientBudgets {
  private readonly budgets = new Map<string, ClientBudget>();

  public constructor(private readonly qps: number, private readonly burst: number, private readonly max: number) {}

  public get(address: string | undefined): ClientBudget {
    const key = clientKey(address);
    let budget = this.budgets.get(key);
    if (budget) this.budgets.delete(key);
    else budget = { pending: 0, refusals: new TokenBucket(this.qps, this.burst) };
    this.budgets.set(key, budget);
    while (this.budgets.size > this.max) this.budgets.delete(this.budgets.keys().next().value!);
    return budget;
  }

  /** Whether the client may have one more new token reviewed now. */
  public admits(budget: ClientBudget): boolean {
    return budget.pending < this.burst && budget.refusals.available() >= 1;
  }
}

/** A client's key: its address, an IPv6 one cut to its /64 (one host can hold a whole /64). */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return '';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4) return v4[1];
  if (!address.includes(':')) return address;
  const [head, tail = ''] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':')}::/64`;
}

class ReviewTimeout extends Error {}

export class KubernetesAuthorizer implements Authorizer {
  private readonly users: ExpiringCache<Principal>;
  /** Tokens that passed a review within trustTtlMs (longer than the answer cache). */
  private readonly trusted: ExpiringCache<Principal>;
  private readonly refused: ExpiringCache<Refusal>;
  private readonly decisions: ExpiringCache<boolean>;
  /** Reviews under way, so a burst with one token (or one access) asks the API server once. */
  private readonly pendingTokens = new Map<string, Promise<Principal | Refusal>>();
  private readonly pendingAccess = new Map<string, Promise<AuthDecision>>();
  private readonly total: TokenBucket;
  private readonly clients: ClientBudgets;
  private readonly maxPending: number;
  private readonly timeoutMs: number;
  private readonly audience: string;
  private readonly acceptApiTokens: boolean;
  private readonly onTokenReview?: (outcome: TokenReviewOutcome) => void;
  private tokensInFlight = 0;
  private accessInFlight = 0;

  public constructor(private readonly reviewer: Reviewer, options: KubernetesAuthorizerOptions = {}) {
    const ttl = options.ttlMs ?? 10_000;
    const now = options.now ?? Date.now;
    const max = options.maxEntries ?? 4096;
    this.users = new ExpiringCache(max, ttl, now);
    this.decisions = new ExpiringCache(max, ttl, now);
    this.refused = new ExpiringCache(options.maxNegativeEntries ?? 4096, ttl, now);
    this.trusted = new ExpiringCache(max, Math.max(ttl, options.trustTtlMs ?? 300_000), now);
    this.total = new TokenBucket(options.reviewQps ?? 100, options.reviewBurst ?? 200);
    this.clients = new ClientBudgets(options.clientReviewQps ?? 5, options.clientReviewBurst ?? 20, 4096);
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
    const trusted = this.trusted.get(key);
    let asked: Promise<Principal | Refusal>;
    if (trusted) {
      // Known good a moment ago: checked again (it may have been revoked), never throttled.
      asked = this.reviewToken(key, token, trusted);
    } else {
      // A token nobody has shown lately costs a TokenReview: those are paced in total, and a client
      // may have only so many under way and so many refused.
      const client = this.clients.get(caller.remoteAddress);
      if (!this.clients.admits(client)) {
        this.report('throttled');
        return { allowed: false, status: 429, detail: 'Too many new or refused tokens from this client; retry later.', headers: RETRY_SOON };
      }
      if (!this.total.tryTake()) {
        this.report('throttled');
        return { allowed: false, status: 429, detail: 'Too many new tokens; retry later.', headers: RETRY_SOON };
      }
      client.pending++;
      asked = this.reviewToken(key, token).then((outcome) => {
        if (isRefusal(outcome) && outcome.status === 401) client.refusals.tryTake();
        return outcome;
      }).finally(() => client.pending--);
    }
    asked = asked.finally(() => this.pendingTokens.delete(key));
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

  /** `trusted`: the token's last good answer, kept when the API server cannot answer now. */
  private async reviewToken(key: string, token: string, trusted?: Principal): Promise<Principal | Refusal> {
    const bound = audiencesOf(token).includes(this.audience);
    if (!bound && !this.acceptApiTokens) {
      const refusal: Refusal = { ...UNAUTHENTICATED, detail: `unauthenticated: the router accepts only tokens for the audience "${this.audience}" (TokenRequest audiences: ["${this.audience}"])` };
      this.refused.set(key, refusal);
      return refusal;
    }
    let result: TokenReviewResult | undefined;
    try {
      result = await this.bounded('tokens', () => this.reviewer.tokenReview(token, bound ? [this.audience] : undefined));
    } catch (err) {
      this.report('error');
      // Not cached: the next request asks again. A token trusted a moment ago keeps its answer meanwhile.
      return trusted ?? unavailable('TokenReview', err as Error);
    }
    // With audiences asked for, the API server must say the token is valid for ours.
    if (!result || (bound && !(result.audiences ?? []).includes(this.audience))) {
      this.report('unauthenticated');
      this.trusted.delete(key);
      this.refused.set(key, UNAUTHENTICATED);
      return UNAUTHENTICATED;
    }
    this.report('authenticated');
    const principal: Principal = { key, user: result.user };
    this.users.set(key, principal);
    this.trusted.set(key, principal);
    return principal;
  }

  private async reviewAccess(key: string, user: UserInfo, access: SandboxAccess): Promise<AuthDecision> {
    const connect = (resource: string, name: string): ResourceAttributes => ({
      verb: 'create', group: resource === KINDS.claim.plural ? KINDS.claim.group : KINDS.sandbox.group, resource, subresource: CONNECT_SUBRESOURCE, namespace: access.namespace, name,
    });
    // The claim's permission first (what an agent is granted); `sandboxes/connect` also covers a
    // claimed Sandbox, for operators granted it namespace-wide.
    // For a claimed Sandbox only a namespace-wide grant (name "") counts: a grant for one Sandbox
    // name would otherwise open any claim's cold Sandbox of that name.
    const asks = access.claim !== undefined
      ? [connect(KINDS.claim.plural, access.claim), connect(KINDS.sandbox.plural, '')]
      : [connect(KINDS.sandbox.plural, access.sandbox)];
    let allowed = false;
    try {
      for (const attributes of asks) {
        if ((allowed = await this.bounded('access', () => this.reviewer.accessReview(user, attributes)))) break;
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

  /** One review, counted against its kind's bound on reviews under way and cut off at the review timeout. */
  private async bounded<T>(kind: 'tokens' | 'access', review: () => Promise<T>): Promise<T> {
    const count = kind === 'tokens' ? 'tokensInFlight' : 'accessInFlight';
    if (this[count] >= this.maxPending) throw new Error('too many reviews waiting on the API server');
    this[count]++;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        review(),
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ReviewTimeout(`the API server did not answer within ${this.timeoutMs} ms`)), this.timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
      this[count]--;
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

/** The one call KubeReviewer makes: a POST whose status and body come back as they are. */
export interface RawPoster {
  rawRequest(method: string, path: string, options: { body?: unknown; timeoutMs?: number }): Promise<{ status: number; text: string }>;
}

/**
 * TokenReview and SubjectAccessReview through a client of their own (so informer re-lists never wait
 * behind them), each POST cut off at `timeoutMs` and never retried: a review the API server did not
 * answer in time is not sent again later, when nobody waits for it.
 */
export class KubeReviewer implements Reviewer {
  public constructor(private readonly client: RawPoster, private readonly timeoutMs = 5_000) {}

  public async tokenReview(token: string, audiences?: readonly string[]): Promise<TokenReviewResult | undefined> {
    const review = await this.post(`/apis/${TOKEN_REVIEWS.group}/${TOKEN_REVIEWS.version}/${TOKEN_REVIEWS.resource}`, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token, ...(audiences?.length ? { audiences } : {}) },
    });
    return review.status?.authenticated ? { user: review.status.user ?? {}, audiences: review.status.audiences } : undefined;
  }

  public async accessReview(user: UserInfo, attributes: ResourceAttributes): Promise<boolean> {
    const review = await this.post(`/apis/${ACCESS_REVIEWS.group}/${ACCESS_REVIEWS.version}/${ACCESS_REVIEWS.resource}`, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, resourceAttributes: attributes },
    });
    return review.status?.allowed === true;
  }

  private async post(path: string, body: object): Promise<Review> {
    const { status, text } = await this.client.rawRequest('POST', path, { body, timeoutMs: this.timeoutMs });
    if (status < 200 || status >= 300) throw new Error(`${path}: HTTP ${status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as Review;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
