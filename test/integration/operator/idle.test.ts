/**
 * Idle auto-suspend (spec.idlePolicy), black-box: the real operator bundle with --extensions=true
 * against the real local control plane (KWOK turns Pods Ready).
 *
 * A template with a 2 s idle policy, a template without one, a pool of each. A claimed Sandbox of
 * the first is suspended once 2 s pass without use (spec.operatingMode Suspended, the
 * idle-suspended-at mark, its Pod gone, an IdleSuspended event); one of the second stays Running.
 * Stamping last-activity every 0.5 s, as the router does for requests, keeps a Sandbox Running; it
 * is suspended once the stamps stop. A claim's own policy overrides its template's.
 *
 * States and their order are asserted, never durations: "stays Running" is checked after waiting
 * three times the period, with the suspension of its idle sibling as the proof the clock ran.
 */
import { claimManifest, claimReady, poolManifest, templateManifest } from './extensions-api';
import { type ExtensionsOperator, startExtensionsOperator, stopExtensionsOperator } from './extensions-operator';
import { SandboxAnnotations, SandboxLabels } from '../../../src/api/labels';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { sleep } from '../../../tools/control-plane/processes';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const PERIOD_S = 2;
const IDLE = 'idle';
const PLAIN = 'plain';
let env: ExtensionsOperator;

beforeAll(async () => {
  env = await startExtensionsOperator(kube, api, 'idle');
  await env.ext.create('sandboxtemplates', templateManifest(IDLE, { idlePolicy: { suspendAfterSeconds: PERIOD_S } }));
  await env.ext.create('sandboxtemplates', templateManifest(PLAIN));
  await env.ext.create('sandboxwarmpools', poolManifest(IDLE, IDLE, 2));
  await env.ext.create('sandboxwarmpools', poolManifest(PLAIN, PLAIN, 1));
  await env.ext.waitPoolReady(IDLE, 2);
  await env.ext.waitPoolReady(PLAIN, 1);
}, 240_000);

afterAll(async () => {
  await stopExtensionsOperator(kube, api, env);
}, 200_000);

const sandboxPath = (name: string) => `${env.ext.sandboxesPath}/${name}`;
const getSandbox = async (name: string) => (api.call('GET', sandboxPath(name)));
const annotation = (sb: any, key: string): string | undefined => sb.metadata.annotations?.[key];
const podsOf = async (name: string) => (await api.call('GET', `/api/v1/namespaces/${env.ns}/pods`)).items
  .filter((p: any) => p.metadata.ownerReferences?.some((r: any) => r.controller && r.kind === 'Sandbox' && r.name === name));

/** Claims from `pool` and returns the claimed Sandbox once the claim is Ready. */
async function claimSandbox(claim: string, pool: string, spec: Record<string, unknown> = {}): Promise<any> {
  await env.ext.create('sandboxclaims', claimManifest(claim, pool, spec));
  const ready = await env.ext.waitClaim(claim, claimReady, 'Ready', 90_000);
  return getSandbox(ready.status.sandbox.name);
}

async function waitSuspended(name: string, timeoutMs = 60_000): Promise<any> {
  return waitFor(async () => {
    const sb = await getSandbox(name);
    return sb.spec.operatingMode === 'Suspended' ? sb : undefined;
  }, timeoutMs, `Sandbox ${name} to be suspended`);
}

