/**
 * `kubectl port-forward` on the local control plane: kube-apiserver proxies pods/portforward to the
 * node's "kubelet", which is kwok's server on 127.0.0.1; kwok forwards to the Pod's own address as
 * the PortForward object the pod runner wrote for the Pod says. Everything stays on loopback.
 */
import { ChildProcess, spawn } from 'child_process';
import * as http from 'http';
import * as path from 'path';
import { ApiClient, connectionFromKubeconfig } from '../../tools/control-plane/api';
import { ENV, Kube, waitFor } from '../../tools/control-plane/kube';
import { RUN_LABEL } from '../../tools/control-plane/pod-runner';
import { sleep } from '../../tools/control-plane/processes';
import { ensureOperatorBundle } from '../../tools/shared/operator-process';

const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
const forwards: ChildProcess[] = [];

beforeAll(async () => {
  await ensureOperatorBundle();
  ns = await kube.createNamespace('port-forward');
});

afterAll(async () => {
  for (const child of forwards) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  if (ns) await kube.deleteNamespace(ns);
  api.close();
});

const isReady = (pod: any) => pod?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');

function createReady(pod: any): Promise<any> {
  return api.watch(`/api/v1/namespaces/${ns}/pods?fieldSelector=metadata.name=${pod.metadata.name}`,
    (ev) => (ev.type !== 'DELETED' && isReady(ev.object) ? ev.object : undefined),
    { timeoutMs: 60_000, onReady: () => api.call('POST', `/api/v1/namespaces/${ns}/pods`, pod) });
}

function get(port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject).on('timeout', function (this: http.ClientRequest) { this.destroy(new Error('timed out')); });
  });
}

/**
 * `kubectl port-forward <target> :<port>` on 127.0.0.1; resolves with the local port it picked
 * once it prints "Forwarding from", and the process (stopped in afterAll).
 */
function portForward(target: string, port: number): Promise<{ local: number; child: ChildProcess; output: () => string }> {
  const kubectl = path.join(process.env[ENV.binDir]!, 'kubectl');
  const child = spawn(kubectl, [`--kubeconfig=${kube.kubeconfig}`, '-n', ns, 'port-forward', '--address=127.0.0.1', target, `:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  forwards.push(child);
  let out = '';
  const output = () => out;
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out);
      if (m) resolve({ local: Number(m[1]), child, output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`kubectl port-forward exited (${code}): ${out}`)));
    child.on('error', reject);
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

test('kubectl port-forward reaches the runtime of a pod-runner Pod on its own address', async () => {
  const pod = await createReady({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'runtime', labels: { [RUN_LABEL]: 'true' } },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [{
        name: 'runtime',
        image: 'example.invalid/agent-sandbox-operator:dev',
        command: ['agent-sandbox-operator', 'runtime', '--port=8888'],
        ports: [{ containerPort: 8888 }],
      }],
    },
  });
  // The runner's PortForward: port 8888 to the same port on the Pod's address, owned by the Pod.
  const pf = await waitFor(async () => {
    const res = await api.request('GET', `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${ns}/portforwards/runtime`);
    return res.status === 200 ? res.body : undefined;
  }, 30_000, 'the PortForward of pod runtime');
  expect(pf.spec.forwards).toEqual([{ ports: [8888], target: { port: 8888, address: pod.status.podIP } }]);
  expect(pf.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Pod', name: 'runtime', uid: pod.metadata.uid })]);

  // kwok learns of the PortForward through its informer: a connection made before that fails (and
  // ends kubectl), so retry a few times.
  let answer: { status: number; body: string } | undefined;
  let lastError = '';
  for (let attempt = 0; attempt < 10 && !answer; attempt++) {
    const fwd = await portForward('pod/runtime', 8888);
    try {
      answer = await get(fwd.local, '/');
    } catch (e) {
      lastError = `${(e as Error).message}; kubectl: ${fwd.output()}`;
      await sleep(500);
    }
    await stop(fwd.child);
  }
  if (!answer) throw new Error(`no answer through kubectl port-forward: ${lastError}`);
  expect(answer.status).toBe(200);
  // Upstream's health answer (sandboxd adds a list of its extra features beside it).
  expect(JSON.parse(answer.body)).toMatchObject({ status: 'ok', message: 'Sandbox Runtime is active.' });
}, 120_000);
