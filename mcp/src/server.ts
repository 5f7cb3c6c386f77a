/**
 * The MCP server of one session: the SDK's sandbox tools (one source of truth for their schemas,
 * checks and results), upstream's names and parameters beside them so prompts written for upstream's
 * Python MCP server work (upload_file, download_file, `sandbox_claim_name`, `namespace`, `timeout`,
 * `binary`), and the session tools (create_sandbox, get_sandbox_status, delete_sandbox).
 * execute_command's output goes to the client as it arrives: progress notifications when the call
 * carried a progressToken, else logging messages; coalesced, and capped at maxOutputBytes a call.
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { SandboxConfigError } from '@cdk8s-agent-sandbox/sdk';
import {
  SANDBOX_TOOL_NAMES, parseDuration, sandboxTools, toolErrorText, validateToolInput,
  type JsonSchemaProperty, type SandboxTool, type ToolCallContext, type ToolInputSchema, type ToolResult,
} from '@cdk8s-agent-sandbox/sdk/tools';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, LoggingLevelSchema, McpError, SetLevelRequestSchema,
  type CallToolResult, type LoggingLevel,
} from '@modelcontextprotocol/sdk/types.js';
import type { SandboxSession } from './session.js';

export const SERVER_NAME = 'agent-sandbox-mcp';
export const SERVER_VERSION = '0.0.0';

/** What the server reads the sandbox's state with (get_sandbox_status). */
export interface SandboxStatus {
  /** Upstream's values (SandboxReady, SandboxNotReady or SandboxNotFound), and ours: SandboxSuspended. */
  readonly status: 'SandboxReady' | 'SandboxNotReady' | 'SandboxNotFound' | 'SandboxSuspended';
  readonly message: string;
  /** The idle policy and clock (ours), when the Sandbox has either. */
  readonly idle?: {
    readonly suspendAfterSeconds?: number;
    readonly resumeOnRequest?: boolean;
    /** When it was last used (RFC 3339). */
    readonly lastActivity?: string;
    /** When it was suspended for idleness (RFC 3339). */
    readonly suspendedAt?: string;
  };
}

export interface ServerOptions {
  readonly session: SandboxSession;
  readonly pool: string;
  readonly namespace: string;
  /** The default ttl of a claim, for the texts. */
  readonly ttl: string;
  readonly maxTtl: string;
  readonly maxOutputBytes: number;
  readonly idleTimeoutMs: number;
  /** The claims' idle policy (--suspend-after), for the texts; undefined: none. */
  readonly suspendAfterSeconds?: number;
  readonly status: (sandbox: SandboxHandle) => Promise<SandboxStatus>;
}

/** Output notifications of a call are sent at most this often, or when this much is pending. */
const FLUSH_MS = 250;
const FLUSH_BYTES = 4096;
/**
 * How long a call's result waits after its last progress notification. The TypeScript MCP client
 * handles a notification in a microtask but a result at once, so a notification read in the same
 * chunk as its call's result came after it, and its progress handler was gone: the last output of
 * a command that ends right after writing it was dropped.
 */
const TAIL_GAP_MS = 20;

