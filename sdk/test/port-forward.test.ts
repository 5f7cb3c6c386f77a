/**
 * The port-forward's local listener against a scripted KubeApi (no cluster): closing while the
 * first use still looks the router up leaves no listener behind, and a failed first use is tried
 * again on the next.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApi } from '../src/kube';
import { ServicePortForward } from '../src/port-forward';

const service = { spec: { ports: [{ port: 8080, targetPort: 8080 }], selector: { app: 'router' } } };
const pods = {
  items: [{ metadata: { name: 'router-0' }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }],
};

/** A KubeApi whose GETs are answered by `get`. */
function fakeApi(get: (path: string) => Promise<any>): KubeApi {
  return { config: new KubeConfig(), get } as unknown as KubeApi;
}

test('close() while the first localPort() looks the Service up: the start gives up and no listener is left', async () => {
  let answer!: (value: unknown) => void;
  const lookedUp = new Promise((resolve) => (answer = resolve));
  let started!: () => void;
  const asked = new Promise<void>((resolve) => (started = resolve));
  const forward = new ServicePortForward(fakeApi(async (path) => {
    if (path.includes('/services/')) {
      started();
      await lookedUp;
      return service;
    }
    return pods;
  }), 'ns', 'router', 8080);
  const port = forward.localPort();
  port.catch(() => undefined);
  await asked;
  const closing = forward.close();
  answer(undefined);
  await closing;
  await expect(port).rejects.toThrow(/closed/);
  expect((forward as unknown as { server?: unknown }).server).toBeUndefined();
  await forward.close();
});

test('a first localPort() that failed (the Service unreadable) is tried again by the next', async () => {
  let serviceReads = 0;
  const forward = new ServicePortForward(fakeApi(async (path) => {
    if (path.includes('/services/')) {
      if (++serviceReads === 1) throw new Error('connection refused');
      return service;
    }
    return pods;
  }), 'ns', 'router', 8080);
  try {
    await expect(forward.localPort()).rejects.toThrow(/cannot read Service ns\/router/);
    await expect(forward.localPort()).resolves.toEqual(expect.any(Number));
    expect(serviceReads).toBe(2);
  } finally {
    await forward.close();
  }
});
