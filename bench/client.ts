/**
 * The load generator's client: the harness's ApiClient (the operator's HTTP client, loopback
 * only) with many keep-alive sockets, since a TLS handshake per claim would be part of every
 * measured latency, a count of the harness's own requests, and long-lived watches that stream
 * every event through the operator's informer.
 */
import { SharedInformer } from '../operator/src/runtime/informer';
import { Logger, SILENT_LOGGER } from '../operator/src/runtime/log';
import { KubeObject, ResourceType } from '../operator/src/runtime/types';
import { ApiClient, ClusterConnection } from '../tools/control-plane/api';

export interface Watch {
  /** Resolves once the first list is in: every later change arrives as an event. */
  readonly ready: Promise<void>;
  close(): void;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class BenchClient extends ApiClient {
  /**
   * Requests issued by the harness itself and answered, by `VERB resource` as the apiserver
   * counts them (lists are LIST, watches WATCH), so they can be taken out of its totals.
   */
  public readonly issued: Map<string, number>;
  /** Watches that had to be resumed (ended by the server, or failed). */
  public watchRestarts = 0;

  public constructor(connection: ClusterConnection, maxSockets = 64) {
    const issued = new Map<string, number>();
    super(connection, {
      maxSockets,
      requestTimeoutMs: 60_000,
      metrics: {
        request: (verb, code, _ms, path) => {
          // No status means no answer: the apiserver may never have seen the request.
          if (code === '<error>') return;
          const key = `${verb} ${resourceOf(path)}`;
          issued.set(key, (issued.get(key) ?? 0) + 1);
        },
      },
    });
    this.issued = issued;
  }

  /**
   * Every event of one resource in `namespace` until close(), like an informer's handlers: items
   * already present arrive as ADDED, a watch that ends (the apiserver drops watchers that fall
   * behind) resumes from the last resourceVersion, a 410 Gone relists, and a deletion carries the
   * last state seen. `ready` rejects when the first list fails, rather than retrying forever.
   */
  public stream(type: ResourceType, namespace: string, onEvent: (type: WatchEventType, obj: any) => void): Watch {
    const what = `${type.resource} in ${namespace}`;
    let lastError = '';
    let failFirstList!: (e: Error) => void;
    const firstListFailed = new Promise<never>((_, reject) => (failFirstList = reject));
    const informer = new SharedInformer<KubeObject>(this.kube, type, {
      namespace,
      // One watch for a whole run: restarts should mean trouble, not routine timeouts.
      watchTimeoutSeconds: 3600,
      log: stderrWarnings(`watch ${what}`, (message) => (lastError = message)),
      metrics: {
        watchRestarted: (reason) => {
          if (!informer.hasSynced) {
            informer.stop();
            failFirstList(new Error(`watch ${what}: the first list failed: ${lastError || reason}`));
            return;
          }
          this.watchRestarts++;
          process.stderr.write(`[bench] watch ${what}: ${reason}; resuming\n`);
        },
      },
    });
    informer.addHandlers({
      onAdd: (obj) => onEvent('ADDED', obj),
      onUpdate: (_old, obj) => onEvent('MODIFIED', obj),
      onDelete: (obj) => onEvent('DELETED', obj),
    });
    informer.start();
    const ready = Promise.race([informer.synced, firstListFailed]);
    return { ready, close: () => informer.stop() };
  }

  /**
   * Opens `n` keep-alive connections (parallel GET /version), so TLS handshakes happen before a
   * measured phase rather than inside the first claims' latencies. Non-resource requests are not
   * in the apiserver's per-resource counters.
   */
  public async warm(n: number): Promise<void> {
    await Promise.all(Array.from({ length: n }, () => this.request('GET', '/version')));
  }
}

/** The informer's warnings on stderr, the message of each also handed to `onMessage`. */
function stderrWarnings(prefix: string, onMessage: (message: string) => void): Logger {
  const log: Logger = {
    ...SILENT_LOGGER,
    warn: (fields: object | string, message?: string) => {
      const err = typeof fields === 'object' ? (fields as { err?: Error }).err : undefined;
      const text = [message ?? (typeof fields === 'string' ? fields : ''), err?.message].filter(Boolean).join(': ');
      onMessage(text);
      process.stderr.write(`[bench] ${prefix}: ${text}\n`);
    },
    child: () => log,
  };
  return log;
}

/** `sandboxclaims`, `sandboxes/status`, ... from an API path (the apiserver metric's resource[/subresource]). */
export function resourceOf(path: string): string {
  const parts = path.split('?')[0].split('/').filter(Boolean);
  const i = parts.indexOf('namespaces');
  const rest = i >= 0 ? parts.slice(i + 2) : parts.slice(parts[0] === 'api' ? 2 : 3);
  if (i >= 0 && rest.length === 0) return 'namespaces';
  return rest.length >= 3 ? `${rest[0]}/${rest[2]}` : rest[0] ?? '';
}
