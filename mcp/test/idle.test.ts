/**
 * --suspend-after (its flag checks are in flags.test.ts): the claims it makes (an
 * idle policy that wakes on the next request, rendered by the SDK as the claim's spec.idlePolicy),
 * what the server tells the agent, and get_sandbox_status reporting a sleeping sandbox (and a
 * suspended one no request wakes). Negative controls: without the flag, no policy and no word of it.
 */
import type { SandboxHandle } from '@cdk8s-agent-sandbox/sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { buildClaim } from '../../sdk/src/client';
import { parseFlags, type CommonConfig } from '../src/flags';
import { claimOptions } from '../src/main';
import { createSessionServer, mcpTools, type SandboxStatus, type ServerOptions } from '../src/server';
import { SandboxSession } from '../src/session';
import { statusOf } from '../src/status';

const common = (argv: string[]): CommonConfig => {
  const config = parseFlags(['stdio', '--pool', 'python-pool', ...argv]);
  if (config.mode !== 'stdio') throw new Error('expected stdio');
  return config.common;
};

describe('--suspend-after\'s claims', () => {
  test('claims carry an idle policy that wakes on the next request; the SDK renders it as spec.idlePolicy', () => {
    const signal = new AbortController().signal;
    const options = claimOptions(common(['--suspend-after', '2m']), undefined, signal, 'session-1');
    expect(options).toMatchObject({ pool: 'python-pool', ttl: '30m', labels: { 'mcp.cdk8s-agent-sandbox.dev/session': 'session-1' }, idlePolicy: { suspendAfter: 120, resumeOnRequest: true } });
    expect(buildClaim(options, 'default').spec.idlePolicy).toEqual({ suspendAfterSeconds: 120, resumeOnRequest: true });
    // Negative control: without the flag the claim has none (its template's applies).
    const plain = claimOptions(common([]), '1h', signal, undefined);
    expect(plain).not.toHaveProperty('idlePolicy');
    expect(buildClaim(plain, 'default').spec).not.toHaveProperty('idlePolicy');
  });
});

describe('get_sandbox_status', () => {
  const sandbox = (annotations: Record<string, string>, spec: Record<string, unknown>, ready: boolean) => ({
    metadata: { name: 'sb-1', namespace: 'default', annotations },
    spec,
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'DependenciesReady' : 'SandboxSuspended' }] },
  });
  const policy = { idlePolicy: { suspendAfterSeconds: 120, resumeOnRequest: true } };

  test('a sandbox asleep after its idle policy\'s time: SandboxSuspended, woken by the next tool call', () => {
    const status = statusOf(sandbox({ 'agents.x-k8s.io/idle-suspended-at': '2026-12-01T10:02:00Z', 'agents.x-k8s.io/last-activity': '2026-12-01T10:00:00.000Z' },
      { operatingMode: 'Suspended', ...policy }, false));
    expect(status).toEqual({
      status: 'SandboxSuspended',
      message: 'asleep after 120 s unused since 2026-12-01T10:02:00Z: the next tool call wakes it (that call waits a few seconds longer); '
        + 'files outside the workspace volume and processes did not survive',
      idle: { suspendAfterSeconds: 120, resumeOnRequest: true, lastActivity: '2026-12-01T10:00:00.000Z', suspendedAt: '2026-12-01T10:02:00Z' },
    });
  });

  test('a sandbox suspended by hand that no request wakes says so', () => {
    const status = statusOf(sandbox({}, { operatingMode: 'Suspended', idlePolicy: { suspendAfterSeconds: 60, resumeOnRequest: false } }, false));
    expect(status.status).toBe('SandboxSuspended');
    expect(status.message).toBe('suspended: tool calls fail until someone resumes it (its idle policy does not let a request wake it)');
    expect(statusOf(sandbox({}, { operatingMode: 'Suspended' }, false)).message).toMatch(/^suspended: tool calls fail until someone resumes it/);
  });

  test('awake: SandboxReady, with when it sleeps; without a policy, as upstream reports it', () => {
    expect(statusOf(sandbox({ 'agents.x-k8s.io/last-activity': '2026-12-01T10:00:00.000Z' }, { operatingMode: 'Running', ...policy }, true))).toEqual({
      status: 'SandboxReady',
      message: 'DependenciesReady; sleeps after 120 s unused (last used 2026-12-01T10:00:00.000Z)',
      idle: { suspendAfterSeconds: 120, resumeOnRequest: true, lastActivity: '2026-12-01T10:00:00.000Z' },
    });
    expect(statusOf(sandbox({}, { operatingMode: 'Running' }, true))).toEqual({ status: 'SandboxReady', message: 'DependenciesReady' });
  });

  test('the tool reports it: the status first, the names, and the idle clock in its data', async () => {
    const handle = { name: 'sb-1', claim: 'claim-1', namespace: 'default', expiresAt: undefined, close: async () => undefined } as unknown as SandboxHandle;
    const session = new SandboxSession({ claim: async () => handle, idleTimeoutMs: 0, maxConcurrentCalls: 4, log: () => undefined });
    await session.acquire();
    const asleep: SandboxStatus = { status: 'SandboxSuspended', message: 'asleep after 120 s unused', idle: { suspendAfterSeconds: 120, resumeOnRequest: true } };
    const tool = mcpTools(serverOptions(session, async () => asleep)).find((t) => t.name === 'get_sandbox_status')!;
    const result = await tool.execute({});
    expect(result.text).toBe('SandboxSuspended: sandbox sb-1 (claim claim-1, namespace default): asleep after 120 s unused');
    expect(result.data).toMatchObject({ status: 'SandboxSuspended', ready: false, suspended: true, idle: { suspendAfterSeconds: 120 } });
    await session.close('test');
  });
});

describe('the server\'s instructions', () => {
  test('say that the sandbox sleeps and the next tool call wakes it, only with --suspend-after', async () => {
    const instructions = async (suspendAfterSeconds?: number) => {
      const session = new SandboxSession({ claim: async () => { throw new Error('no claims here'); }, idleTimeoutMs: 0, maxConcurrentCalls: 4, log: () => undefined });
      const server = createSessionServer({ ...serverOptions(session, async () => ({ status: 'SandboxReady', message: '' })), suspendAfterSeconds });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(clientSide);
      const text = client.getInstructions();
      await client.close();
      return text;
    };
    expect(await instructions(120)).toMatch(/It sleeps after 120 s without use and the next tool call wakes it .*ends running processes\.$/);
    expect(await instructions()).not.toMatch(/sleeps/);
  });
});

function serverOptions(session: SandboxSession, status: ServerOptions['status']): ServerOptions {
  return { session, pool: 'python-pool', namespace: 'default', ttl: '30m', maxTtl: '24h', maxOutputBytes: 16_384, idleTimeoutMs: 0, status };
}
