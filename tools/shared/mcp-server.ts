/**
 * The MCP server (mcp/) in HTTP mode as a child process, for its integration test and the MCP
 * benchmark's driver: `url` resolves with the endpoint the server logs once it listens, and rejects
 * with everything it logged if it exits first.
 */
import { ChildProcess, spawn } from 'child_process';
import { createInterface } from 'readline';

export interface McpExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface McpHttpServer {
  readonly child: ChildProcess;
  readonly url: Promise<string>;
  readonly exited: Promise<McpExit>;
}

/** Runs `node <argv>` (the server's CLI and its arguments, `http` among them). */
export function startMcpHttpServer(argv: readonly string[]): McpHttpServer {
  const child = spawn(process.execPath, [...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<McpExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const lines: string[] = [];
  const url = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      lines.push(line);
      const match = /MCP endpoint (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]);
    });
    void exited.then(({ code, signal }) => reject(new Error(`the MCP server exited (${code ?? signal}) before listening:\n${lines.join('\n')}`)));
  });
  return { child, url, exited };
}
