/**
 * What a request carries to authenticate, and when to get new credentials: a fixed token or
 * certificate, a token file re-read every minute (projected service-account tokens rotate), or an
 * exec credential plugin (`users[].user.exec` in a kubeconfig: gke-gcloud-auth-plugin, aws eks
 * get-token, kubelogin, ...), re-run when its ExecCredential expires or the API server answers 401,
 * as client-go does. No @kubernetes/client-node here: the CommonJS tools load this folder too.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { Clock, MONOTONIC_CLOCK, SYSTEM_CLOCK } from './clock';

/** The authentication of one request: headers and, for certificate users, the TLS client key pair. */
export interface RequestAuth {
  /** Authorization, Impersonate-User, ... */
  readonly headers: { readonly [name: string]: string };
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
}

/** Where requests get their authentication from. */
export interface Credentials {
  /** What the next request carries. */
  current(): Promise<RequestAuth>;
  /**
   * The API server answered 401 to a request that carried `used`: forget `used` if it is still the
   * current one. True when asking again may give something else, so the request is worth one retry.
   */
  rejected(used: RequestAuth): boolean;
}

/** Credentials that never change (a token or client certificate written in the kubeconfig). */
export class StaticCredentials implements Credentials {
  public constructor(private readonly auth: RequestAuth) {}

  public async current(): Promise<RequestAuth> {
    return this.auth;
  }

  /** Asking again would give the same: not worth a retry. */
  public rejected(_used: RequestAuth): boolean {
    return false;
  }
}

/** Newly obtained credentials and, when they say so, the time (ms since the epoch) they stop working. */
export interface Obtained {
  readonly auth: RequestAuth;
  readonly expiresAt?: number;
}

export interface RefreshingCredentialsOptions {
  /** Obtain them again after this long even if they have not expired. @default no limit */
  readonly maxAgeMs?: number;
  /**
   * When obtaining fails but an earlier answer exists, keep using it for another maxAgeMs instead of
   * failing requests (a token file being rotated). Called with the error. @default fail the request
   */
  readonly onRefreshError?: (err: Error) => void;
  /** The wall clock, which `Obtained.expiresAt` is read on. @default SYSTEM_CLOCK */
  readonly clock?: Clock;
  /** The clock the cache's lifetime runs on. @default clock when given, else MONOTONIC_CLOCK */
  readonly intervalClock?: Clock;
}

/**
 * Credentials obtained on first use and cached until they expire, reach maxAgeMs, or are rejected
 * with a 401. Concurrent requests share one refresh: an exec plugin runs once, not once per request.
 */
export class RefreshingCredentials implements Credentials {
  /** `validUntil` on the interval clock: an expiry (a wall-clock time) is turned into how long is left when obtained. */
  private cached?: { auth: RequestAuth; validUntil: number };
  private pending?: Promise<RequestAuth>;
  private readonly clock: Clock;
  private readonly elapsed: Clock;

  public constructor(private readonly obtain: () => Promise<Obtained>, private readonly options: RefreshingCredentialsOptions = {}) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.elapsed = options.intervalClock ?? options.clock ?? MONOTONIC_CLOCK;
  }

  public current(): Promise<RequestAuth> {
    const cached = this.cached;
    if (cached && this.elapsed.now() < cached.validUntil) return Promise.resolve(cached.auth);
    this.pending ??= this.refresh().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  public rejected(used: RequestAuth): boolean {
    if (this.cached?.auth === used) this.cached = undefined;
    return true;
  }

  private async refresh(): Promise<RequestAuth> {
    const maxAge = this.options.maxAgeMs ?? Infinity;
    let obtained: Obtained;
    try {
      obtained = await this.obtain();
    } catch (e) {
      const err = e as Error;
      if (!this.cached || !this.options.onRefreshError) throw err;
      this.options.onRefreshError(err);
      this.cached.validUntil = this.elapsed.now() + maxAge;
      return this.cached.auth;
    }
    const left = Math.min((obtained.expiresAt ?? Infinity) - this.clock.now(), maxAge);
    this.cached = { auth: obtained.auth, validUntil: this.elapsed.now() + left };
    return obtained.auth;
  }
}

/** Token files are re-read at most this often: projected service-account tokens rotate hourly. */
export const TOKEN_FILE_RELOAD_MS = 60_000;

/**
 * A bearer token read from `file` (added to `base`, the user's other headers and certificate),
 * re-read every minute; a failed re-read keeps the last token.
 */
export function tokenFileCredentials(file: string, onRereadError: (err: Error) => void, clock?: Clock,
  base: RequestAuth = { headers: {} }, intervalClock?: Clock): RefreshingCredentials {
  return new RefreshingCredentials(async () => {
    let token: string;
    try {
      token = (await fs.promises.readFile(file, 'utf8')).trim();
    } catch (err) {
      throw new Error(`cannot read the bearer token file ${file}: ${(err as Error).message}`);
    }
    return { auth: { ...base, headers: { ...base.headers, authorization: `Bearer ${token}` } } };
  }, { maxAgeMs: TOKEN_FILE_RELOAD_MS, onRefreshError: onRereadError, clock, intervalClock });
}

/** `users[].user.exec` of a kubeconfig (client.authentication.k8s.io ExecConfig), as written there. */
export interface ExecConfig {
  readonly command?: string;
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value: string }[];
  readonly apiVersion?: string;
  readonly installHint?: string;
  readonly provideClusterInfo?: boolean;
  readonly interactiveMode?: string;
}

