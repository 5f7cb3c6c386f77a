/**
 * The hardened securityContext, applied by a real kubelet and runc: a root image without the
 * opt-out does not start (and the Pod and its Event say why); in a running sandbox seccomp is in
 * filter mode, the bounding set is empty, privileges cannot be gained and no token is mounted. A
 * template that switches each default off shows the opposite, so none of these checks can pass on
 * a node that ignores the settings.
 */
import { TestNamespace, claimSandbox, eventually, execute, openNamespace, pods, pythonPool } from './e2e';

let t: TestNamespace;

const STATUS = 'grep -E "^(Seccomp|CapBnd|CapEff|NoNewPrivs):" /proc/self/status; '
  + 'if [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ]; then echo "Token: mounted"; else echo "Token: none"; fi';

beforeAll(async () => {
  t = await openNamespace('hardening', (ns) => [
    ...pythonPool(ns, 'hardened', { runAsUser: 1000 }),
    ...pythonPool(ns, 'relaxed', { runAsUser: 1000, extra: { security: { seccompRuntimeDefault: false, hardenContainers: false, automountServiceAccountToken: true } } }),
    // The stock image runs as root and the template does not say otherwise.
    ...pythonPool(ns, 'as-root'),
  ]);
});

afterAll(async () => {
  await t?.close();
});

function fields(stdout: string): Record<string, string> {
  return Object.fromEntries(stdout.trim().split('\n').map((l) => {
    const m = /^(\w+):\s*(.*)$/.exec(l);
    return m ? [m[1], m[2]] : ['unparsed', l];
  }));
}

test('a root image without runAsUser does not start: the kubelet refuses it and says why', async () => {
  const pod = await eventually('the as-root Pod refused by the kubelet', async () => (await pods(t.k, t.ns)).find((p) => p.metadata.name.startsWith('as-root-')
    && p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError'), 120_000);
  const waiting = pod.status.containerStatuses[0].state.waiting;
  expect(waiting.message).toMatch(/runAsNonRoot and image will run as root/);
  expect(pod.status.containerStatuses[0].ready).toBe(false);
  const events = await t.k.getJson<{ items: any[] }>(['events', '-n', t.ns, '--field-selector', `involvedObject.name=${pod.metadata.name}`]);
  expect(events.items.map((e) => e.message).join('\n')).toMatch(/runAsNonRoot and image will run as root/);
});

test('inside a sandbox: seccomp filtering, no capabilities, no new privileges, no t.token; each off when the template opts out', async () => {
  const hardened = fields((await execute(t.router.url, t.token, t.ns, await claimSandbox(t.k, t.ns, 'hardened'), STATUS)).stdout);
  expect(hardened).toEqual({
    Seccomp: '2', // SECCOMP_MODE_FILTER: the RuntimeDefault profile
    CapBnd: '0000000000000000',
    CapEff: '0000000000000000',
    NoNewPrivs: '1',
    Token: 'none',
  });
  const relaxed = fields((await execute(t.router.url, t.token, t.ns, await claimSandbox(t.k, t.ns, 'relaxed'), STATUS)).stdout);
  expect(relaxed.Seccomp).toBe('0');
  expect(relaxed.CapBnd).not.toBe('0000000000000000');
  expect(relaxed.NoNewPrivs).toBe('0');
  expect(relaxed.Token).toBe('mounted');
});
