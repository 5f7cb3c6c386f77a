/**
 * The MCP server for agent sandboxes as a library: build a session's server (createSessionServer)
 * on a SandboxSession, or serve sessions over streamable HTTP (startHttpServer). The command
 * `agent-sandbox-mcp` (cli.ts) puts them together; see README.md.
 */
export { createSessionServer, mcpTools, SERVER_NAME, SERVER_VERSION } from './server.js';
export type { ServerOptions, SandboxStatus } from './server.js';
export { SandboxSession, SessionBusyError, SessionClosedError } from './session.js';
export type { SessionOptions } from './session.js';
export { startHttpServer } from './http.js';
export type { HttpServerOptions, RunningHttpServer } from './http.js';
export { parseFlags, FlagError, USAGE, isLoopback } from './flags.js';
export type { Config, CommonConfig, HttpConfig } from './flags.js';
export { sandboxStatusReader } from './status.js';
export { main, SESSION_LABEL } from './main.js';