/** What `provideClusterInfo: true` passes to the plugin (ExecCredential spec.cluster). */
export interface ExecClusterInfo {
  readonly 'server': string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  readonly 'certificate-authority-data'?: string;
  readonly 'proxy-url'?: string;
}

export interface ExecPluginOptions {
  /** Where the exec config is written, for messages: `kubeconfig /x (user "u")`. */
  readonly where: string;
  readonly cluster?: ExecClusterInfo;
  /** Kill a plugin that has not answered after this long. @default 120 s */
  readonly timeoutMs?: number;
}

const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

/**
 * Why the operator cannot use this exec config, naming the kubeconfig field and the fix; undefined
 * when it can. The operator has no terminal, so a plugin that must ask the user cannot run.
 */
export function execConfigProblem(exec: ExecConfig, field: string): string | undefined {
  if (!exec.command) return `${field}.command is empty: set it to the credential plugin to run (such as gke-gcloud-auth-plugin or aws)`;
  if (!exec.apiVersion) return `${field}.apiVersion is not set: set it to client.authentication.k8s.io/v1 (or v1beta1, whichever the plugin answers with)`;
  if (!EXEC_API_VERSIONS.includes(exec.apiVersion)) {
    return `${field}.apiVersion is "${exec.apiVersion}", which the operator does not read: use ${EXEC_API_VERSIONS.join(' or ')}`;
  }
  if (exec.interactiveMode === 'Always') {
    return `${field}.interactiveMode is Always, but the operator runs without a terminal: set it to IfAvailable or Never, `
      + 'and give the plugin what it needs without asking (a service account, a refresh token, environment variables in env)';
  }
  return undefined;
}

/**
 * Run an exec credential plugin the way client-go does: the command with its args, the process
 * environment plus `env` plus KUBERNETES_EXEC_INFO (interactive: false, and the cluster when
 * provideClusterInfo is set), no stdin; it must print an ExecCredential of the configured apiVersion
 * with a token or a client certificate and key, and may say when it expires.
 */
export function runExecPlugin(exec: ExecConfig, options: ExecPluginOptions): Promise<Obtained> {
  const command = exec.command ?? '';
  const info = {
    apiVersion: exec.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(exec.provideClusterInfo && options.cluster ? { cluster: options.cluster } : {}) },
  };
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
  for (const { name, value } of exec.env ?? []) env[name] = value;
  const what = `the exec credential plugin "${command}" of ${options.where}`;
  const timeoutMs = options.timeoutMs ?? 120_000;
  return new Promise<Obtained>((resolve, reject) => {
    const child = spawn(command, [...(exec.args ?? [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => stdout.push(c));
    child.stderr.on('data', (c: Buffer) => stderr.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let spawnError: NodeJS.ErrnoException | undefined;
    child.on('error', (err) => {
      spawnError = err;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const errText = Buffer.concat(stderr).toString('utf8').trim().slice(-2000);
      if (spawnError) {
        const hint = spawnError.code === 'ENOENT' ? ` (not found on PATH${exec.installHint ? `; ${exec.installHint.trim()}` : ''})` : '';
        reject(new Error(`${what} could not start: ${spawnError.message}${hint}`));
        return;
      }
      if (signal === 'SIGKILL') {
        reject(new Error(`${what} gave no credential within ${timeoutMs / 1000} s and was killed`));
        return;
      }
      if (code !== 0) {
        reject(new Error(`${what} exited with code ${code}${errText ? `: ${errText}` : ''}`));
        return;
      }
      try {
        resolve(parseExecCredential(Buffer.concat(stdout).toString('utf8'), exec.apiVersion ?? '', what));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** The credentials in a plugin's ExecCredential output. */
export function parseExecCredential(text: string, apiVersion: string, what: string): Obtained {
  let cred: any;
  try {
    cred = JSON.parse(text);
  } catch {
    throw new Error(`${what} printed no ExecCredential JSON: ${JSON.stringify(text.trim().slice(0, 200))}`);
  }
  if (cred?.kind !== 'ExecCredential') throw new Error(`${what} printed kind ${JSON.stringify(cred?.kind)}, not ExecCredential`);
  if (cred.apiVersion !== apiVersion) {
    throw new Error(`${what} answered with apiVersion ${JSON.stringify(cred.apiVersion)}, but the kubeconfig asks for ${apiVersion}: make the two agree`);
  }
  const status = cred.status ?? {};
  const hasCert = Boolean(status.clientCertificateData) || Boolean(status.clientKeyData);
  if (hasCert && !(status.clientCertificateData && status.clientKeyData)) {
    throw new Error(`${what} returned only one of status.clientCertificateData and status.clientKeyData; both are needed`);
  }
  if (!status.token && !hasCert) throw new Error(`${what} returned neither status.token nor a client certificate`);
  let expiresAt: number | undefined;
  if (status.expirationTimestamp) {
    expiresAt = Date.parse(status.expirationTimestamp);
    if (Number.isNaN(expiresAt)) throw new Error(`${what} returned status.expirationTimestamp ${JSON.stringify(status.expirationTimestamp)}, which is not an RFC 3339 time`);
  }
  const auth: RequestAuth = {
    headers: status.token ? { authorization: `Bearer ${status.token}` } : {},
    ...(hasCert ? { cert: String(status.clientCertificateData), key: String(status.clientKeyData) } : {}),
  };
  return { auth, expiresAt };
}
