import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { IConstruct } from 'constructs';
import { CLUSTER_SCOPED_KINDS, groupOf } from './api/object-kinds';
import { checkDns1123Label } from './api/validation';

/*
 * Chart-wide checks and ordering that the library's constructs install on the chart they are in, run
 * at synth (as a validation of that chart, so after every construct has been added). They cover
 * every ApiObject, whoever made it (this library, cdk8s-plus, an imported L1, a plain ApiObject):
 *
 *  - A Namespace in the chart comes before every object of the chart that lives in it, and a
 *    CustomResourceDefinition before every custom resource of its kind in the chart, so that one
 *    `kubectl apply -f` of the chart's file (or a sync in file order) creates them in order.
 *    Within the chart only: a dependency across charts makes cdk8s number every file of the App
 *    (0000-platform.k8s.yaml, ...), renaming the files GitOps tools point at, and ties charts that
 *    have nothing else to do with this library. Across charts the user orders the charts
 *    (`chart.addDependency(platform)`), which is cdk8s's own way and keeps that choice theirs.
 *  - Cluster-scoped objects of the chart carry no metadata.namespace.
 *  - Namespaced objects of the chart are in a namespace that is a DNS-1123 label.
 *
 * Scope: the charts that hold one of the library's constructs. A chart of the same App without any
 * keeps exactly what cdk8s writes, so adding this library to an App changes no unrelated output.
 */

const GUARDED = Symbol.for('cdk8s-agent-sandbox.chart-guards');

/** @internal Install the chart-wide guards on the chart `scope` is in, once per chart. */
export function _guardChart(scope: IConstruct): void {
  let chart: Chart;
  try {
    chart = Chart.of(scope);
  } catch {
    return; // not in a chart (yet): nothing to guard
  }
  if ((chart as any)[GUARDED]) return;
  Object.defineProperty(chart, GUARDED, { value: true });
  chart.node.addValidation({ validate: () => new ChartGuard(chart).run() });
}

interface Rendered {
  readonly group: string;
  readonly kind: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly spec?: any;
}

/** One run of the guards for one chart: the App's objects as rendered now, and the dependencies to add. */
class ChartGuard {
  private readonly objects: ApiObject[];
  private readonly rendered = new Map<ApiObject, Rendered>();
  private readonly expanded = new Map<IConstruct, ApiObject[]>();

  public constructor(private readonly chart: Chart) {
    this.objects = chart.node.root.node.findAll().filter((c): c is ApiObject => ApiObject.isApiObject(c));
  }

  public run(): string[] {
    const errors: string[] = [];
    const clusterScoped = this.clusterScopedKinds();
    const own = this.objects.filter((o) => Chart.of(o) === this.chart);
    const chartNs = this.chart.namespace;
    if (chartNs !== undefined) {
      const problem = checkDns1123Label(chartNs);
      if (problem !== undefined) {
        errors.push(`namespace: the Chart's namespace ${problem}; it becomes metadata.namespace of every namespaced object in the chart, `
          + 'so give the Chart a namespace that is a DNS-1123 label, such as "team-a"');
      }
    }
    for (const obj of own) {
      const r = this.render(obj);
      if (r === undefined || r.namespace === undefined) continue;
      const what = `${r.kind} "${r.name ?? obj.node.path}" (${obj.node.path})`;
      if (clusterScoped.has(`${r.group}/${r.kind}`)) {
        if (r.namespace === chartNs) {
          // A Chart's default namespace lands on every object, cluster-scoped ones too: that is how cdk8s
          // works, not a choice the user made, so it is dropped quietly (the API server has no namespace
          // for these objects, and GitOps tools would report the field as drift forever).
          obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
          this.rendered.set(obj, { ...r, namespace: undefined });
        } else {
          // A namespace other than the chart's was set on this object on purpose, most likely in the
          // belief that the object is namespaced: dropping it would hide that mistake.
          errors.push(`${what}: metadata.namespace "${r.namespace}" is set, but a ${r.kind} is cluster-scoped and has no namespace; `
            + 'remove metadata.namespace (or, if you meant a namespaced object, use a namespaced kind)');
        }
        continue;
      }
      if (r.namespace !== chartNs) {
        const problem = checkDns1123Label(r.namespace);
        if (problem !== undefined) errors.push(`${what}: metadata.namespace ${problem}; use a DNS-1123 label, such as "team-a"`);
      }
    }
    if (errors.length > 0) return errors;
    for (const obj of own) {
      const r = this.render(obj);
      if (this.isNamespace(r)) {
        for (const other of own) {
          const o = this.render(other);
          if (other !== obj && o !== undefined && o.namespace === r!.name && !clusterScoped.has(`${o.group}/${o.kind}`)) this.order(other, obj);
        }
      } else if (r?.group === 'apiextensions.k8s.io' && r.kind === 'CustomResourceDefinition') {
        // Within the chart only, as for Namespaces (see the header).
        const group = r.spec?.group;
        const kind = r.spec?.names?.kind;
        for (const other of own) {
          const o = this.render(other);
          if (other !== obj && o !== undefined && o.group === group && o.kind === kind) this.order(other, obj);
        }
      }
    }
    return [];
  }

