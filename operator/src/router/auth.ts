/**
 * Who may use the router.
 * - `kubernetes` (default): the bearer token is checked with a TokenReview, then a
 *   SubjectAccessReview asks whether that user may `get` the requested Sandbox (or the
 *   SandboxClaim of the same name) in its namespace. Decisions are cached briefly, bounded in size.
 * - `token`: one static bearer token from a file, compared in constant time (the legacy Python
 *   router's ROUTER_AUTH_TOKEN).
 * - `none`: everyone; only when asked for explicitly, and logged as a warning at start-up.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { KINDS } from '../../../src/api/groups';
import type { KubeClient, KubeObject, ResourceType } from '../runtime/types';

export type AuthMode = 'kubernetes' | 'token' | 'none';
export const AUTH_MODES: readonly AuthMode[] = ['kubernetes', 'token', 'none'];

export interface AuthRequest {
  /** The Authorization header, if any. */
  readonly authorization?: string;
  readonly namespace: string;
  readonly id: string;
}

export type AuthDecision = { readonly allowed: true } | { readonly allowed: false; readonly status: number; readonly detail: string };

export interface Authorizer {
  check(req: AuthRequest): Promise<AuthDecision>;
}

const ALLOW: AuthDecision = { allowed: true };
const UNAUTHENTICATED: AuthDecision = { allowed: false, status: 401, detail: 'unauthenticated' };
const FORBIDDEN: AuthDecision = { allowed: false, status: 403, detail: 'forbidden' };

/** The token of `Bearer <token>` (scheme case-insensitive), trimmed; undefined otherwise. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m ? m[1] : undefined;
}

export const ALLOW_ALL: Authorizer = { check: async () => ALLOW };

export class StaticTokenAuthorizer implements Authorizer {
  private readonly digest: Buffer;

  public constructor(token: string) {
    const trimmed = token.trim();
    if (trimmed === '') throw new Error('the router token is empty');
    this.digest = sha256(trimmed);
  }

  public async check(req: AuthRequest): Promise<AuthDecision> {
    const token = bearerToken(req.authorization);
    // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
    return token !== undefined && timingSafeEqual(sha256(token), this.digest) ? ALLOW : UNAUTHENTICATED;
  }
}

export interface UserInfo {
  readonly username?: string;
  readonly uid?: string;
  readonly groups?: string[];
  readonly extra?: Record<string, string[]>;
}

/** The two API calls of the kubernetes mode; tests inject their own. */
export interface Reviewer {
  /** The user the token belongs to, or undefined when the API server does not authenticate it. */
  tokenReview(token: string): Promise<UserInfo | undefined>;
  /** Whether `user` may `get` `resource` (in `group`) named `name` in `namespace`. */
  accessReview(user: UserInfo, group: string, resource: string, namespace: string, name: string): Promise<boolean>;
}

export interface KubernetesAuthorizerOptions {
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
}

interface CacheEntry {
  readonly decision: AuthDecision;
  readonly expires: number;
}

export class KubernetesAuthorizer implements Authorizer {
  private readonly cache = new Map<string, CacheEntry>();
  /** Reviews under way, so a burst with one token asks the API server once. */
  private readonly pending = new Map<string, Promise<AuthDecision>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  public constructor(private readonly reviewer: Reviewer, options: KubernetesAuthorizerOptions = {}) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 4096;
    this.now = options.now ?? Date.now;
  }

  public get cacheSize(): number {
    return this.cache.size;
  }

  public async check(req: AuthRequest): Promise<AuthDecision> {
    const token = bearerToken(req.authorization);
    if (token === undefined) return UNAUTHENTICATED;
    const key = `${sha256(token).toString('hex')} ${req.namespace}/${req.id}`;
    const cached = this.cache.get(key);
    if (cached && cached.expires > this.now()) return cached.decision;
    this.cache.delete(key);
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const asked = this.reviewAndCache(key, token, req).finally(() => this.pending.delete(key));
    this.pending.set(key, asked);
    return asked;
  }

  private async reviewAndCache(key: string, token: string, req: AuthRequest): Promise<AuthDecision> {
    let decision: AuthDecision;
    try {
      decision = await this.review(token, req);
    } catch (err) {
      // Not cached: the next request asks again.
      return { allowed: false, status: 500, detail: `tokenreview: ${(err as Error).message}` };
    }
    while (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { decision, expires: this.now() + this.ttlMs });
    return decision;
  }

  private async review(token: string, req: AuthRequest): Promise<AuthDecision> {
    const user = await this.reviewer.tokenReview(token);
    if (!user) return UNAUTHENTICATED;
    if (await this.reviewer.accessReview(user, KINDS.sandbox.group, KINDS.sandbox.plural, req.namespace, req.id)) return ALLOW;
    if (await this.reviewer.accessReview(user, KINDS.claim.group, KINDS.claim.plural, req.namespace, req.id)) return ALLOW;
    return FORBIDDEN;
  }
}

const TOKEN_REVIEWS: ResourceType = { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews', namespaced: false };
const ACCESS_REVIEWS: ResourceType = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews', namespaced: false };

interface Review extends KubeObject {
  status?: { authenticated?: boolean; allowed?: boolean; user?: UserInfo; error?: string };
}

/** TokenReview and SubjectAccessReview through the operator's client. */
export class KubeReviewer implements Reviewer {
  public constructor(private readonly client: KubeClient) {}

  public async tokenReview(token: string): Promise<UserInfo | undefined> {
    const review = await this.client.create<Review>(TOKEN_REVIEWS, undefined, {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token },
    });
    return review.status?.authenticated ? (review.status.user ?? {}) : undefined;
  }

  public async accessReview(user: UserInfo, group: string, resource: string, namespace: string, name: string): Promise<boolean> {
    const review = await this.client.create<Review>(ACCESS_REVIEWS, undefined, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: {
        user: user.username,
        uid: user.uid,
        groups: user.groups,
        extra: user.extra,
        resourceAttributes: { verb: 'get', group, resource, namespace, name },
      },
    });
    return review.status?.allowed === true;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