describe('idle auto-suspend', () => {
  test('a claimed Sandbox under the template\'s policy is suspended once idle (mark, Pod gone, event); one without a policy stays Running', async () => {
    const [idle, plain] = await Promise.all([claimSandbox('idle-a', IDLE), claimSandbox('plain-a', PLAIN)]);
    // The warm adoption wrote the policy and the claim's stamp; the plain one got neither.
    expect(idle.metadata.labels[SandboxLabels.LAUNCH_TYPE]).toBe('warm');
    expect(idle.spec.idlePolicy).toEqual({ suspendAfterSeconds: PERIOD_S, resumeOnRequest: true });
    const claimedAt = Date.parse(annotation(idle, SandboxAnnotations.LAST_ACTIVITY)!);
    expect(claimedAt).not.toBeNaN();
    expect(plain.spec.idlePolicy).toBeUndefined();
    expect(annotation(plain, SandboxAnnotations.LAST_ACTIVITY)).toBeUndefined();

    const suspended = await waitSuspended(idle.metadata.name);
    const suspendedAt = Date.parse(annotation(suspended, SandboxAnnotations.IDLE_SUSPENDED_AT)!);
    // Not before the period after the claim's stamp had passed (ordering of the two marks).
    expect(suspendedAt).toBeGreaterThanOrEqual(claimedAt + PERIOD_S * 1000);
    await waitFor(async () => (await podsOf(idle.metadata.name)).length === 0, 60_000, 'the idle Sandbox\'s Pod to be gone');
    const events = await waitFor(async () => {
      const found = (await env.ext.events('Sandbox', idle.metadata.name)).filter((e) => e.reason === 'IdleSuspended');
      return found.length > 0 ? found : undefined;
    }, 30_000, 'an IdleSuspended event');
    expect(events[0]).toMatchObject({ type: 'Normal', note: `no request, connection or process for ${PERIOD_S} s (idlePolicy.suspendAfterSeconds)` });
    expect((await env.op.metrics()).sum('agent_sandbox_idle_suspensions_total', { namespace: env.ns })).toBeGreaterThanOrEqual(1);

    // The negative control, claimed at the same moment: three periods later still Running with its Pod.
    await sleep(3 * PERIOD_S * 1000);
    const still = await getSandbox(plain.metadata.name);
    expect(still.spec.operatingMode ?? 'Running').toBe('Running');
    expect(annotation(still, SandboxAnnotations.IDLE_SUSPENDED_AT)).toBeUndefined();
    expect(await podsOf(plain.metadata.name)).toHaveLength(1);
  });

  test('last-activity stamps every 0.5 s keep a Sandbox Running past several periods; it is suspended a period after they stop', async () => {
    const sb = await claimSandbox('idle-b', IDLE);
    const name = sb.metadata.name;
    let lastStamp = 0;
    const until = Date.now() + 4 * PERIOD_S * 1000;
    while (Date.now() < until) {
      lastStamp = Date.now();
      const stamped = await api.call('PATCH', sandboxPath(name), { metadata: { annotations: { [SandboxAnnotations.LAST_ACTIVITY]: new Date(lastStamp).toISOString() } } });
      expect(stamped.spec.operatingMode).toBe('Running');
      await sleep(500);
    }
    const running = await getSandbox(name);
    expect(running.spec.operatingMode).toBe('Running');
    expect(annotation(running, SandboxAnnotations.IDLE_SUSPENDED_AT)).toBeUndefined();
    expect(await podsOf(name)).toHaveLength(1);

    const suspended = await waitSuspended(name);
    expect(Date.parse(annotation(suspended, SandboxAnnotations.IDLE_SUSPENDED_AT)!)).toBeGreaterThanOrEqual(lastStamp + PERIOD_S * 1000);
    expect(annotation(suspended, SandboxAnnotations.LAST_ACTIVITY)).toBe(new Date(lastStamp).toISOString());
  });

  test('the claim\'s own policy overrides the template\'s, either way', async () => {
    const [longer, shorter] = await Promise.all([
      claimSandbox('idle-c', IDLE, { idlePolicy: { suspendAfterSeconds: 3600 } }),
      claimSandbox('plain-c', PLAIN, { idlePolicy: { suspendAfterSeconds: 1, resumeOnRequest: false } }),
    ]);
    expect(longer.spec.idlePolicy).toEqual({ suspendAfterSeconds: 3600, resumeOnRequest: true });
    expect(shorter.spec.idlePolicy).toEqual({ suspendAfterSeconds: 1, resumeOnRequest: false });
    // The plain template has no policy, the claim's alone suspends it.
    await waitSuspended(shorter.metadata.name);
    // The idle template's 2 s would have suspended this one by now; the claim's hour does not.
    await sleep(3 * PERIOD_S * 1000);
    const kept = await getSandbox(longer.metadata.name);
    expect(kept.spec.operatingMode).toBe('Running');
    expect(await podsOf(longer.metadata.name)).toHaveLength(1);
  });
});
