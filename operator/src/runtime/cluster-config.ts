/**
 * The operator's cluster connection, resolved like other Kubernetes clients resolve theirs:
 * `--kubeconfig`, else the files in $KUBECONFIG (merged, first definition wins, missing files
 * skipped), else the in-cluster service account, else ~/.kube/config (controller-runtime's order).
 *
 * Kubeconfig files are read with @kubernetes/client-node's KubeConfig, which also computes the
 * headers and client certificate of token, basic-auth, certificate and auth-provider (oidc, gcp,
 * azure) users. The operator keeps its own HTTP client (kube-client.ts), so what it takes from a
 * kubeconfig is a ClusterConnection: server (path included), CA, TLS options, proxy-url, and
 * Credentials that refresh. Exec plugins run here (credentials.ts) rather than through
 * client-node's ExecAuth, which runs the plugin again for every request when the ExecCredential
 * has no expirationTimestamp, cannot be told that the server refused a credential, and sets no
 * KUBERNETES_EXEC_INFO. `tokenFile` (which client-node does not read) is re-read every minute.
 *
 * ESM only (client-node is an ES module): the CommonJS tools use kubeconfig.ts instead.
 */
import * as fs from 'node:fs';
import type * as https from 'node:https';
import * as path from 'node:path';
import type { Cluster, User } from '@kubernetes/client-node/dist/config_types.js';
import { ClusterConnection, ConfigError, SERVICE_ACCOUNT_DIR } from './connection';
import {
  Credentials, ExecClusterInfo, ExecConfig, RefreshingCredentials, RequestAuth, StaticCredentials, TOKEN_FILE_RELOAD_MS, execConfigProblem,
  runExecPlugin, tokenFileCredentials,
} from './credentials';
import { Logger, SILENT_LOGGER } from './log';

type Env = { readonly [name: string]: string | undefined };

type KubeConfigModule = typeof import('@kubernetes/client-node/dist/config.js');
let kubeConfigModule: Promise<KubeConfigModule> | undefined;

/**
 * client-node's KubeConfig (and the YAML parser), imported only when a kubeconfig is read: a Pod
 * on its service account never loads them (the bundle keeps them in chunks of their own).
 */
function kubeConfigClasses(): Promise<KubeConfigModule> {
  kubeConfigModule ??= import('@kubernetes/client-node/dist/config.js').catch((err: Error) => {
    kubeConfigModule = undefined;
    throw new ConfigError(`cannot load the kubeconfig reader (is the bundle's chunks/ folder complete?): ${err.message}`);
  });
  return kubeConfigModule;
}

export interface LoadConnectionOptions {
  /** The `--kubeconfig` flag; empty or undefined when not given. */
  readonly kubeconfig?: string;
  /** A context other than the kubeconfig's current-context. */
  readonly context?: string;
  /** @default process.env */
  readonly env?: Env;
  /** @default /var/run/secrets/kubernetes.io/serviceaccount */
  readonly serviceAccountDir?: string;
  /** Where ~/.kube/config is looked for. @default client-node's findHomeDir() */
  readonly home?: string | null;
  /** Warnings after start-up (a token file that could not be re-read). */
  readonly log?: Logger;
}

/** Auth providers client-node implements; any other name would send requests unauthenticated. */
const AUTH_PROVIDERS = ['oidc', 'gcp', 'azure'];
/** How often auth-provider credentials are asked for again (client-node refreshes an expired token then). */
const AUTH_PROVIDER_RECHECK_MS = 60_000;

/** Where the API server is and how to authenticate to it; a ConfigError names what to fix. */
export async function loadClusterConnection(options: LoadConnectionOptions = {}): Promise<ClusterConnection> {
  const env = options.env ?? process.env;
  if (options.kubeconfig) return fromKubeconfigFiles([options.kubeconfig], true, options);
  if (env.KUBECONFIG) return fromKubeconfigFiles(env.KUBECONFIG.split(path.delimiter).filter(Boolean), false, options);
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    if (options.context) throw new ConfigError(`--context=${options.context} needs a kubeconfig, but none was given (--kubeconfig or KUBECONFIG) and this runs in a pod`);
    return inCluster(env, options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR, options.log ?? SILENT_LOGGER);
  }
  const home = options.home === undefined ? (await kubeConfigClasses()).findHomeDir() : options.home;
  const defaultFile = home ? path.join(home, '.kube', 'config') : undefined;
  if (defaultFile && fs.existsSync(defaultFile)) return fromKubeconfigFiles([defaultFile], true, options);
  throw new ConfigError('no API server configured: pass --kubeconfig=<file>, set KUBECONFIG, write ~/.kube/config, or run in a pod '
    + '(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)');
}

