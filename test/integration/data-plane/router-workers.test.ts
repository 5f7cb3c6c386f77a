/**
 * `router --workers=2` on the local control plane: a primary and two worker processes share the
 * proxy port; both workers serve requests to claimed sandboxes' runtimes; the primary's /metrics
 * is the sum over the workers; SIGTERM drains all three, also before the workers' caches have
 * synced; a worker that dies takes the rest down.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { DataPlane, send } from './data-plane';
import { processTree } from '../../../bench/measure';
import { waitFor } from '../../../tools/control-plane/kube';
import { freePort } from '../../../tools/control-plane/processes';
import { OperatorProcess } from '../../../tools/shared/operator-process';

const REQUESTS = 24;
let dp: DataPlane;

beforeAll(async () => {
  dp = await DataPlane.start('dp-workers', 2);
}, 180_000);

afterAll(async () => {
  await dp?.stop();
});

/** The pids of `pid`'s descendants (the workers have none of their own). */
const children = (pid: number): number[] => processTree(pid).slice(1);

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));

async function startRouter(): Promise<{ router: OperatorProcess; port: number; workers: number[] }> {
  const router = await OperatorProcess.startRouter({
    kubeconfig: dp.kube.kubeconfig,
    args: ['--auth=none', '--allowed-pod-cidrs=127.64.0.0/12', '--workers=2', '--access-log'],
  });
  const port = await router.port('proxy');
  // Both workers listen once their caches have synced.
  await waitFor(async () => router.lines.filter((l) => l.msg === 'serving proxy').length === 2 || undefined, 30_000, 'both workers serving the proxy');
  const workers = children(router.pid);
  return { router, port, workers };
}

/** A GET of the runtime's root on a connection of its own (the primary hands connections to workers in turn). */
function get(port: number, sandbox: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/', agent: false, headers: { 'X-Sandbox-ID': sandbox, 'X-Sandbox-Namespace': dp.ns } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject);
  });
}

test('both workers serve; the primary\'s metrics sum them; SIGTERM stops all three with 0', async () => {
  const { router, port, workers } = await startRouter();
  try {
    expect(workers).toHaveLength(2);
    const statuses = [];
    for (let i = 0; i < REQUESTS; i++) statuses.push(await get(port, dp.sandboxes[i % 2]));
    expect(statuses).toEqual(Array(REQUESTS).fill(200));
    // Each access-log line names the worker that served it: both did.
    const servedBy = new Set(router.lines.filter((l) => l.msg === 'request' && l.status === 200).map((l) => l.worker));
    expect([...servedBy].sort()).toEqual([...workers].sort());
    // One scrape of the primary counts every request, whichever worker served it.
    const metrics = await router.metrics();
    expect(metrics.sum('sandbox_router_requests_total', { sandbox_namespace: dp.ns })).toBe(REQUESTS);
    // Build info is the same in each worker: served once, not summed.
    expect(metrics.sum('sandbox_router_build_info')).toBe(1);
    // Another request after the scrape still goes through (the primary's channel to the workers is not a proxy path).
    expect((await send(port, '/', { headers: { 'X-Sandbox-ID': dp.sandboxes[0], 'X-Sandbox-Namespace': dp.ns } })).status).toBe(200);
  } finally {
    expect(await router.stop()).toBe(0);
  }
  for (const pid of workers) expect(alive(pid)).toBe(false);
}, 120_000);

test('a worker killed outright takes the primary and the other worker down (exit 1), so the Pod restarts whole', async () => {
  const { router, workers } = await startRouter();
  process.kill(workers[0], 'SIGKILL');
  expect(await Promise.race([router.exited, new Promise((r) => setTimeout(() => r('still running'), 30_000))])).toBe(1);
  await waitFor(async () => (!alive(workers[1]) ? true : undefined), 10_000, 'the other worker to exit');
  expect(router.lines.some((l) => l.msg === 'a router worker exited; stopping the others and exiting')).toBe(true);
}, 120_000);

test('SIGTERM while the workers still wait for their caches (the API server unreachable) stops all three with 0', async () => {
  // The same credentials, aimed at a port where nothing listens: the caches never sync.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'router-workers-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const closed = await freePort();
  fs.writeFileSync(kubeconfig, fs.readFileSync(dp.kube.kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${closed}`));
  const router = OperatorProcess.launchRouter({ kubeconfig, args: ['--auth=none', '--workers=2'] });
  try {
    await waitFor(async () => router.lines.filter((l) => l.msg === 'starting the router' && l.worker).length === 2 || undefined, 30_000, 'both workers started');
    const workers = children(router.pid);
    expect(workers).toHaveLength(2);
    expect(router.lines.some((l) => l.msg === 'serving proxy')).toBe(false);
    expect(await router.stop(20_000)).toBe(0);
    for (const pid of workers) expect(alive(pid)).toBe(false);
  } finally {
    await router.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
