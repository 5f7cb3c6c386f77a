/**
 * Sandboxes on a real node: the stock Python image with the runtime injected, under runc and under
 * gVisor (the gvisor RuntimeClass the bundle ships), reached through the router Pod.
 */
import { execFileSync } from 'child_process';
import { TestNamespace, claimSandbox, execute, openNamespace, pods, pythonPool } from './e2e';

const HOST_KERNEL = execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim();
let t: TestNamespace;

beforeAll(async () => {
  t = await openNamespace('sandboxes', (ns) => [...pythonPool(ns, 'py-runc', { runAsUser: 1000 }), ...pythonPool(ns, 'py-gvisor', { runtimeClass: 'gvisor', runAsUser: 1000 })]);
});

afterAll(async () => {
  await t?.close();
});

test('a runc sandbox runs the stock image with the injected runtime, on the host kernel', async () => {
  const name = await claimSandbox(t.k, t.ns, 'py-runc');
  const pod = (await pods(t.k, t.ns)).find((p) => p.metadata.name === name);
  expect(pod.spec.runtimeClassName).toBeUndefined();
  expect(pod.status.podIP).toMatch(/^198\.18\./);
  const r = await execute(t.router.url, t.token, t.ns, name, 'uname -r; python3 -c "print(6*7)"; id -u');
  expect(r.exit_code).toBe(0);
  expect(r.stdout.split('\n')).toEqual([HOST_KERNEL, '42', '1000', '']);
});

test('a gVisor sandbox runs under gVisor: its kernel is not the host\'s', async () => {
  const name = await claimSandbox(t.k, t.ns, 'py-gvisor');
  const pod = (await pods(t.k, t.ns)).find((p) => p.metadata.name === name);
  expect(pod.spec.runtimeClassName).toBe('gvisor');
  const r = await execute(t.router.url, t.token, t.ns, name, 'uname -r; dmesg 2>/dev/null | head -1; python3 -c "print(6*7)"');
  expect(r.exit_code).toBe(0);
  const [kernel, dmesg, answer] = r.stdout.split('\n');
  expect(kernel).not.toBe(HOST_KERNEL);
  // gVisor's kernel log opens with its own banner.
  expect(dmesg).toMatch(/gVisor/);
  expect(answer).toBe('42');
});
