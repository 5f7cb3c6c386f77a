/**
 * Warm pools that scale to zero (spec.scaleToZeroAfterSeconds), black-box: the real operator bundle
 * with --extensions=true against the real local control plane (KWOK turns Pods Ready).
 *
 * A pool with replicas 2 and a 3 s period fills, then keeps no members once 3 s pass without a
 * claim, and says so (ScaledToZero); spec.replicas stays 2. A claim then starts cold from the
 * template, its Ready message says why, and the pool refills to 2. The negative control is the
 * same pool without the field, created at the same moment: it keeps its two members throughout.
 *
 * Member creates and deletes are read from a watch opened before the write that causes them, so a
 * member that lives only a moment is still counted. States are asserted, never durations.
 */
import { claimManifest, claimReady, controllerOf, poolManifest, templateManifest } from './extensions-api';
import { type ExtensionsOperator, startExtensionsOperator, stopExtensionsOperator } from './extensions-operator';
import { condition } from './sandbox-api';
import { SandboxLabels } from '../../../src/api/labels';
import { NameHash } from '../../../src/api/name-hash';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
const POOL = 'stz';
const STEADY = 'steady';
const PERIOD_S = 3;
let env: ExtensionsOperator;

beforeAll(async () => {
  env = await startExtensionsOperator(kube, api, 'pool-stz');
}, 240_000);

afterAll(() => stopExtensionsOperator(kube, api, env), 200_000);

/** Members of `pool` seen by a watch: every one ever added, and those gone (deleted or being deleted). */
class MemberLog {
  public readonly added = new Set<string>();
  public readonly gone = new Set<string>();

  public constructor(private readonly pool: string) {}

  public see(type: string, sandbox: any): void {
    const ref = controllerOf(sandbox);
    if (ref?.kind !== 'SandboxWarmPool' || ref.name !== this.pool) return;
    const uid = sandbox.metadata.uid;
    this.added.add(uid);
    if (type === 'DELETED' || sandbox.metadata.deletionTimestamp) this.gone.add(uid);
  }

  /** At least `n` members came and every one of them is gone again. */
  public cameAndWent(n: number): boolean {
    return this.added.size >= n && this.gone.size === this.added.size;
  }
}

/**
 * Runs `cause` once a watch on the pool's Sandboxes is open, and resolves when `n` or more members
 * were added and all of them are gone: the pool filled (or refilled) and scaled to zero again.
 */
async function fillThenEmpty(pool: string, n: number, cause: () => Promise<unknown>): Promise<MemberLog> {
  const log = new MemberLog(pool);
  const selector = encodeURIComponent(`${SandboxLabels.WARM_POOL_SANDBOX}=${NameHash.of(pool)}`);
  await api.watch(`${env.ext.sandboxesPath}?labelSelector=${selector}`, (ev) => {
    log.see(ev.type, ev.object);
    return log.cameAndWent(n) ? true : undefined;
  }, { timeoutMs: 90_000, onReady: cause });
  return log;
}

const scaledToZero = (pool: any) => condition(pool, 'ScaledToZero');

test('idle for the period: no members, the condition says so, replicas unchanged; a claim starts cold and the pool refills; without the field nothing changes', async () => {
  await env.ext.create('sandboxtemplates', templateManifest('stz'));
  const withField = poolManifest(POOL, 'stz', 2);
  withField.spec.scaleToZeroAfterSeconds = PERIOD_S;

  // The pool fills to 2, then, with no claim, goes to 0. The control pool is created at the same moment.
  const fill = await fillThenEmpty(POOL, 2, async () => {
    await env.ext.create('sandboxwarmpools', withField);
    await env.ext.create('sandboxwarmpools', poolManifest(STEADY, 'stz', 2));
  });
  expect(fill.added.size).toBe(2);
  const idle = await waitFor(async () => {
    const p = await env.ext.get('sandboxwarmpools', POOL);
    return scaledToZero(p)?.status === 'True' && p.status.replicas === 0 && p.status.readyReplicas === 0 ? p : undefined;
  }, 30_000, 'pool stz to report ScaledToZero=True and 0 replicas');
  expect(scaledToZero(idle)).toMatchObject({ reason: 'NoRecentClaims', message: expect.stringContaining(`No claim for ${PERIOD_S} s (last claim: none since the pool was created`) });
  expect(idle.spec.replicas).toBe(2);
  expect(await env.ext.poolMembers(POOL)).toEqual([]);

  // Negative control: past the same period, the pool without the field keeps its two members.
  const steady = await env.ext.waitPoolReady(STEADY, 2);
  const steadyUids = steady.map((s) => s.metadata.uid).sort();
  const steadyPool = await env.ext.get('sandboxwarmpools', STEADY);
  expect(scaledToZero(steadyPool)).toBeUndefined();
  expect(steadyPool.status.lastClaimTime).toBeUndefined();

  // A claim at zero: served cold from the template, saying why; the pool refills to 2 (and, the
  // claim being its only one, scales to zero again a period later, which ends the watch).
  let claim: any;
  const refill = await fillThenEmpty(POOL, 2, async () => {
    claim = await env.ext.create('sandboxclaims', claimManifest('after-idle', POOL));
  });
  expect(refill.added.size).toBe(2);
  expect([...refill.added].some((uid) => fill.added.has(uid))).toBe(false);

  const ready = await env.ext.waitClaim('after-idle', claimReady, 'Ready=True');
  const sandbox = (await env.ext.sandboxes()).find((s) => s.metadata.name === ready.status.sandbox.name);
  expect(sandbox.metadata.name).toBe('after-idle');
  expect(sandbox.metadata.labels[SandboxLabels.LAUNCH_TYPE]).toBe('cold');
  expect(controllerOf(sandbox)).toMatchObject({ kind: 'SandboxClaim', uid: claim.metadata.uid });
  expect(condition(ready, 'Ready').message)
    .toContain(`cold start: warm pool ${POOL} was scaled to zero after ${PERIOD_S} s without claims; it is refilling to 2`);

  // The pool recorded the claim: its idle clock ran from it.
  const after = await waitFor(async () => {
    const p = await env.ext.get('sandboxwarmpools', POOL);
    return p.status.lastClaimTime && scaledToZero(p)?.status === 'True' ? p : undefined;
  }, 30_000, 'pool stz to record the claim and be at zero again');
  expect(Date.parse(after.status.lastClaimTime)).toBe(Date.parse(claim.metadata.creationTimestamp));
  expect(scaledToZero(after).message).toContain(`last claim: ${after.status.lastClaimTime}`);
  expect(after.spec.replicas).toBe(2);

  // The control pool, two periods and a claim on its neighbour later: the same two members.
  expect((await env.ext.waitPoolReady(STEADY, 2)).map((s) => s.metadata.uid).sort()).toEqual(steadyUids);
});