/** The in-cluster service account, as client-go's rest.InClusterConfig reads it. */
function inCluster(env: Env, dir: string, log: Logger): ClusterConnection {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const tokenFile = path.join(dir, 'token');
  if (!fs.existsSync(tokenFile)) {
    throw new ConfigError(`running in a pod but ${tokenFile} does not exist: mount a service-account token (automountServiceAccountToken: true)`);
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  let namespace: string | undefined;
  try {
    namespace = fs.readFileSync(path.join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    namespace = undefined;
  }
  return {
    server: `https://${hostPart}:${env.KUBERNETES_SERVICE_PORT}`,
    ca: readOrFail(path.join(dir, 'ca.crt'), 'the service-account CA'),
    credentials: tokenFileCredentials(tokenFile, (err) => log.warn({ err, file: tokenFile }, 'could not re-read the token file; using the previous token')),
    namespace,
    source: `in-cluster service account (${dir})`,
  };
}

/** A user as client-node parsed it, with what it does not keep: the kubeconfig's folder and `tokenFile`. */
interface LoadedUser {
  readonly user: User;
  readonly dir: string;
  readonly tokenFile?: string;
}

async function fromKubeconfigFiles(files: string[], explicit: boolean, options: LoadConnectionOptions): Promise<ClusterConnection> {
  const where = `kubeconfig ${files.join(path.delimiter)}`;
  const { KubeConfig, bufferFromFileOrString } = await kubeConfigClasses();
  const merged = new KubeConfig();
  const users = new Map<string, LoadedUser>();
  let current: string | undefined;
  for (const file of files) {
    const kc = new KubeConfig();
    try {
      kc.loadFromFile(file);
    } catch (e) {
      // kubectl skips missing files in a KUBECONFIG list, but a file named on its own must exist.
      if (!explicit && files.length > 1 && (e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new ConfigError(`cannot read kubeconfig ${file}: ${(e as Error).message}`);
    }
    const dir = path.dirname(path.resolve(file));
    const raw = await rawUsers(file);
    // Merged like kubectl merges a KUBECONFIG list: the first file to define a name wins.
    for (const c of kc.getClusters()) if (!merged.getCluster(c.name)) merged.addCluster(c);
    for (const x of kc.getContexts()) if (!merged.getContextObject(x.name)) merged.addContext(x);
    for (const u of kc.getUsers()) {
      if (users.has(u.name)) continue;
      const tokenFile = raw.get(u.name)?.tokenFile;
      users.set(u.name, { user: u, dir, tokenFile: typeof tokenFile === 'string' && tokenFile ? path.resolve(dir, tokenFile) : undefined });
    }
    current ??= kc.getCurrentContext() || undefined;
  }
  if (merged.getContexts().length === 0 && merged.getClusters().length === 0 && users.size === 0 && !current) {
    throw new ConfigError(`${where}: none of the files exist or they are empty`);
  }
  const contextName = options.context || current;
  if (!contextName) throw new ConfigError(`${where} sets no current-context: set one (kubectl config use-context NAME)`);
  const context = merged.getContextObject(contextName);
  if (!context) {
    const known = merged.getContexts().map((c) => c.name).join(', ') || 'none';
    throw new ConfigError(`${where}: context "${contextName}" is not defined (contexts: ${known})`);
  }
  const cluster = merged.getCluster(context.cluster);
  if (!cluster) throw new ConfigError(`${where}: contexts[name="${context.name}"].context.cluster is "${context.cluster}", but no clusters[] entry has that name`);
  const loaded = context.user ? users.get(context.user) : undefined;
  if (context.user && !loaded) throw new ConfigError(`${where}: contexts[name="${context.name}"].context.user is "${context.user}", but no users[] entry has that name`);
  let ca: Buffer | undefined;
  try {
    ca = bufferFromFileOrString(cluster.caFile, cluster.caData) ?? undefined;
  } catch (e) {
    throw new ConfigError(`${where}: clusters[name="${cluster.name}"].cluster.certificate-authority cannot be read: ${(e as Error).message}`);
  }
  const credentials = loaded ? await userCredentials(loaded, cluster, ca, where, options.log ?? SILENT_LOGGER) : { credentials: new StaticCredentials({ headers: {} }), kind: 'anonymous' };
  return {
    server: cluster.server,
    ca,
    insecureSkipTlsVerify: cluster.skipTLSVerify,
    tlsServerName: cluster.tlsServerName || undefined,
    proxyUrl: cluster.proxyUrl || undefined,
    credentials: credentials.credentials,
    namespace: context.namespace || undefined,
    source: `${where} (context ${context.name}, ${credentials.kind})`,
  };
}

/** How the user authenticates, checked now so that a kubeconfig the operator cannot use fails at start. */
async function userCredentials(loaded: LoadedUser, cluster: Cluster, ca: Buffer | undefined, where: string,
  log: Logger): Promise<{ credentials: Credentials; kind: string }> {
  const { user } = loaded;
  const field = `users[name="${user.name}"].user`;
  const authProvider = user.authProvider;
  if (user.exec) {
    const exec = { ...(user.exec as ExecConfig) };
    const problem = execConfigProblem(exec, `${field}.exec`);
    if (problem) throw new ConfigError(`${where}: ${problem}`);
    // Like client-go: a command with a path separator is relative to the kubeconfig's folder.
    const command = exec.command!.includes('/') || exec.command!.includes(path.sep) ? path.resolve(loaded.dir, exec.command!) : exec.command!;
    const base = await staticAuth({ ...user, exec: undefined }, where, field);
    const info: ExecClusterInfo = {
      'server': cluster.server,
      'tls-server-name': cluster.tlsServerName || undefined,
      'insecure-skip-tls-verify': cluster.skipTLSVerify || undefined,
      'certificate-authority-data': ca?.toString('base64'),
      'proxy-url': cluster.proxyUrl || undefined,
    };
    const credentials = new RefreshingCredentials(async () => {
      const obtained = await runExecPlugin({ ...exec, command }, { where: `${where} (${field}.exec)`, cluster: info });
      const auth: RequestAuth = {
        headers: { ...base.headers, ...obtained.auth.headers },
        cert: obtained.auth.cert ?? base.cert,
        key: obtained.auth.key ?? base.key,
      };
      return { auth, expiresAt: obtained.expiresAt };
    });
    return { credentials, kind: `exec plugin ${exec.command}` };
  }
  if (authProvider) {
    const name = String(authProvider.name ?? '');
    const viaExecOrFile = authProvider.config?.exec || authProvider.config?.tokenFile;
    if (!AUTH_PROVIDERS.includes(name) && !viaExecOrFile) {
      throw new ConfigError(`${where}: ${field}.auth-provider.name is "${name}", which the operator cannot run: `
        + `use ${AUTH_PROVIDERS.join(', ')}, or better an exec credential plugin in ${field}.exec (kubectl's own auth providers for gcp and azure `
        + 'were replaced by gke-gcloud-auth-plugin and kubelogin)');
    }
    // Asked first here, so that a provider that cannot work fails at start rather than on every request.
    let initial: RequestAuth | undefined = await staticAuth(user, where, field);
    const credentials = new RefreshingCredentials(async () => {
      const auth = initial ?? await staticAuth(user, where, field);
      initial = undefined;
      return { auth };
    }, { maxAgeMs: AUTH_PROVIDER_RECHECK_MS });
    return { credentials, kind: `auth provider ${name || 'exec'}` };
  }
  const base = await staticAuth(user, where, field);
  if (loaded.tokenFile) {
    const file = loaded.tokenFile;
    return {
      credentials: tokenFileCredentials(file, (err) => log.warn({ err, file }, 'could not re-read the token file; using the previous token'), undefined, base),
      kind: `token file ${file} (re-read every ${TOKEN_FILE_RELOAD_MS / 1000} s)`,
    };
  }
  const kind = base.cert ? 'client certificate' : base.headers.authorization?.startsWith('Basic ') ? 'basic auth' : base.headers.authorization ? 'token' : 'anonymous';
  return { credentials: new StaticCredentials(base), kind };
}

/**
 * The headers and client certificate client-node computes for `user`: token, basic auth,
 * impersonation, certificate files and data, auth providers. Computed on a KubeConfig holding only
 * this user and a placeholder cluster: TLS to the real server and its proxy are the HTTP client's.
 */
async function staticAuth(user: User, where: string, field: string): Promise<RequestAuth> {
  const kc = new (await kubeConfigClasses()).KubeConfig();
  const placeholder: Cluster = { name: 'credentials', server: 'https://credentials.invalid', skipTLSVerify: false };
  kc.loadFromClusterAndUser(placeholder, user);
  const opts: https.RequestOptions = { headers: {} };
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (e) {
    throw new ConfigError(`${where}: the credentials of ${field} cannot be used: ${(e as Error).message}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(opts.headers ?? {})) if (value !== undefined) headers[name.toLowerCase()] = String(value);
  if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  return { headers, cert: opts.cert as string | Buffer | undefined, key: opts.key as string | Buffer | undefined };
}

/** `users[].user` as written, by name, for the fields client-node drops (tokenFile). */
async function rawUsers(file: string): Promise<Map<string, any>> {
  const { parse: parseYaml } = await import('yaml');
  try {
    const doc = parseYaml(fs.readFileSync(file, 'utf8')) ?? {};
    return new Map((Array.isArray(doc.users) ? doc.users : []).filter((u: any) => u?.name).map((u: any) => [u.name, u.user ?? {}]));
  } catch {
    return new Map();
  }
}

function readOrFail(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    throw new ConfigError(`cannot read ${what} ${file}: ${(e as Error).message}`);
  }
}