/** Builds the MCP server of one session (connect it to that session's transport). */
export function createSessionServer(options: ServerOptions): Server {
  const { session } = options;
  const tools = mcpTools(options);
  const idle = options.idleTimeoutMs > 0 ? `, or after ${Math.round(options.idleTimeoutMs / 60_000 * 10) / 10} min without a tool call` : '';
  const sleeps = options.suspendAfterSeconds === undefined ? ''
    : ` It sleeps after ${options.suspendAfterSeconds} s without use and the next tool call wakes it (that call takes a few seconds longer); `
      + 'a sleep keeps the workspace\'s files only when its template puts the workspace on a volume, and ends running processes.';
  const server = new Server({ name: SERVER_NAME, version: SERVER_VERSION }, {
    capabilities: { tools: {}, logging: {} },
    instructions: `These tools act on one Kubernetes agent sandbox for this session, claimed from the warm pool "${options.pool}" when a tool first needs it `
      + `(or with create_sandbox) and released when the session ends${idle} (its files go with it). Paths are relative to the sandbox's workspace.${sleeps}`,
  });

  let level: LoggingLevel | undefined;
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    level = request.params.level;
    return {};
  });
  const severity = (l: LoggingLevel) => LoggingLevelSchema.options.indexOf(l);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as unknown as { type: 'object'; [key: string]: unknown } })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = tools.find((t) => t.name === request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${request.params.name}"; the tools are ${tools.map((t) => t.name).join(', ')}`);
    const progressToken = request.params._meta?.progressToken;
    let progress = 0;
    /** One notification: progress when the call asked for them, else a log message (at info, when the level lets it). */
    let lastProgressAt = -Infinity;
    const send = (logger: string, text: string): void => {
      let sent: Promise<void> | undefined;
      if (progressToken !== undefined) {
        lastProgressAt = performance.now();
        sent = extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: ++progress, message: text } });
      } else if (level === undefined || severity('info') >= severity(level)) {
        sent = extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger, data: text } });
      }
      // A client gone away is seen by the call itself; a notification's failure is not the tool's.
      sent?.catch(() => undefined);
    };
    // Output is coalesced (sent every FLUSH_MS, or once FLUSH_BYTES are pending) and capped at maxOutputBytes a call.
    let pending = '';
    let pendingLogger = '';
    let timer: NodeJS.Timeout | undefined;
    let notified = 0;
    let dropped = 0;
    const flush = (): void => {
      clearTimeout(timer);
      timer = undefined;
      if (pending) send(pendingLogger, pending);
      pending = '';
    };
    const notify = (logger: string, text: string): void => {
      const bytes = Buffer.from(text);
      const room = Math.max(0, options.maxOutputBytes - notified);
      const kept = bytes.length <= room ? text : bytes.subarray(0, room).toString();
      dropped += bytes.length - Math.min(bytes.length, room);
      notified += Math.min(bytes.length, room);
      if (!kept) return;
      if (pending && logger !== pendingLogger) flush();
      pendingLogger = logger;
      pending += kept;
      if (Buffer.byteLength(pending) >= FLUSH_BYTES) {flush();} else if (!timer) {
        timer = setTimeout(flush, FLUSH_MS);
        timer.unref();
      }
    };
    const context: ToolCallContext = { signal: extra.signal, onProgress: ({ stream, text }) => notify(`${tool.name}/${stream}`, text) };
    // A claim can take a while (a cold start): say so, which also keeps a client's progress-reset timeout from running out.
    const stopWatching = session.onClaimStart(() => {
      flush();
      send(SERVER_NAME, `claiming a sandbox from the warm pool "${options.pool}"\n`);
    });
    let answer: CallToolResult;
    try {
      const result = await session.call(() => tool.execute(request.params.arguments ?? {}, context));
      answer = { content: [{ type: 'text', text: result.text }] };
    } catch (err) {
      answer = { content: [{ type: 'text', text: toolErrorText(err) }], isError: true };
    } finally {
      stopWatching();
    }
    flush();
    if (dropped > 0) send(SERVER_NAME, `… ${dropped} bytes more not sent\n`);
    const gap = TAIL_GAP_MS - (performance.now() - lastProgressAt);
    if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    return answer;
  });
  return server;
}

/** Upstream's optional parameters naming the sandbox: this server has one per session, so they are checked, not chosen. */
const TARGET: Record<string, JsonSchemaProperty> = {
  sandbox_claim_name: { type: 'string', description: 'Optional (upstream\'s parameter): the claim create_sandbox named; must be this session\'s.' },
  namespace: { type: 'string', description: 'Optional (upstream\'s parameter): must be the server\'s namespace.' },
};
const REQUEST_TIMEOUT: JsonSchemaProperty = { type: 'number', minimum: 1, maximum: 3600, description: 'Optional: give up on the request after this many seconds.' };