  private isNamespace(r: Rendered | undefined): boolean {
    return r?.group === '' && r.kind === 'Namespace' && r.name !== undefined;
  }

  /** The built-in cluster-scoped kinds, and the kinds of the App's CRDs that are `scope: Cluster`. */
  private clusterScopedKinds(): Set<string> {
    const kinds = new Set(CLUSTER_SCOPED_KINDS);
    for (const obj of this.objects) {
      const r = this.render(obj);
      if (r?.group === 'apiextensions.k8s.io' && r.kind === 'CustomResourceDefinition' && r.spec?.scope === 'Cluster') {
        kinds.add(`${r.spec.group}/${r.spec.names?.kind}`);
      }
    }
    return kinds;
  }

  /**
   * The object as it will be written (patches applied); undefined when it cannot render yet, which its
   * own synth reports. Objects of other charts (except CRDs, whose spec is read) are seen through their
   * metadata, without rendering them: each guarded chart would otherwise render the whole App.
   */
  private render(obj: ApiObject): Rendered | undefined {
    if (!this.rendered.has(obj) && Chart.of(obj) !== this.chart && obj.kind !== 'CustomResourceDefinition') {
      this.rendered.set(obj, { group: groupOf(obj.apiVersion), kind: obj.kind, name: obj.metadata.name, namespace: obj.metadata.namespace });
    }
    if (!this.rendered.has(obj)) {
      let json: any;
      try {
        json = obj.toJson();
      } catch {
        return undefined;
      }
      this.rendered.set(obj, {
        group: groupOf(String(json.apiVersion ?? '')),
        kind: String(json.kind ?? ''),
        name: json.metadata?.name,
        namespace: json.metadata?.namespace,
        spec: json.spec,
      });
    }
    return this.rendered.get(obj);
  }

  /**
   * Make `later` come after `first` (both of this chart), unless `first` already comes after `later`
   * (a dependency the user or another construct declared): cdk8s cannot order a cycle, and an
   * explicit order wins.
   */
  private order(later: ApiObject, first: ApiObject): void {
    if (later.node.dependencies.includes(first) || this.objectReaches(first, later)) return;
    later.addDependency(first);
  }

  /** Whether `from` comes after `to` in its chart, directly or through other objects. */
  private objectReaches(from: ApiObject, to: ApiObject): boolean {
    const chart = Chart.of(from);
    const seen = new Set<ApiObject>([from]);
    const queue = [from];
    while (queue.length > 0) {
      const obj = queue.pop()!;
      for (const next of this.dependenciesOf(obj)) {
        if (next === to) return true;
        if (!seen.has(next) && Chart.of(next) === chart) {
          seen.add(next);
          queue.push(next);
        }
      }
    }
    return false;
  }

  /**
   * The objects `obj` comes after, as cdk8s resolves them: dependencies of the object and of every
   * construct above it up to its chart, each standing for all the objects under it.
   */
  private dependenciesOf(obj: ApiObject): ApiObject[] {
    const result: ApiObject[] = [];
    for (let c: IConstruct | undefined = obj; c !== undefined; c = c.node.scope) {
      for (const dep of c.node.dependencies) result.push(...this.objectsUnder(dep));
      if (c === Chart.of(obj)) break;
    }
    return result;
  }

  private objectsUnder(c: IConstruct): ApiObject[] {
    if (ApiObject.isApiObject(c)) return [c];
    if (!this.expanded.has(c)) this.expanded.set(c, c.node.findAll().filter((x): x is ApiObject => ApiObject.isApiObject(x)));
    return this.expanded.get(c)!;
  }
}
