/**
 * The streamable HTTP transport: one MCP session (and so one sandbox) per `Mcp-Session-Id`, on
 * POST/GET/DELETE /mcp. The MCP SDK's transport checks Host and Origin against the allowed lists
 * (DNS-rebinding protection: a web page cannot reach the loopback server under another name); an
 * optional bearer token guards a server listening beyond loopback.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxSession } from './session.js';

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  /** Host header values accepted besides the loopback names with the bound port. */
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly maxSessions: number;
  /** Required as `Authorization: Bearer <token>` when set. */
  readonly authToken?: string;
  /** The largest request body read, in bytes. @default 64 MiB */
  readonly maxBodyBytes?: number;
  /** Makes a session and its MCP server; `onIdle` ends the session. */
  readonly newSession: (id: () => string | undefined, onIdle: () => void) => { session: SandboxSession; server: Server };
  readonly log: (message: string) => void;
}

export interface RunningHttpServer {
  readonly url: string;
  readonly port: number;
  /** Open sessions. */
  readonly sessions: number;
  /** Ends every session (releasing their sandboxes) and stops listening. */
  close(): Promise<void>;
}

interface Entry {
  readonly transport: StreamableHTTPServerTransport;
  readonly session: SandboxSession;
  readonly server: Server;
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const sessions = new Map<string, Entry>();
  /** Initializes admitted but not yet registered in `sessions`. */
  let starting = 0;
  const maxBody = options.maxBodyBytes ?? 64 * 1024 * 1024;
  let allowedHosts: string[] = [];
  let allowedOrigins: string[] = [];

  const endSession = async (id: string, why: string, closeTransport = true): Promise<void> => {
    const entry = sessions.get(id);
    if (!entry) return;
    sessions.delete(id);
    options.log(`session ${id} ended: ${why}`);
    await entry.session.close(why).catch((err) => options.log(`session ${id}: could not release its sandbox: ${(err as Error).message}`));
    if (closeTransport) await entry.transport.close().catch(() => undefined);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      options.log(`request failed: ${(err as Error).message}`);
      if (!res.headersSent) jsonRpcError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' && req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path !== '/mcp') {
      jsonRpcError(res, 404, -32000, 'Not found: the MCP endpoint is /mcp');
      return;
    }
    if (options.authToken !== undefined && !bearerMatches(req.headers.authorization, options.authToken)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      jsonRpcError(res, 401, -32001, 'Unauthorized: send Authorization: Bearer <token>');
      return;
    }
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const entry = sessions.get(id);
      if (!entry) {
        jsonRpcError(res, 404, -32001, 'Session not found: start a new session with an initialize request');
        return;
      }
      await entry.transport.handleRequest(req, res);
      return;
    }
    if (req.method !== 'POST') {
      jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id; start a session with an initialize request (POST)');
      return;
    }
    const body = await readJson(req, maxBody);
    if (body === undefined) {
      jsonRpcError(res, 400, -32700, 'Parse error: the body is not JSON, or is too large');
      return;
    }
    if (!isInitializeRequest(body)) {
      jsonRpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id; the first request of a session is initialize');
      return;
    }
    // The slot is reserved now, before the awaits below register the session: initializes at once
    // cannot overshoot --max-sessions.
    if (sessions.size + starting >= options.maxSessions) {
      jsonRpcError(res, 503, -32000, `Too many sessions (--max-sessions ${options.maxSessions}): end one (DELETE /mcp) or try later`);
      return;
    }
    starting++;
    let reserved = true;
    const unreserve = () => {
      if (reserved) starting--;
      reserved = false;
    };
    try {
      await startSession(req, res, body, unreserve);
    } finally {
      unreserve();
    }
  }

  /** `unreserve` is called when the session is registered (it then counts in `sessions`). */
  async function startSession(req: http.IncomingMessage, res: http.ServerResponse, body: unknown, unreserve: () => void): Promise<void> {
    let sessionId: string | undefined;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // The MCP SDK's DNS-rebinding protection: Host must be one of these, and Origin (when sent) too.
      enableDnsRebindingProtection: true,
      allowedHosts,
      allowedOrigins,
      onsessioninitialized: (newId) => {
        sessionId = newId;
        sessions.set(newId, entry);
        unreserve();
        options.log(`session ${newId} started`);
      },
      // The DELETE is answered once the sandbox is released (the transport closes itself after).
      onsessionclosed: (closedId) => endSession(closedId, 'the client ended it (DELETE)', false),
    });
    const made = options.newSession(() => sessionId, () => {
      if (sessionId !== undefined) void endSession(sessionId, 'idle (--idle-timeout)');
    });
    const entry: Entry = { transport, ...made };
    transport.onclose = () => {
      if (sessionId !== undefined) void endSession(sessionId, 'its transport closed');
    };
    await made.server.connect(transport);
    await transport.handleRequest(req, res, body);
    if (sessionId === undefined) {
      // Refused (a bad Host or Origin, or a bad initialize): nothing to keep.
      await made.session.close('the initialize request was refused');
      await made.server.close().catch(() => undefined);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = options.host.includes(':') ? `[${options.host}]` : options.host;
  // The names a local client may use for this server, on its port; and the page origins that may call it.
  const names = new Set(['127.0.0.1', 'localhost', '[::1]', hostPart]);
  allowedHosts = [...[...names].map((n) => `${n}:${port}`), ...options.allowedHosts];
  allowedOrigins = [...[...names].map((n) => `http://${n}:${port}`), ...options.allowedOrigins];
  const url = `http://${hostPart}:${port}/mcp`;
  options.log(`listening on ${url}`);

  return {
    url,
    port,
    get sessions() {
      return sessions.size;
    },
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await Promise.all([...sessions.keys()].map((id) => endSession(id, 'the server is stopping')));
    },
  };
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? '');
  if (!match) return false;
  const given = Buffer.from(match[1].trim());
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

function jsonRpcError(res: http.ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function readJson(req: http.IncomingMessage, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
