/**
 * `follow` against a scripted KubeApi whose watches fail: a failure without an HTTP status (a
 * connection reset), a 429 or a 5xx is watched again; 401/403/404 end the wait.
 */
import { SandboxApiError } from '../src/errors';
import { KubeApi, WatchEvent } from '../src/kube';
import { follow } from '../src/watch-object';

const RESOURCE = { group: 'example.io', version: 'v1', plural: 'things' };

/** A KubeApi whose successive watch() calls do what `steps` say: throw that error, or deliver that event. */
function scriptedWatches(steps: Array<Error | WatchEvent>): { api: KubeApi; calls: () => number } {
  let calls = 0;
  const watch = async (_path: string, _params: unknown, onEvent: (event: WatchEvent) => boolean) => {
    const step = steps[Math.min(calls++, steps.length - 1)];
    if (step instanceof Error) throw step;
    return onEvent(step);
  };
  return { api: { watch } as unknown as KubeApi, calls: () => calls };
}

const ready: WatchEvent = { type: 'ADDED', object: { metadata: { name: 'x' }, ready: true } };
const onObject = (object: any) => (object.ready ? 'ready' : undefined);
const options = { timeoutMs: 9_000, onTimeout: () => new Error('timed out') };

test('a reset connection, a 429 and a 503 at the watch\'s start are watched again until the object is done', async () => {
  const { api, calls } = scriptedWatches([
    new SandboxApiError('WATCH: read ECONNRESET', undefined, undefined),
    new SandboxApiError('WATCH: Premature close', undefined, undefined),
    new SandboxApiError('WATCH: HTTP 429', 429, undefined),
    new SandboxApiError('WATCH: HTTP 503', 503, undefined),
    ready,
  ]);
  await expect(follow(api, RESOURCE, 'ns', 'x', onObject, options)).resolves.toBe('ready');
  expect(calls()).toBe(5);
}, 20_000);

test.each([401, 403, 404])('a %i ends the wait with that error', async (status) => {
  const { api, calls } = scriptedWatches([new SandboxApiError(`WATCH: HTTP ${status}`, status, undefined), ready]);
  await expect(follow(api, RESOURCE, 'ns', 'x', onObject, options)).rejects.toMatchObject({ status });
  expect(calls()).toBe(1);
});
