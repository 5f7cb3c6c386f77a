/**
 * `extendTtl` against a scripted KubeApi (no cluster): a claim without a ttl never expires and is
 * left so; a claim with one gets the later expiry.
 */
import { KubeApi } from '../src/kube';
import { RuntimeApi } from '../src/runtime-api';
import { Sandbox } from '../src/sandbox';
import { Tracing } from '../src/tracing';

function sandboxOver(spec: Record<string, unknown>): { sandbox: Sandbox; patches: unknown[] } {
  const patches: unknown[] = [];
  const claim = { metadata: { name: 'claim-test', namespace: 'default', resourceVersion: '1' }, spec: { warmPoolRef: { name: 'pool' }, ...spec } };
  const kube = {
    get: async () => claim,
    mergePatch: async (_path: string, patch: unknown) => {
      patches.push(patch);
      return claim;
    },
  } as unknown as KubeApi;
  const tracing = new Tracing();
  const runtime = new RuntimeApi(async () => ({ baseUrl: 'http://127.0.0.1:1', headers: {}, viaRouter: false }), 'sb-test', {}, tracing);
  const sandbox = new Sandbox({ claim, sandbox: 'sb-test', kube, runtime, tracing, requestTimeoutMs: 1_000, release: () => undefined } as never);
  return { sandbox, patches };
}

test('a claim without a ttl never expires: extendTtl leaves it so and resolves with undefined', async () => {
  const { sandbox, patches } = sandboxOver({});
  await expect(sandbox.extendTtl('5m')).resolves.toBeUndefined();
  expect(patches).toEqual([]);
  expect(sandbox.expiresAt).toBeUndefined();
});

test('a claim with a ttl gets the later expiry', async () => {
  const { sandbox, patches } = sandboxOver({ lifecycle: { shutdownTime: new Date(Date.now() + 60_000).toISOString(), shutdownPolicy: 'Delete' } });
  const expiry = await sandbox.extendTtl('1h');
  expect(expiry!.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000);
  expect(patches).toHaveLength(1);
});
