/**
 * The `mcp` benchmark's load generator, run as its own Node process (the SDK and the MCP client are
 * ESM; bench/data-plane/mcp.ts bundles this file, and the MCP server from mcp/src with the SDK's
 * source, with esbuild). Four ways to one call, each with a sandbox of its own from the same warm
 * pool, all direct to the same router (the runtime's /execute, streamed NDJSON, the SDK's default):
 *   sdk:       `sandbox.run("echo ok")` (and `files.write` + `files.readText`) on the SDK;
 *   tool:      the SDK's execute_command (write_file, read_file) tool called in this process (the
 *              layer the MCP server adds its protocol to: input checks, the result's text);
 *   mcp-http:  the official MCP client's callTool to the MCP server over streamable HTTP;
 *   mcp-stdio: the same over stdio (the client spawns the server).
 * The sandboxes are claimed first (create_sandbox for the MCP sessions; each claim timed once), then
 * `warmup` rounds untimed, then `calls` rounds timed; a round makes one call each way, the order
 * rotating, so a loaded machine's swings fall on every way alike. Then `filePairs` rounds of a
 * write_file + read_file pair (1 KiB of text), timed as a pair.
 * Input: JSON in argv[2]; output: one JSON object on stdout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SandboxClient } from '../../../sdk/src/index.js';
import { sandboxTools } from '../../../sdk/src/tools/index.js';
import { startMcpHttpServer } from '../../../tools/shared/mcp-server.js';

interface DriverInput {
  kubeconfig: string;
  routerUrl: string;
  namespace: string;
  pool: string;
  /** The bundled MCP server (mcp/src/cli.ts). */
  server: string;
  calls: number;
  warmup: number;
  filePairs: number;
}

export type McpWay = 'sdk' | 'tool' | 'mcp-http' | 'mcp-stdio';
const WAYS: McpWay[] = ['sdk', 'tool', 'mcp-http', 'mcp-stdio'];

/** One way's calls: `exec` runs `echo ok`, `pair` writes then reads back `content`; both check the answer. */
interface Way {
  exec(): Promise<void>;
  pair(content: string): Promise<void>;
  close(): Promise<void>;
}

const input: DriverInput = JSON.parse(process.argv[2]);
const FILE = 'bench/pair.txt';
const EXEC_TEXT = 'exit code: 0\nstdout:\nok';

