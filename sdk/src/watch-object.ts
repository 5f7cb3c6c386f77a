/**
 * Follows one named object on a watch (never by polling) until a callback says it is done, within
 * a time limit. A watch that ends, reports an error event (410 Gone included) or fails (a connection
 * lost or reset, a 429 or 5xx at its start) is started again without a resourceVersion, which
 * replays the object's current state first, so nothing is missed; failures back off (doubling up to
 * a bound) within the time limit. Only 401, 403 and 404, and what `onObject` throws, end the wait.
 */
import { SandboxApiError } from './errors.js';
import { KubeApi, ResourceNames } from './kube.js';
import { sleep } from './retry.js';

/** Pause before watching again after the stream ended. */
const REWATCH_DELAY_MS = 200;
/** The longest pause before watching again after a failed watch. */
const MAX_REWATCH_DELAY_MS = 5_000;
/** Watch failures that watching again cannot fix. */
const FATAL_WATCH_STATUS = new Set([401, 403, 404]);

/** Whether a failed watch is worth starting again: no HTTP status (connection trouble), or any status but 401/403/404. */
function rewatchable(err: unknown): boolean {
  return err instanceof SandboxApiError && (err.status === undefined || !FATAL_WATCH_STATUS.has(err.status));
}

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
    let failures = 0;
    while (result === undefined) {
      try {
        await api.watch(path, params, (event) => {
          if (event.type === 'ERROR') return true;
          if (event.type === 'BOOKMARK') return false;
          result = onObject(event.object, event.type === 'DELETED');
          return result !== undefined;
        }, signal);
        failures = 0;
      } catch (err) {
        if (signal.aborted || !rewatchable(err)) throw err;
        failures++;
      }
      if (result === undefined) await sleep(Math.min(MAX_REWATCH_DELAY_MS, REWATCH_DELAY_MS * 2 ** Math.max(0, failures - 1)), signal);
    }
    return result;
  } catch (err) {
    if (deadline.signal.aborted && !options.signal?.aborted) throw options.onTimeout();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
