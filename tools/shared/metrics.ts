/**
 * Prometheus text as the operator and the API server serve it on /metrics: one parser for the
 * integration tests, the fault tests and the benchmarks.
 */
import type { ApiClient } from '../control-plane/api';

/** One scrape of Prometheus text: samples by metric name and labels. */
export class Metrics {
  private readonly samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];

  public constructor(public readonly text: string) {
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
      this.samples.push({ name: m[1], labels, value: Number(m[3]) });
    }
  }

  /** Sum of the samples of `name` whose labels include `labels`; 0 when there are none. */
  public sum(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((total, s) => total + s.value, 0);
  }

  public has(name: string, labels: Record<string, string> = {}): boolean {
    return this.matching(name, labels).length > 0;
  }

  /**
   * Sums of the samples of `name` grouped by `key` of their labels; a sample whose key is
   * undefined is left out.
   */
  public sumBy(name: string, key: (labels: Record<string, string>) => string | undefined): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.matching(name, {})) {
      const k = key(s.labels);
      if (k !== undefined) out.set(k, (out.get(k) ?? 0) + s.value);
    }
    return out;
  }

  /** Nothing queued or in flight for `controller` (see OperatorProcess.waitIdle). */
  public idle(controller: string): boolean {
    return this.sum('workqueue_adds_total', { controller }) === this.sum('controller_runtime_reconcile_total', { controller })
      && this.sum('workqueue_depth', { controller }) === 0 && this.sum('controller_runtime_active_workers', { controller }) === 0;
  }

  private matching(name: string, labels: Record<string, string>) {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }
}

/**
 * `apiserver_request_total` from the API server's /metrics, summed by `VERB resource[/subresource]`
 * (WATCH and LIST included), and by the response code too (`VERB resource code`) with `byCode`.
 * The group is left out (no two resources the operator writes share a name), and so are requests
 * that name no resource (/healthz, /metrics).
 */
export async function apiserverRequests(api: ApiClient, opts: { readonly byCode?: boolean } = {}): Promise<Map<string, number>> {
  const res = await api.request<string>('GET', '/metrics', undefined, { timeoutMs: 30_000 });
  if (res.status !== 200) throw new Error(`GET /metrics -> HTTP ${res.status}`);
  return new Metrics(String(res.body)).sumBy('apiserver_request_total', (l) => {
    if (!l.resource) return undefined;
    const key = `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ''}`;
    return opts.byCode ? `${key} ${l.code}` : key;
  });
}
