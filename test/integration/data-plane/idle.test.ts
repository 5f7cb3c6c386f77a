/**
 * Idle suspension and resume on request through the real router: the bundle's `router` command as
 * a local process running as the bundle's router ServiceAccount and RBAC (so its patches prove the
 * bundle grants them), in --auth=kubernetes with real ServiceAccount tokens; the operator suspends
 * claimed Sandboxes under a 2 s idlePolicy; their Pods run the operator's runtime and the echo
 * fixture. What is asserted is outcomes (who is Running, what a request got), never durations.
 *
 * - A request for a suspended Sandbox resumes it and gets the runtime's answer; 20 at once share
 *   one resume (the router's resume counter).
 * - A long command, an open WebSocket and a background process of the runtime keep a Sandbox
 *   Running past several periods; each control (the same Sandbox without them) is suspended.
 * - X-Sandbox-Timeout shorter than the resume: 503 SandboxResuming with Retry-After.
 * - A caller without access to the Sandbox resumes nothing.
 */
import * as http from 'http';
import { DataPlane, ECHO_PORT, send, type Reply } from './data-plane';
import { RouterRbac } from './router-rbac';
import { WebSocketClient } from './ws-client';
import { SandboxAnnotations } from '../../../src/api/labels';
import { waitFor } from '../../../tools/control-plane/kube';
import { sleep } from '../../../tools/control-plane/processes';
import { OperatorProcess } from '../../../tools/shared/operator-process';
import { serviceAccountToken } from '../operator/bundle-rbac';
import { claimManifest, claimReady } from '../operator/extensions-api';

const PERIOD_S = 2;
/** How long "stays Running" is watched: several periods, with the suspension of a control as proof the clock ran. */
const HELD_MS = 3 * PERIOD_S * 1000;
let dp: DataPlane;
let rbac: RouterRbac;
let router: OperatorProcess;
let port: number;
const tokens = { agent: '', stranger: '' };
/** Claimed Sandboxes under the 2 s policy, one per scenario. */
const sandboxes: Record<'wake' | 'command' | 'process' | 'bounds', string> = { wake: '', command: '', process: '', bounds: '' };