/** The tools this server lists, in order. */
export function mcpTools(options: ServerOptions): SandboxTool[] {
  const { session } = options;
  const sdk = sandboxTools(() => session.acquire(), { tools: SANDBOX_TOOL_NAMES, maxOutputBytes: options.maxOutputBytes, maxTtl: options.maxTtl });
  const byName = (name: string): SandboxTool => sdk.find((t) => t.name === name)!;
  const noun = 'this session\'s sandbox';

  /** Checks upstream's target parameters against the session, then hands the rest to the SDK tool. */
  const checkTarget = (input: Record<string, unknown>): void => {
    if (input.namespace !== undefined && input.namespace !== options.namespace) {
      throw new SandboxConfigError('namespace', `this server's sandboxes are in namespace "${options.namespace}", not "${String(input.namespace)}"`);
    }
    if (input.sandbox_claim_name !== undefined) {
      const current = session.sandbox;
      if (!current) throw new SandboxConfigError('sandbox_claim_name', 'this session has no sandbox now (it was released, or never claimed): call create_sandbox, or leave sandbox_claim_name out to claim one on first use');
      if (current.claim !== input.sandbox_claim_name) throw new SandboxConfigError('sandbox_claim_name', `${noun} is claim "${current.claim}", not "${String(input.sandbox_claim_name)}"`);
    }
  };

  /** `base` under `name` with upstream's parameters added; `map` turns the input into base's. */
  const adapt = (base: SandboxTool, extra: Record<string, JsonSchemaProperty>, spec: {
    name?: string;
    description?: string;
    map?: (input: Record<string, unknown>) => Record<string, unknown>;
  } = {}): SandboxTool => {
    const inputSchema: ToolInputSchema = { ...base.inputSchema, properties: { ...base.inputSchema.properties, ...extra, ...TARGET } };
    return {
      name: spec.name ?? base.name,
      description: spec.description ?? base.description,
      inputSchema,
      execute: async (raw, context = {}) => {
        const input = validateToolInput(inputSchema, raw);
        checkTarget(input);
        const { sandbox_claim_name: _claim, namespace: _ns, timeout, ...rest } = input;
        let mapped = spec.map ? spec.map(rest) : rest;
        let signal = context.signal;
        if (timeout !== undefined && 'timeout_seconds' in base.inputSchema.properties) {
          // Upstream's `timeout` of execute_command: the command's time limit.
          if (mapped.timeout_seconds !== undefined) throw new SandboxConfigError('timeout', 'give timeout or timeout_seconds, not both');
          mapped = { ...mapped, timeout_seconds: timeout };
        } else if (timeout !== undefined) {
          // Upstream's `timeout` of a file call: the request's deadline.
          signal = AbortSignal.any([AbortSignal.timeout((timeout as number) * 1000), ...(signal ? [signal] : [])]);
        }
        return base.execute(mapped, { ...context, ...(signal ? { signal } : {}) });
      },
    };
  };

  const binary: JsonSchemaProperty = { type: 'boolean', default: false, description: 'Upstream\'s parameter: true for base64 content (the same as encoding "base64").' };
  const encodingOf = ({ binary: b, ...rest }: Record<string, unknown>): Record<string, unknown> => (b === true ? { ...rest, encoding: 'base64' } : rest);

  return [
    createSandbox(options),
    adapt(byName('execute_command'), { timeout: { type: 'number', minimum: 1, description: 'Upstream\'s name for timeout_seconds.' } }),
    adapt(byName('write_file'), { timeout: REQUEST_TIMEOUT }),
    adapt(byName('write_file'), { binary, timeout: REQUEST_TIMEOUT }, {
      name: 'upload_file',
      description: 'Upload a file to the sandbox (write_file with upstream\'s parameters: binary: true for base64 content). Returns the number of bytes written.',
      map: encodingOf,
    }),
    adapt(byName('read_file'), { timeout: REQUEST_TIMEOUT }),
    adapt(byName('read_file'), { binary, timeout: REQUEST_TIMEOUT }, {
      name: 'download_file',
      description: 'Download a file from the sandbox (read_file with upstream\'s parameters: binary: true returns base64).',
      map: encodingOf,
    }),
    adapt(byName('list_files'), { timeout: REQUEST_TIMEOUT }),
    adapt(byName('file_exists'), { timeout: REQUEST_TIMEOUT }),
    adapt(byName('remove_file'), { timeout: REQUEST_TIMEOUT }),
    adapt(byName('extend_ttl'), {}),
    sessionTool('get_sandbox_status',
      'The state of this session\'s sandbox: SandboxReady, SandboxNotReady or SandboxNotFound (upstream\'s values), or SandboxSuspended (asleep while idle: '
      + 'the next tool call wakes it, when its idle policy allows), its names and when it expires. Never claims one.',
      {}, async () => {
        const sandbox = session.sandbox;
        if (!sandbox) {
          return {
            text: `no sandbox yet: one is claimed from pool "${options.pool}" when a tool first needs it, or with create_sandbox`,
            data: { status: 'SandboxNotFound', ready: false, message: 'not claimed' },
          };
        }
        const { status, message, idle } = await options.status(sandbox);
        const expires = sandbox.expiresAt ? `; expires at ${sandbox.expiresAt.toISOString()}` : '';
        return {
          text: `${status}: sandbox ${sandbox.name} (claim ${sandbox.claim}, namespace ${sandbox.namespace})${message ? `: ${message}` : ''}${expires}`,
          data: {
            status,
            ready: status === 'SandboxReady',
            suspended: status === 'SandboxSuspended',
            message,
            sandbox: sandbox.name,
            claim: sandbox.claim,
            namespace: sandbox.namespace,
            expiresAt: sandbox.expiresAt?.toISOString() ?? null,
            idle: idle ?? null,
          },
        };
      }),
    sessionTool('delete_sandbox',
      'Release this session\'s sandbox now (its claim is deleted, its files are gone). The next tool that needs a sandbox claims a new one.',
      {}, async () => {
        const claim = await session.release('delete_sandbox');
        return claim ? { text: `released the sandbox: claim ${claim} deleted`, data: { claim } } : { text: 'this session has no sandbox to release', data: { claim: null } };
      }),
  ];

  function sessionTool(
    name: string, description: string, properties: Record<string, JsonSchemaProperty>, run: (input: Record<string, unknown>) => Promise<ToolResult>,
  ): SandboxTool {
    const inputSchema: ToolInputSchema = { type: 'object', properties: { ...properties, ...TARGET }, required: [], additionalProperties: false };
    return {
      name,
      description,
      inputSchema,
      execute: async (raw) => {
        const input = validateToolInput(inputSchema, raw);
        checkTarget(input);
        return run(input);
      },
    };
  }

  function createSandbox(o: ServerOptions): SandboxTool {
    const maxTtlMs = parseDuration(o.maxTtl, 'maxTtl');
    return sessionTool('create_sandbox',
      `Claim this session's sandbox from the warm pool "${o.pool}" now and return its claim name (tools claim it on first use anyway). `
      + `It lives for ttl (default ${o.ttl}), until delete_sandbox, or until the session ends. A session has one sandbox: if it has one, that one is returned.`,
      {
        ttl: { type: 'string', minLength: 1, description: `Lifetime, e.g. "30m" or "2h" (default ${o.ttl}, at most ${o.maxTtl}).` },
        shutdown_after_seconds: { type: 'integer', minimum: 1, description: 'Upstream\'s name for the lifetime, in seconds.' },
        warmpool: { type: 'string', description: `Optional (upstream's parameter): must be "${o.pool}", the server's pool.` },
        sandbox_ready_timeout: { type: 'integer', minimum: 1, description: 'Upstream\'s parameter; accepted, the server\'s own claim timeout applies.' },
      },
      async (input) => {
        if (input.warmpool !== undefined && input.warmpool !== o.pool) throw new SandboxConfigError('warmpool', `this server claims from pool "${o.pool}" only`);
        if (input.ttl !== undefined && input.shutdown_after_seconds !== undefined) throw new SandboxConfigError('ttl', 'give ttl or shutdown_after_seconds, not both');
        const ttl = input.shutdown_after_seconds !== undefined ? `${input.shutdown_after_seconds as number}s` : input.ttl as string | undefined;
        if (ttl !== undefined && parseDuration(ttl, input.ttl !== undefined ? 'ttl' : 'shutdown_after_seconds') > maxTtlMs) {
          throw new SandboxConfigError(input.ttl !== undefined ? 'ttl' : 'shutdown_after_seconds', `must be at most ${o.maxTtl}`);
        }
        const had = session.hasSandbox;
        const sandbox = await session.acquire(ttl);
        const expires = sandbox.expiresAt ? `, expires at ${sandbox.expiresAt.toISOString()}` : '';
        return {
          text: `${had ? 'this session already has' : 'claimed'} sandbox ${sandbox.name}: claim ${sandbox.claim}, namespace ${sandbox.namespace}${expires}`,
          data: {
            claim: sandbox.claim,
            sandbox: sandbox.name,
            namespace: sandbox.namespace,
            created: !had,
            expiresAt: sandbox.expiresAt?.toISOString() ?? null,
          },
        };
      });
  }
}