function expectEqual(what: string, got: unknown, want: unknown): void {
  if (got !== want) throw new Error(`${what} answered ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
}

const text = (result: unknown): string => {
  const r = result as CallToolResult;
  const t = (r.content?.[0] as { text?: string } | undefined)?.text ?? '';
  if (r.isError) throw new Error(`tool error: ${t}`);
  return t;
};

function sdkWay(client: SandboxClient): () => Promise<Way> {
  return async () => {
    const sandbox = await client.claim({ pool: input.pool });
    return {
      exec: async () => expectEqual('run', (await sandbox.run('echo ok')).stdout, 'ok\n'),
      pair: async (content) => {
        await sandbox.files.write(FILE, content);
        expectEqual('files.readText', await sandbox.files.readText(FILE), content);
      },
      close: () => sandbox.close(),
    };
  };
}

function toolWay(client: SandboxClient): () => Promise<Way> {
  return async () => {
    const sandbox = await client.claim({ pool: input.pool });
    const tools = sandboxTools(sandbox, { tools: ['execute_command', 'write_file', 'read_file'] });
    const tool = (name: string) => tools.find((t) => t.name === name)!;
    return {
      exec: async () => expectEqual('execute_command', (await tool('execute_command').execute({ command: 'echo ok' })).text, EXEC_TEXT),
      pair: async (content) => {
        await tool('write_file').execute({ path: FILE, content });
        expectEqual('read_file', (await tool('read_file').execute({ path: FILE })).text, content);
      },
      close: () => sandbox.close(),
    };
  };
}

function serverArgs(transport: 'stdio' | 'http'): string[] {
  return [
    input.server, transport, '--pool', input.pool, '--namespace', input.namespace, '--kubeconfig', input.kubeconfig,
    '--router-url', input.routerUrl, '--ttl', '30m', ...(transport === 'http' ? ['--listen', '127.0.0.1:0'] : []),
  ];
}

/** The MCP client's side of one session: claim with create_sandbox, then the tools. */
function mcpWay(client: Client, close: () => Promise<void>): Way & { claim(): Promise<void> } {
  return {
    claim: async () => {
      const created = text(await client.callTool({ name: 'create_sandbox', arguments: {} }));
      if (!/claim \S+/.test(created)) throw new Error(`create_sandbox answered ${JSON.stringify(created)}`);
    },
    exec: async () => expectEqual('execute_command', text(await client.callTool({ name: 'execute_command', arguments: { command: 'echo ok' } })), EXEC_TEXT),
    pair: async (content) => {
      text(await client.callTool({ name: 'write_file', arguments: { path: FILE, content } }));
      expectEqual('read_file', text(await client.callTool({ name: 'read_file', arguments: { path: FILE } })), content);
    },
    close,
  };
}

/** The server in HTTP mode as a child process, the client connected to the endpoint it logs. */
function mcpHttpWay(): () => Promise<Way> {
  return async () => {
    const server = startMcpHttpServer(serverArgs('http'));
    const url = await server.url;
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'bench-http', version: '1.0.0' });
    await client.connect(transport);
    const way = mcpWay(client, async () => {
      await transport.terminateSession();
      await client.close();
      server.child.kill('SIGTERM');
      await server.exited;
    });
    await way.claim();
    return way;
  };
}

function mcpStdioWay(): () => Promise<Way> {
  return async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: serverArgs('stdio'), stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const client = new Client({ name: 'bench-stdio', version: '1.0.0' });
    await client.connect(transport);
    // Closing stdin releases the sandbox; the server exits after that.
    const way = mcpWay(client, () => client.close());
    await way.claim().catch((err: Error) => {
      throw new Error(`${err.message}\nthe MCP server's stderr:\n${stderr}`);
    });
    return way;
  };
}

async function main(): Promise<void> {
  const client = new SandboxClient({ kubeconfig: input.kubeconfig, namespace: input.namespace, connection: { mode: 'direct', url: input.routerUrl } });
  const open: Record<McpWay, () => Promise<Way>> = { 'sdk': sdkWay(client), 'tool': toolWay(client), 'mcp-http': mcpHttpWay(), 'mcp-stdio': mcpStdioWay() };
  const ways = {} as Record<McpWay, Way>;
  const claimMs = {} as Record<McpWay, number>;
  const exec = Object.fromEntries(WAYS.map((w) => [w, [] as number[]])) as Record<McpWay, number[]>;
  const file = Object.fromEntries(WAYS.map((w) => [w, [] as number[]])) as Record<McpWay, number[]>;
  try {
    for (const w of WAYS) {
      const started = performance.now();
      ways[w] = await open[w]();
      claimMs[w] = performance.now() - started;
    }
    const rounds = async (n: number, warmup: number, call: (way: Way) => Promise<void>, into: Record<McpWay, number[]>) => {
      for (let i = 0; i < warmup + n; i++) {
        for (let k = 0; k < WAYS.length; k++) {
          const w = WAYS[(i + k) % WAYS.length];
          const started = performance.now();
          await call(ways[w]);
          if (i >= warmup) into[w].push(performance.now() - started);
        }
      }
    };
    await rounds(input.calls, input.warmup, (way) => way.exec(), exec);
    const content = `${'0123456789abcdef'.repeat(63)}0123456789abcde\n`;
    await rounds(input.filePairs, Math.min(input.warmup, 3), (way) => way.pair(content), file);
  } finally {
    for (const w of WAYS) await ways[w]?.close().catch((err: Error) => process.stderr.write(`closing ${w}: ${err.message}\n`));
    await client.close();
  }
  process.stdout.write(`${JSON.stringify({ exec, file, claimMs })}\n`);
}

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
