/**
 * Follows one named object on a watch (never by polling) until a callback says it is done, within
 * a time limit. A watch that ends or reports an error (410 Gone included) is started again without
 * a resourceVersion, which replays the object's current state first, so nothing is missed.
 */
import { KubeApi, ResourceNames } from './kube.js';
import { sleep } from './retry.js';

/** Pause before watching again after the stream ended. */
const REWATCH_DELAY_MS = 200;

export interface FollowOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** The error to throw when the time runs out. */
  readonly onTimeout: () => Error;
}

/**
 * Calls `onObject(object, deleted)` for each state of the object; resolves with the first value it
 * returns other than undefined. Whatever `onObject` throws ends the wait with that error.
 */
export async function follow<T>(
  api: KubeApi,
  resource: ResourceNames,
  namespace: string,
  name: string,
  onObject: (object: any, deleted: boolean) => T | undefined,
  options: FollowOptions,
): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error('timed out')), options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  let result: T | undefined;
  try {
    const path = KubeApi.path(resource, namespace);
    const params = { fieldSelector: `metadata.name=${name}`, timeoutSeconds: Math.max(1, Math.ceil(options.timeoutMs / 1000)) };
    while (result === undefined) {
      await api.watch(path, params, (event) => {
        if (event.type === 'ERROR') return true;
        if (event.type === 'BOOKMARK') return false;
        result = onObject(event.object, event.type === 'DELETED');
        return result !== undefined;
      }, signal);
      if (result === undefined) await sleep(REWATCH_DELAY_MS, signal);
    }
    return result;
  } catch (err) {
    if (deadline.signal.aborted && !options.signal?.aborted) throw options.onTimeout();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
