/** A TokenReview / SubjectAccessReview stand-in for the router's authorizer tests: users by token, grants as strings. */
import type { ResourceAttributes, Reviewer, TokenReviewResult, UserInfo } from '../../src/router/auth';

export class ScriptedReviewer implements Reviewer {
  public tokenReviews = 0;
  /** The audiences each TokenReview asked for (empty: the API server's own). */
  public readonly audiencesAsked: string[][] = [];
  /** `<user> <verb> <resource>[/<subresource>] <namespace>/<name>` of every access review. */
  public readonly accessReviews: string[] = [];
  /** The attributes of every access review, as sent. */
  public readonly attributes: ResourceAttributes[] = [];
  public fail = false;
  /** While set, reviews wait for it (an API server that does not answer). */
  public hang?: Promise<void>;

  /** `users`: token → username; `grants`: the access reviews that are allowed; `audiences`: token → status.audiences. */
  public constructor(
    private readonly users: Record<string, string>,
    private readonly grants: string[],
    private readonly audiences: Record<string, string[]> = {},
  ) {}

  public async tokenReview(token: string, audiences?: readonly string[]): Promise<TokenReviewResult | undefined> {
    this.tokenReviews++;
    this.audiencesAsked.push([...(audiences ?? [])]);
    if (this.hang) await this.hang;
    if (this.fail) throw new Error('apiserver down');
    const username = this.users[token];
    return username ? { user: { username }, audiences: this.audiences[token] ?? ['https://kubernetes.default.svc'] } : undefined;
  }

  public async accessReview(user: UserInfo, a: ResourceAttributes): Promise<boolean> {
    if (this.hang) await this.hang;
    const key = `${user.username} ${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''} ${a.namespace}/${a.name}`;
    this.accessReviews.push(key);
    this.attributes.push(a);
    return this.grants.includes(key);
  }
}
