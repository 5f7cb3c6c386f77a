/**
 * Leader election, black-box: real operator processes (operator/dist/agent-sandbox-operator.mjs)
 * against the real control plane, campaigning for the Lease in a test namespace. One leader at a
 * time; kill -9 of the leader hands over within about a lease duration; SIGTERM releases the Lease
 * so the standby takes over at once; a leader whose Lease is taken exits non-zero. Failover times
 * and idle memory are printed for the record, never asserted tightly.
 *
 * The replicas run as the install bundle's ServiceAccount with the bundle's leader-election Role as
 * shipped (so a Lease verb missing from the bundle fails here) and its ClusterRole cut down to the
 * read verbs: their controllers start for real (cluster-wide, reading what the bundle lets them
 * read), yet cannot write to other test files' objects. This also exercises bearer-token auth
 * against the real API server.
 */
import * as http from 'http';
import { BundleRbac } from './bundle-rbac';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube, waitFor } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';

const LEASE = 'a3317529.agent-sandbox.x-k8s.io';
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
let rbac: BundleRbac;
let kubeconfig: string;
const replicas: Replica[] = [];

/** One `controller --leader-elect` replica: the operator process with leader election on, by name. */
class Replica {
  private readonly op: OperatorProcess;

  public constructor(public readonly name: string) {
    // A repeated flag takes its last value: this turns on what OperatorProcess's defaults turn off.
    this.op = OperatorProcess.launch({ kubeconfig, args: ['--leader-elect=true', `--leader-election-namespace=${ns}`] });
    replicas.push(this);
  }

  public get lines(): any[] {
    return this.op.lines;
  }

  public get exited(): Promise<number | string | null> {
    return this.op.exited;
  }

  public get alive(): boolean {
    return this.op.alive;
  }

  public async identity(): Promise<string> {
    return (await this.log('starting the controller')).identity;
  }

  /** The first log line with this message, waiting for it. */
  public log(msg: string, timeoutMs = 60_000): Promise<any> {
    return this.op.waitForLog((l) => l.msg === msg, timeoutMs, `${this.name} to log "${msg}"`);
  }

  public has(msg: string): boolean {
    return this.lines.some((l) => l.msg === msg);
  }

  public async get(endpoint: 'health probes' | 'metrics', urlPath: string): Promise<{ status: number; body: string }> {
    const port = await this.op.port(endpoint);
    return new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });
  }

  public signal(signal: NodeJS.Signals): void {
    this.op.signal(signal);
  }
}

const lease = () => kube.getJson(['lease', LEASE, '-n', ns]);

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('leader-elect');
  // The replicas run `controller` without --extensions: the core install's RBAC.
  rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: false, readOnly: true });
  kubeconfig = rbac.kubeconfig;
}, 240_000);

afterEach(async () => {
  for (const r of replicas.splice(0)) {
    if (r.alive) r.signal('SIGKILL');
    await r.exited;
  }
  // Each test starts without a Lease, so no test waits out a dead holder left by the previous one.
  await kube.kubectl(['delete', 'lease', LEASE, '-n', ns, '--ignore-not-found']);
});

afterAll(async () => {
  if (!ns) return;
  await rbac?.remove();
  await kube.deleteNamespace(ns);
});

test('two replicas elect one leader; kill -9 of the leader hands over within about a lease duration', async () => {
  const a = new Replica('a');
  await a.log('acquired the leader lease');
  const b = new Replica('b');
  await b.log('waiting to acquire the leader lease');
  const [idA, idB] = [await a.identity(), await b.identity()];

  const held = await lease();
  expect(held.spec.holderIdentity).toBe(idA);
  expect(held.spec.leaseDurationSeconds).toBe(15);
  expect(held.spec.renewTime).toMatch(MICRO_TIME);
  expect(held.spec.acquireTime).toMatch(MICRO_TIME);
  // The leader renews every 2 s: renewTime moves while the standby keeps waiting.
  await waitFor(async () => (await lease()).spec.renewTime !== held.spec.renewTime, 10_000, 'a renew of the lease');
  expect(b.has('acquired the leader lease')).toBe(false);
  // Both are ready (caches synced; the standby is standing by), only one is master.
  await waitFor(async () => (await a.get('health probes', '/readyz')).status === 200 && (await b.get('health probes', '/readyz')).status === 200, 30_000, 'both replicas ready');
  expect((await a.get('metrics', '/metrics')).body).toContain(`leader_election_master_status{name="${LEASE}"} 1`);
  expect((await b.get('metrics', '/metrics')).body).toContain(`leader_election_master_status{name="${LEASE}"} 0`);
  const rss = Number(/process_resident_memory_bytes (\d+)/.exec((await a.get('metrics', '/metrics')).body)![1]);
  // eslint-disable-next-line no-console
  console.log(`idle operator RSS (leader, no controllers' objects): ${(rss / 2 ** 20).toFixed(1)} MiB`);

  const killedAt = Date.now();
  a.signal('SIGKILL');
  const acquired = await b.log('acquired the leader lease', 40_000);
  const failoverMs = acquired.receivedAt - killedAt;
  // eslint-disable-next-line no-console
  console.log(`failover after kill -9 of the leader: ${(failoverMs / 1000).toFixed(1)} s (lease 15 s, retry 2 s + jitter)`);
  // The standby must wait out the lease as it last saw it renewed, at most 15 s + one jittered retry.
  expect(failoverMs).toBeLessThan(15_000 + 2_000 * 2.2 + 3_000);
  const taken = await lease();
  expect(taken.spec.holderIdentity).toBe(idB);
  expect(taken.spec.leaseTransitions).toBe((held.spec.leaseTransitions ?? 0) + 1);
});

test('SIGTERM releases the lease: the standby takes over at once and the old leader exits 0', async () => {
  const a = new Replica('a');
  await a.log('acquired the leader lease');
  const b = new Replica('b');
  await b.log('waiting to acquire the leader lease');
  // Let the standby see the held Lease (and open its watch on it) before the handover.
  await waitFor(() => b.lines.some((l) => l.msg === 'new leader elected'), 10_000, 'the standby to see the leader');

  const termAt = Date.now();
  a.signal('SIGTERM');
  expect(await a.exited).toBe(0);
  expect(a.has('released the leader lease')).toBe(true);
  const acquired = await b.log('acquired the leader lease', 20_000);
  const handoverMs = acquired.receivedAt - termAt;
  // eslint-disable-next-line no-console
  console.log(`handover after SIGTERM of the leader: ${handoverMs} ms`);
  // Well under a retry period: the standby's watch saw the release.
  expect(handoverMs).toBeLessThan(2_000);
  expect((await lease()).spec.holderIdentity).toBe(await b.identity());
});

test('a leader whose Lease is taken over stops at once with a non-zero exit', async () => {
  const a = new Replica('a');
  await a.log('acquired the leader lease');
  const current = await lease();
  // Another writer takes the Lease (as a partitioned replica's successor would).
  await kube.kubectl(['patch', 'lease', LEASE, '-n', ns, '--type=merge', '-p',
    JSON.stringify({ spec: { holderIdentity: 'intruder', leaseDurationSeconds: 3600, renewTime: current.spec.renewTime } })]);
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([a.exited, new Promise((r) => (timer = setTimeout(() => r('still running'), 15_000)))]);
  clearTimeout(timer);
  expect(code).toBe(1);
  expect(a.has('lost the leader lease')).toBe(true);
});