beforeAll(async () => {
  dp = await DataPlane.start('dp-idle', Object.keys(sandboxes).length, { claims: 0 });
  for (const [i, key] of (Object.keys(sandboxes) as Array<keyof typeof sandboxes>).entries()) {
    await dp.ext.create('sandboxclaims', claimManifest(`idle-${i}`, 'pool', { idlePolicy: { suspendAfterSeconds: PERIOD_S } }));
    const claim = await dp.ext.waitClaim(`idle-${i}`, (c) => claimReady(c) && c.status?.sandbox?.name, 'Ready with a sandbox', 90_000);
    sandboxes[key] = claim.status.sandbox.name;
  }
  // No refill: the pool's new members would only load the machine.
  await dp.api.call('PATCH', dp.ext.path('sandboxwarmpools', 'pool'), { spec: { replicas: 0 } });
  rbac = await RouterRbac.apply(dp.kube, dp.api, dp.ns);
  router = await OperatorProcess.startRouter({ kubeconfig: rbac.kubeconfig, args: [...rbac.args, '--allowed-pod-cidrs=127.64.0.0/12'] });
  port = await router.port('proxy');
  const rbacBase = `/apis/rbac.authorization.k8s.io/v1/namespaces/${dp.ns}`;
  for (const name of Object.keys(tokens) as Array<keyof typeof tokens>) {
    await dp.api.call('POST', `/api/v1/namespaces/${dp.ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
    tokens[name] = await serviceAccountToken(dp.api, dp.ns, name);
  }
  // agent: may use every Sandbox of the namespace; stranger: may read them all, use none.
  const grants = {
    agent: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes/connect'], verbs: ['create'] }],
    stranger: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch'] }],
  };
  for (const [name, rules] of Object.entries(grants)) {
    await dp.api.call('POST', `${rbacBase}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name }, rules });
    await dp.api.call('POST', `${rbacBase}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: dp.ns }],
    });
  }
}, 300_000);

afterAll(async () => {
  await router?.stop();
  await rbac?.remove();
  await dp?.stop();
}, 200_000);

const getSandbox = (name: string) => dp.api.call('GET', dp.sandboxPath(name));
const modeOf = async (name: string): Promise<string> => (await getSandbox(name)).spec.operatingMode ?? 'Running';

function headers(sandbox: string, extra: Record<string, string> = {}, token = tokens.agent): Record<string, string> {
  return { 'X-Sandbox-ID': sandbox, 'X-Sandbox-Namespace': dp.ns, 'Authorization': `Bearer ${token}`, ...extra };
}

function execute(sandbox: string, command: string, extra: Record<string, string> = {}, token = tokens.agent): Promise<Reply> {
  return send(port, '/execute', { method: 'POST', headers: headers(sandbox, { 'content-type': 'application/json', ...extra }, token), body: JSON.stringify({ command, shell: true }) });
}

async function waitSuspended(name: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => (await modeOf(name)) === 'Suspended', timeoutMs, `Sandbox ${name} to be idle-suspended`);
}

async function routerMetric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return (await router.metrics()).sum(name, { sandbox_namespace: dp.ns, ...labels });
}

/** POST /execute through the router, timed from the request to the first byte of the answer. */
function timedExecute(sandbox: string, command: string): Promise<{ reply: Reply; firstByteMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const options = { host: '127.0.0.1', port, path: '/execute', method: 'POST', headers: headers(sandbox, { 'content-type': 'application/json' }), agent: false };
    const req = http.request(options, (res) => {
      let firstByteMs = -1;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        if (firstByteMs < 0) firstByteMs = performance.now() - started;
        chunks.push(c);
      });
      res.on('end', () => resolve({ reply: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }, firstByteMs }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ command, shell: true }));
  });
}

describe('resume on request', () => {
  test('a request for an idle-suspended Sandbox resumes it and gets the runtime\'s answer', async () => {
    const name = sandboxes.wake;
    await waitSuspended(name);
    const resumedBefore = await routerMetric('sandbox_router_resumes_total', { outcome: 'resumed' });
    const { reply, firstByteMs } = await timedExecute(name, 'echo awake');
    expect({ status: reply.status, body: reply.body.slice(0, 200) }).toMatchObject({ status: 200 });
    expect(JSON.parse(reply.body)).toMatchObject({ stdout: 'awake\n', exit_code: 0 });
    console.log(`resume on request: request → first byte ${Math.round(firstByteMs)} ms (idle-suspended Sandbox, local pod runner)`);
    expect(await routerMetric('sandbox_router_resumes_total', { outcome: 'resumed' })).toBe(resumedBefore + 1);
    const resumed = await getSandbox(name);
    expect(resumed.metadata.annotations?.[SandboxAnnotations.IDLE_SUSPENDED_AT]).toBeUndefined();
  });

  test('20 requests at once for a suspended Sandbox share one resume, and all get the sandbox\'s answer', async () => {
    const name = sandboxes.wake;
    await waitSuspended(name);
    const resumedBefore = await routerMetric('sandbox_router_resumes_total', { outcome: 'resumed' });
    // The echo fixture: 20 commands at once would meet the runtime's own --max-concurrent-commands.
    const echo = (i: number) => send(port, `/echo?i=${i}`, { headers: headers(name, { 'X-Sandbox-Port': String(ECHO_PORT) }) });
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => echo(i)));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(replies.map((r) => JSON.parse(r.body).url)).toEqual(Array.from({ length: 20 }, (_, i) => `/echo?i=${i}`));
    expect(await routerMetric('sandbox_router_resumes_total', { outcome: 'resumed' })).toBe(resumedBefore + 1);
    expect(await routerMetric('sandbox_router_resume_wait_seconds_count', { outcome: 'served' })).toBeGreaterThanOrEqual(20);
  });

  test('X-Sandbox-Timeout shorter than the resume: 503 SandboxResuming with Retry-After; the resume goes on and the retry is served', async () => {
    const name = sandboxes.bounds;
    await waitSuspended(name);
    const refused = await execute(name, 'echo x', { 'X-Sandbox-Timeout': '0.05' });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers['x-sandbox-reason']).toBe('SandboxResuming');
    expect(JSON.parse(refused.body)).toMatchObject({ reason: 'SandboxResuming' });
    expect(await modeOf(name)).toBe('Running');
    const retried = await execute(name, 'echo served');
    expect({ status: retried.status, stdout: JSON.parse(retried.body).stdout }).toEqual({ status: 200, stdout: 'served\n' });
  });

  test('a caller without access to the Sandbox resumes nothing (403); one with access does', async () => {
    const name = sandboxes.bounds;
    await waitSuspended(name);
    const resumedBefore = await routerMetric('sandbox_router_resumes_total');
    for (let i = 0; i < 3; i++) expect((await execute(name, 'echo no', {}, tokens.stranger)).status).toBe(403);
    // Given time to show a resume if one had been made: none was.
    await sleep(PERIOD_S * 1000);
    expect(await modeOf(name)).toBe('Suspended');
    expect(await routerMetric('sandbox_router_resumes_total')).toBe(resumedBefore);
    const allowed = await execute(name, 'echo yes');
    expect({ status: allowed.status, stdout: JSON.parse(allowed.body).stdout }).toEqual({ status: 200, stdout: 'yes\n' });
  });
});

describe('what keeps a Sandbox from idling', () => {
  test('a long command, then an open WebSocket, keep it Running past several periods; without them it is suspended', async () => {
    const name = sandboxes.command;
    const stampsBefore = await routerMetric('sandbox_router_activity_stamps_total', { source: 'connection' });
    // Resumed first if the operator has suspended it already; the command runs three periods.
    const long = await execute(name, `sleep ${HELD_MS / 1000}; echo done`);
    expect({ status: long.status, body: JSON.parse(long.body) }).toMatchObject({ status: 200, body: { stdout: 'done\n', exit_code: 0 } });
    // Had it been suspended meanwhile, its Pod (and the command) would have gone with it.
    expect(await modeOf(name)).toBe('Running');
    expect(await routerMetric('sandbox_router_activity_stamps_total', { source: 'connection' })).toBeGreaterThan(stampsBefore);

    const ws = await WebSocketClient.connect(port, '/socket', headers(name, { 'X-Sandbox-Port': String(ECHO_PORT) }));
    try {
      ws.send('hello');
      expect(await ws.next()).toBe('hello');
      await sleep(HELD_MS);
      ws.send('still here');
      expect(await ws.next()).toBe('still here');
      expect(await modeOf(name)).toBe('Running');
    } finally {
      ws.close();
    }
    // The control: the same Sandbox with nothing open idles out.
    await waitSuspended(name);
  });

  test('a background process of the runtime keeps it Running with no connection open; once it ends, it is suspended', async () => {
    const name = sandboxes.process;
    const stampsBefore = await routerMetric('sandbox_router_activity_stamps_total', { source: 'process' });
    const started = await send(port, '/processes', {
      method: 'POST', headers: headers(name, { 'content-type': 'application/json' }), body: JSON.stringify({ command: `sleep ${(HELD_MS + 4000) / 1000}`, shell: true }),
    });
    expect({ status: started.status, body: started.body.slice(0, 200) }).toMatchObject({ status: 201 });
    expect(JSON.parse(started.body).status).toBe('running');
    await sleep(HELD_MS);
    expect(await modeOf(name)).toBe('Running');
    expect(await routerMetric('sandbox_router_activity_stamps_total', { source: 'process' })).toBeGreaterThan(stampsBefore);
    // The control: the process ends, nothing else runs, the Sandbox idles out.
    await waitSuspended(name);
  });
});
