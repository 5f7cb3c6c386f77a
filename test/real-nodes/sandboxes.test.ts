/**
 * Sandboxes on a real node: the stock Python image with the runtime injected, under runc and under
 * gVisor (the gvisor RuntimeClass the bundle ships), reached through the router Pod.
 */
import { execFileSync } from 'child_process';
import { RouterForward, agentToken, eventually, execute, kube, pods, pythonPool } from './e2e';
import { Kube } from '../../tools/control-plane/kube';

const HOST_KERNEL = execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim();
let k: Kube;
let ns: string;
let router: RouterForward;
let token: string;

beforeAll(async () => {
  k = kube();
  ns = await k.createNamespace('sandboxes');
  await k.applyServerSide([...pythonPool(ns, 'py-runc', { runAsUser: 1000 }), ...pythonPool(ns, 'py-gvisor', { runtimeClass: 'gvisor', runAsUser: 1000 })], 'real-nodes-test');
  router = await RouterForward.open(k);
  token = await agentToken(k, ns);
});

afterAll(async () => {
  router?.close();
  await k.deleteNamespace(ns);
});

async function readyPoolSandbox(pool: string): Promise<string> {
  return eventually(`a Ready pod of pool ${pool}`, async () => {
    const ready = (await pods(k, ns)).filter((p) => p.metadata.name.startsWith(pool)
      && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    return ready[0]?.metadata.name as string | undefined;
  }, 180_000);
}

test('a runc sandbox runs the stock image with the injected runtime, on the host kernel', async () => {
  const name = await readyPoolSandbox('py-runc');
  const pod = (await pods(k, ns)).find((p) => p.metadata.name === name);
  expect(pod.spec.runtimeClassName).toBeUndefined();
  expect(pod.status.podIP).toMatch(/^198\.18\./);
  const r = await execute(router.url, token, ns, name, 'uname -r; python3 -c "print(6*7)"; id -u');
  expect(r.exit_code).toBe(0);
  expect(r.stdout.split('\n')).toEqual([HOST_KERNEL, '42', '1000', '']);
});

test('a gVisor sandbox runs under gVisor: its kernel is not the host\'s', async () => {
  const name = await readyPoolSandbox('py-gvisor');
  const pod = (await pods(k, ns)).find((p) => p.metadata.name === name);
  expect(pod.spec.runtimeClassName).toBe('gvisor');
  const r = await execute(router.url, token, ns, name, 'uname -r; dmesg 2>/dev/null | head -1; python3 -c "print(6*7)"');
  expect(r.exit_code).toBe(0);
  const [kernel, dmesg, answer] = r.stdout.split('\n');
  expect(kernel).not.toBe(HOST_KERNEL);
  // gVisor's kernel log opens with its own banner.
  expect(dmesg).toMatch(/gVisor/);
  expect(answer).toBe('42');
});
