/**
 * Starts the server the command line asks for: the SDK client (credentials, the way to the router),
 * then stdio (one session: this process's stdin and stdout) or streamable HTTP (a session per
 * client). Sandboxes are released on the way out: stdin's end, SIGTERM or SIGINT (and, over HTTP,
 * a session's DELETE or its transport closing).
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { SandboxClient, type ClaimOptions, type SandboxClientOptions } from '@cdk8s-agent-sandbox/sdk';
import { KubeConfig } from '@kubernetes/client-node';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { FlagError, parseFlags, USAGE, type CommonConfig } from './flags.js';
import { startHttpServer } from './http.js';
import { createSessionServer } from './server.js';
import { SandboxSession } from './session.js';
import { sandboxStatusReader } from './status.js';

/** The label each claim gets, with its MCP session's id. */
export const SESSION_LABEL = 'mcp.cdk8s-agent-sandbox.dev/session';
/** How long shutting down may take to release the sandboxes. */
const RELEASE_LIMIT_MS = 15_000;

/** Logs go to stderr: with stdio, stdout is the protocol's. */
function log(message: string): void {
  process.stderr.write(`agent-sandbox-mcp: ${message}\n`);
}

export async function main(argv: readonly string[]): Promise<void> {
  let config;
  try {
    config = parseFlags(argv);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    process.stderr.write(`agent-sandbox-mcp: ${err.message}\nRun "agent-sandbox-mcp --help" for the options.\n`);
    process.exitCode = 2;
    return;
  }
  if (config.mode === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const common = config.common;
  const kubeconfig = loadKubeconfig(common);
  const client = new SandboxClient(clientOptions(common, kubeconfig));
  const status = sandboxStatusReader(kubeconfig);
  const newSession = (sessionId: () => string | undefined, onIdle?: () => void) => {
    const session = new SandboxSession({
      claim: (ttl, signal) => client.claim(claimOptions(common, ttl, signal, sessionId())),
      idleTimeoutMs: common.idleTimeoutMs,
      maxConcurrentCalls: common.maxConcurrentCalls,
      onIdle,
      log: (message) => log(sessionId() ? `session ${sessionId()}: ${message}` : message),
    });
    const server = createSessionServer({
      session,
      pool: common.pool,
      namespace: common.namespace,
      ttl: common.ttl,
      maxTtl: common.maxTtl,
      maxOutputBytes: common.maxOutputBytes,
      idleTimeoutMs: common.idleTimeoutMs,
      suspendAfterSeconds: common.suspendAfterSeconds,
      status,
    });
    return { session, server };
  };

  let stopping: Promise<void> | undefined;
  const stopOn = (what: string, stop: () => Promise<void>) => {
    stopping ??= (async () => {
      log(`${what}: releasing the sandbox${config.mode === 'http' ? 'es' : ''} and stopping`);
      const deadline = new Promise<void>((resolve) => setTimeout(() => {
        log(`could not release within ${RELEASE_LIMIT_MS / 1000} s; the claims' ttl will delete them`);
        resolve();
      }, RELEASE_LIMIT_MS).unref());
      await Promise.race([stop().catch((err) => log(`stopping: ${(err as Error).message}`)), deadline]);
      await client.close().catch(() => undefined);
      process.exit(0);
    })();
  };

  if (config.mode === 'stdio') {
    const id = randomUUID();
    const { session, server } = newSession(() => id);
    const stop = async () => {
      await session.close('the MCP session ended');
      await server.close().catch(() => undefined);
    };
    await server.connect(new StdioServerTransport());
    process.stdin.once('end', () => stopOn('stdin closed', stop));
    process.once('SIGTERM', () => stopOn('SIGTERM', stop));
    process.once('SIGINT', () => stopOn('SIGINT', stop));
    log(`serving MCP on stdio; sandboxes from pool ${common.namespace}/${common.pool}`);
    return;
  }

  const httpConfig = config.http;
  const authToken = httpConfig.authTokenFile === undefined ? undefined : fs.readFileSync(httpConfig.authTokenFile, 'utf8').trim();
  if (authToken === '') throw new FlagError(`--auth-token-file: ${httpConfig.authTokenFile} is empty`);
  const running = await startHttpServer({
    host: httpConfig.host,
    port: httpConfig.port,
    allowedHosts: httpConfig.allowedHosts,
    allowedOrigins: httpConfig.allowedOrigins,
    maxSessions: httpConfig.maxSessions,
    authToken,
    newSession: (id, onIdle) => newSession(id, onIdle),
    log,
  });
  // The line a parent process waits for (the tests read the port from it).
  log(`sandboxes from pool ${common.namespace}/${common.pool}; MCP endpoint ${running.url}`);
  process.once('SIGTERM', () => stopOn('SIGTERM', () => running.close()));
  process.once('SIGINT', () => stopOn('SIGINT', () => running.close()));
}

/** A session's claim: the server's pool, the ttl asked for (else the server's), the session's label, and --suspend-after's idle policy. */
export function claimOptions(common: CommonConfig, ttl: string | undefined, signal: AbortSignal, sessionId: string | undefined): ClaimOptions {
  return {
    pool: common.pool,
    ttl: ttl ?? common.ttl,
    signal,
    labels: { [SESSION_LABEL]: sessionId ?? 'none' },
    // The sandbox sleeps between an agent's turns, and the router wakes it on the next tool call.
    ...(common.suspendAfterSeconds === undefined ? {} : { idlePolicy: { suspendAfter: common.suspendAfterSeconds, resumeOnRequest: true } }),
  };
}

function loadKubeconfig(common: CommonConfig): KubeConfig {
  const kubeconfig = new KubeConfig();
  try {
    if (common.kubeconfig !== undefined) kubeconfig.loadFromFile(common.kubeconfig);
    else kubeconfig.loadFromDefault();
  } catch (err) {
    throw new FlagError(`--kubeconfig: cannot load ${common.kubeconfig ?? 'the default kubeconfig'}: ${(err as Error).message}`);
  }
  if (common.context !== undefined) {
    if (!kubeconfig.getContextObject(common.context)) throw new FlagError(`--context: the kubeconfig has no context "${common.context}"`);
    kubeconfig.setCurrentContext(common.context);
  }
  return kubeconfig;
}

function clientOptions(common: CommonConfig, kubeconfig: KubeConfig): SandboxClientOptions {
  const tokenFile = common.tokenFile;
  return {
    kubeconfig,
    namespace: common.namespace,
    connection: common.routerUrl !== undefined ? { mode: 'direct', url: common.routerUrl } : { mode: 'port-forward' },
    ...(common.routerToken ? { routerToken: true } : {}),
    ...(tokenFile !== undefined ? { token: async () => (await fs.promises.readFile(tokenFile, 'utf8')).trim() } : {}),
    ...(common.grpcPort !== undefined ? { grpcPort: common.grpcPort } : {}),
    // This process releases its sandboxes itself on SIGTERM and SIGINT (and at stdin's end).
    cleanupOnSignal: false,
  };
}
