/**
 * Short-lived tokens for the router only. Sending the router the kubeconfig's own token hands it a
 * credential that works against the API server too; a token minted with TokenRequest for the
 * router's audience (`sandbox-router`) is refused by the API server, expires in minutes, and the
 * router verifies it with a TokenReview for that audience. The ServiceAccount is the one the
 * kubeconfig authenticates as (read from its token's claims); it needs `create` on its own
 * `serviceaccounts/token` (the library's SandboxAccess grants it).
 */
import { SandboxConfigError } from './errors.js';
import type { KubeApi } from './kube.js';

/** The router's default `--auth-audience`. */
export const ROUTER_AUDIENCE = 'sandbox-router';

export interface RouterTokenOptions {
  /** The audience the router checks (its `--auth-audience`). @default "sandbox-router" */
  readonly audience?: string;
  /** Lifetime of each token; the API server may shorten it (its minimum is 600). @default 600 */
  readonly expirationSeconds?: number;
}

/** `system:serviceaccount:<namespace>:<name>` of a ServiceAccount token, from its (unverified) claims. */
export function serviceAccountOf(token: string | undefined): { namespace: string; name: string } | undefined {
  const payload = token?.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    const m = typeof claims.sub === 'string' ? /^system:serviceaccount:([^:]+):([^:]+)$/.exec(claims.sub) : null;
    return m ? { namespace: m[1], name: m[2] } : undefined;
  } catch {
    return undefined;
  }
}

export class RouterTokens {
  private readonly audience: string;
  private readonly expirationSeconds: number;
  private current?: { token: string; refreshAt: number };
  private minting?: Promise<string>;

  public constructor(private readonly kube: KubeApi, options: RouterTokenOptions = {}, private readonly now: () => number = Date.now) {
    this.audience = options.audience ?? ROUTER_AUDIENCE;
    this.expirationSeconds = options.expirationSeconds ?? 600;
    if (this.audience.trim() === '') throw new SandboxConfigError('routerToken.audience', 'must not be empty; the router\'s default is "sandbox-router"');
    if (!(Number.isInteger(this.expirationSeconds) && this.expirationSeconds >= 600)) {
      throw new SandboxConfigError('routerToken.expirationSeconds', `must be a whole number of seconds, at least 600 (the API server's minimum), got ${this.expirationSeconds}`);
    }
  }

  /** A token for the router, minted anew once 80% of the last one's life has passed. */
  public async token(): Promise<string> {
    if (this.current && this.now() < this.current.refreshAt) return this.current.token;
    this.minting ??= this.mint().finally(() => (this.minting = undefined));
    return this.minting;
  }

  private async mint(): Promise<string> {
    const own = await this.kube.bearerToken();
    const account = serviceAccountOf(own);
    if (!account) {
      throw new SandboxConfigError('routerToken', 'needs the kubeconfig to authenticate as a ServiceAccount (a ServiceAccount token), to mint tokens for it; '
        + 'run in a Pod (inCluster) or use a ServiceAccount kubeconfig, or leave routerToken unset to send the kubeconfig\'s own token');
    }
    const path = `/api/v1/namespaces/${encodeURIComponent(account.namespace)}/serviceaccounts/${encodeURIComponent(account.name)}/token`;
    const issued = this.now();
    const request = await this.kube.create<{ spec?: { expirationSeconds?: number }; status?: { token?: string } }>(path, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: [this.audience], expirationSeconds: this.expirationSeconds },
    });
    const token = request.status?.token;
    if (!token) throw new SandboxConfigError('routerToken', `the API server returned no token for ServiceAccount ${account.namespace}/${account.name}`);
    // The lifetime the API server granted (it may shorten the one asked for), on this machine's clock.
    const lifetimeMs = (request.spec?.expirationSeconds ?? this.expirationSeconds) * 1000;
    this.current = { token, refreshAt: issued + 0.8 * lifetimeMs };
    return token;
  }
}
