import { ApiObject, ApiObjectMetadata, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { WarmPoolUpdateStrategyType } from './api/enums';
import { KINDS, apiVersionOf } from './api/groups';
import { propName, staticMethodName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain, checkPositiveQuantity } from './api/validation';
import { dropUndefined } from './container';
import { _checkSpecSchema, _customResource } from './custom-resource';
import { _checkPositiveSeconds } from './idle-policy';
import { ISandboxTemplate } from './template';

/** A SandboxWarmPool, defined here or imported by name. */
export interface ISandboxWarmPool {
  /** The pool name. */
  readonly name: string;
  /** The pool's template, when known. */
  readonly template?: ISandboxTemplate;
}

/**
 * A metric the HorizontalPodAutoscaler scales a warm pool on (autoscaling/v2). Pool members'
 * Pods carry the pool's selector label while unclaimed, so Pod and resource metrics describe
 * the idle capacity; external metrics (such as a claim rate) describe demand.
 */
export class WarmPoolScalingMetric {
  /** Average utilization of a resource (`cpu`, `memory`) across the pool's Pods, in percent of requests. */
  public static resourceUtilization(resource: string, averageUtilizationPercent: number): WarmPoolScalingMetric {
    return new WarmPoolScalingMetric({
      type: 'Resource',
      resource: { name: resource, target: { type: 'Utilization', averageUtilization: averageUtilizationPercent } },
    }, averageUtilizationPercent);
  }

  /** A per-Pod custom metric averaged across the pool's Pods. */
  public static pods(metricName: string, averageValue: string): WarmPoolScalingMetric {
    return new WarmPoolScalingMetric({
      type: 'Pods',
      pods: { metric: { name: metricName }, target: { type: 'AverageValue', averageValue } },
    }, undefined, averageValue);
  }

  /**
   * An external metric such as a claim arrival rate: the pool scales so that each replica
   * carries `averageValue` of it.
   */
  public static external(metricName: string, averageValue: string, matchLabels?: { [key: string]: string }): WarmPoolScalingMetric {
    return new WarmPoolScalingMetric({
      type: 'External',
      external: {
        metric: dropUndefined({ name: metricName, selector: matchLabels ? { matchLabels } : undefined }),
        target: { type: 'AverageValue', averageValue },
      },
    }, undefined, averageValue);
  }

  private constructor(
    private readonly spec: { [key: string]: unknown },
    private readonly percent?: number,
    private readonly quantity?: string,
  ) {}

  /** @internal */
  public _validate(errors: ErrorList, field: string): void {
    if (this.percent !== undefined && (!Number.isInteger(this.percent) || this.percent < 1)) {
      errors.prop(field, `utilization ${JSON.stringify(this.percent)} must be a whole percentage of at least 1`);
    }
    // The HPA refuses a target average value of 0 or less.
    if (this.quantity !== undefined) errors.prop(field, checkPositiveQuantity(this.quantity)?.replace(/^/, 'target average value '));
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    return this.spec;
  }
}

/** A HorizontalPodAutoscaler on the pool's scale subresource. */
export interface WarmPoolAutoscaling {
  /** Fewest warm Sandboxes. */
  readonly minReplicas: number;
  /** Most warm Sandboxes. */
  readonly maxReplicas: number;
  /** What to scale on (at least one). */
  readonly metrics: WarmPoolScalingMetric[];
}

/** Props of {@link SandboxWarmPool}. */
export interface SandboxWarmPoolProps {
  /** Metadata of the pool. @default - a generated name */
  readonly metadata?: ApiObjectMetadata;
  /** The template the pool's Sandboxes are built from (same namespace). */
  readonly template: ISandboxTemplate;
  /**
   * Warm Sandboxes to keep. 0 makes a "cold-only" pool that only names a template for claims.
   * Not together with `autoscaling` (synth fails): the HPA owns the count, and a value in Git would fight it.
   * @default - unset, which the API server defaults to 1
   */
  readonly replicas?: number;
  /** How stale unclaimed Sandboxes are replaced after a template change. @default WarmPoolUpdateStrategyType.ON_REPLENISH */
  readonly updateStrategy?: WarmPoolUpdateStrategyType;
  /** Scale the pool with a HorizontalPodAutoscaler. @default - a fixed replica count */
  readonly autoscaling?: WarmPoolAutoscaling;
  /**
   * After this long without a claim, keep no warm members. The next claim then starts cold (as with
   * `replicas: 0`) and the pool refills to `replicas`. Whole seconds, at least one.
   *
   * `replicas` stays as set: the operator holds the pool's members at 0 while it is idle and does
   * not write `spec.replicas`. With `autoscaling`, the HPA still owns `spec.replicas` (within
   * `minReplicas`..`maxReplicas`) and the pool refills to whatever it last set; while the pool is
   * held at 0, Pod and resource metrics have no Pods to read, so the HPA leaves the count alone.
   * @default - the pool always keeps `replicas` warm
   */
  readonly scaleToZeroAfter?: Duration;
}

/**
 * A SandboxWarmPool (extensions.agents.x-k8s.io/v1beta1): keeps `replicas` Sandboxes of one
 * template warm so claims are served in milliseconds. Optionally scaled by an HPA through the
 * pool's scale subresource.
 */
export class SandboxWarmPool extends Construct implements ISandboxWarmPool {
  /** A pool that exists in the cluster already. */
  public static fromName(name: string, template?: ISandboxTemplate): ISandboxWarmPool {
    return { name, template };
  }

  /** The underlying ApiObject (escape hatch). */
  public readonly apiObject: ApiObject;
  public readonly name: string;
  public readonly template?: ISandboxTemplate;
  /** The HorizontalPodAutoscaler, if `autoscaling` is set. */
  public readonly autoscaler?: ApiObject;
  private readonly props: SandboxWarmPoolProps;

  public constructor(scope: Construct, id: string, props: SandboxWarmPoolProps) {
    super(scope, id);
    this.props = props;
    this.template = props.template;
    this.apiObject = _customResource(this, KINDS.warmPool, props.metadata, () => this._toKube());
    this.name = this.apiObject.name;
    if (props.autoscaling) {
      const a = props.autoscaling;
      this.autoscaler = new ApiObject(this, 'Autoscaler', {
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: this.name },
        spec: {
          scaleTargetRef: { apiVersion: apiVersionOf(KINDS.warmPool), kind: KINDS.warmPool.kind, name: this.name },
          minReplicas: a.minReplicas,
          maxReplicas: a.maxReplicas,
          metrics: a.metrics.map((m) => m._toKube()),
        },
      });
      this.autoscaler.addDependency(this.apiObject);
    }
    if (props.template instanceof Construct) this.apiObject.addDependency(props.template);
    this.node.addValidation({ validate: () => this.validate() });
  }

  private validate(): string[] {
    const errors = new ErrorList();
    const { replicas, autoscaling, template } = this.props;
    errors.prop('metadata.name', checkDns1123Subdomain(this.name));
    errors.prop('template', checkDns1123Subdomain(template?.name)?.replace(/^/, 'the template name '));
    if (replicas !== undefined && (!Number.isInteger(replicas) || replicas < 0 || replicas > 2147483647)) {
      errors.prop('replicas', `${JSON.stringify(replicas) ?? replicas} is not a valid count; use a whole number of 0 or more, at most 2147483647 (0 allows cold starts only)`);
    }
    if (this.props.updateStrategy !== undefined && !Object.values(WarmPoolUpdateStrategyType).includes(this.props.updateStrategy)) {
      errors.prop('updateStrategy', `${JSON.stringify(this.props.updateStrategy)} is not an update strategy; use one of ${Object.values(WarmPoolUpdateStrategyType).join(', ')}`);
    }
    _checkPositiveSeconds(errors, 'scaleToZeroAfter', this.props.scaleToZeroAfter);
    if (autoscaling) {
      if (replicas !== undefined) {
        // The HPA writes spec.replicas through the scale subresource; a count in the manifest would be
        // reset on every apply or GitOps sync and fight it.
        errors.prop('replicas', `${JSON.stringify(replicas) ?? replicas} is set together with ${propName('autoscaling')}: the HorizontalPodAutoscaler owns the replica count; remove ${propName('replicas')} and bound the pool with ${propName('autoscaling.minReplicas')} and ${propName('autoscaling.maxReplicas')}`);
      }
      const { minReplicas: min, maxReplicas: max } = autoscaling;
      if (!Number.isInteger(min) || min < 1) {
        errors.prop('autoscaling.minReplicas', `${min} must be a whole number of at least 1 (an HPA cannot scale to 0; use ${propName('replicas')} 0 without ${propName('autoscaling')} for a cold-only pool)`);
      }
      if (!Number.isInteger(max) || max < min) errors.prop('autoscaling.maxReplicas', `${max} must be a whole number no smaller than ${propName('autoscaling.minReplicas')} (${min})`);
      if (!Array.isArray(autoscaling.metrics) || autoscaling.metrics.length === 0) {
        errors.prop('autoscaling.metrics', 'give at least one scaling metric (a WarmPoolScalingMetric)');
      } else {
        autoscaling.metrics.forEach((m, i) => {
          if (m instanceof WarmPoolScalingMetric) m._validate(errors, `autoscaling.metrics[${i}]`);
          else errors.prop(`autoscaling.metrics[${i}]`, `must be a WarmPoolScalingMetric; make one with ${staticMethodName('WarmPoolScalingMetric', 'resourceUtilization')}, ${staticMethodName('WarmPoolScalingMetric', 'pods')} or ${staticMethodName('WarmPoolScalingMetric', 'external')}`);
        });
      }
    }
    if (template instanceof Construct) {
      const mine = Chart.of(this).namespace;
      const theirs = Chart.of(template).namespace;
      const templateNs = (template as unknown as { apiObject?: ApiObject }).apiObject?.metadata.namespace ?? theirs;
      const poolNs = this.apiObject.metadata.namespace ?? mine;
      if (templateNs !== poolNs) {
        errors.prop('template', `template "${template.name}" is in namespace "${templateNs ?? '(default)'}" but the pool is in "${poolNs ?? '(default)'}"; a pool can only use a template in its own namespace`);
      }
    }
    _checkSpecSchema(errors, KINDS.warmPool, () => this._toKube());
    return errors.all;
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    const { replicas, updateStrategy, scaleToZeroAfter } = this.props;
    return dropUndefined({
      // Left out unless given: with an HPA, a replica count in Git would fight the autoscaler on every sync.
      replicas,
      sandboxTemplateRef: { name: this.props.template.name },
      updateStrategy: updateStrategy ? { type: updateStrategy } : undefined,
      scaleToZeroAfterSeconds: scaleToZeroAfter?.toSeconds(),
    });
  }
}
