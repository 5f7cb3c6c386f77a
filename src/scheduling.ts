import { propName } from './api/spelling';
import { ErrorList, checkLabelValue, checkQualifiedName } from './api/validation';
import { dropUndefined } from './container';

/** Operators of a node selector requirement. */
export enum NodeSelectorOperator {
  /** The label's value is one of `values`. */
  IN = 'In',
  /** The label's value is none of `values` (or the label is absent). */
  NOT_IN = 'NotIn',
  /** The label is present; no `values`. */
  EXISTS = 'Exists',
  /** The label is absent; no `values`. */
  DOES_NOT_EXIST = 'DoesNotExist',
  /** The label's value, an integer, is greater than the one value. */
  GT = 'Gt',
  /** The label's value, an integer, is less than the one value. */
  LT = 'Lt',
}

/** One condition on a node label. */
export interface NodeSelectorRequirement {
  /** Node label key. */
  readonly key: string;
  readonly operator: NodeSelectorOperator;
  /** Values for In and NotIn (at least one), Gt and Lt (exactly one integer). @default - none */
  readonly values?: string[];
}

/** Node conditions that must all hold. */
export interface NodeSelectorTerm {
  readonly matchExpressions: NodeSelectorRequirement[];
}

/** A preferred node term and its weight. */
export interface PreferredNodeSelectorTerm extends NodeSelectorTerm {
  /** 1-100; higher wins. */
  readonly weight: number;
}

/** Pods that a Pod should (or should not) run near, within a topology domain. */
export interface PodAffinityTerm {
  /** Labels of those Pods. */
  readonly matchLabels: { [key: string]: string };
  /** Node label whose value defines the domain, such as `kubernetes.io/hostname` or `topology.kubernetes.io/zone`. */
  readonly topologyKey: string;
  /** Namespaces of those Pods. @default - the Pod's own namespace */
  readonly namespaces?: string[];
  /** 1-100: makes the term a preference of that weight rather than a requirement. @default - required */
  readonly weight?: number;
}

/** Where Pods may land, as Kubernetes affinity. Every part is optional. */
export interface SchedulingAffinity {
  /** Nodes must match one of these terms. @default - any node */
  readonly requiredNodeTerms?: NodeSelectorTerm[];
  /** Nodes matching these terms are preferred, by weight. @default - no preference */
  readonly preferredNodeTerms?: PreferredNodeSelectorTerm[];
  /** Run in the same domain as these Pods. @default - none */
  readonly podAffinity?: PodAffinityTerm[];
  /** Run away from these Pods, for example one per node. @default - none */
  readonly podAntiAffinity?: PodAffinityTerm[];
}

/** What the scheduler does when a spread constraint cannot be met. */
export enum WhenUnsatisfiable {
  /** Leave the Pod pending. */
  DO_NOT_SCHEDULE = 'DoNotSchedule',
  /** Schedule it anyway, preferring less skew. */
  SCHEDULE_ANYWAY = 'ScheduleAnyway',
}

/** Spread Pods evenly across a topology (zones, nodes). */
export interface TopologySpreadConstraint {
  /** Node label whose value defines the domain, such as `topology.kubernetes.io/zone`. */
  readonly topologyKey: string;
  /** Most difference in matching Pods between two domains, ≥ 1. @default 1 */
  readonly maxSkew?: number;
  /** @default WhenUnsatisfiable.DO_NOT_SCHEDULE */
  readonly whenUnsatisfiable?: WhenUnsatisfiable;
  /** Labels of the Pods counted. @default - the Pod labels (`podLabels`); required when there are none */
  readonly matchLabels?: { [key: string]: string };
  /** Fewest eligible domains, ≥ 1; only with DoNotSchedule. @default - none */
  readonly minDomains?: number;
}

/** Taint effects a toleration can name. */
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A toleration as the Pod and install props give it. */
type TolerationLike = { key: string; value?: string; effect?: string; tolerationSeconds?: number };

/** @internal Check tolerations given as `{ key, value?, effect?, tolerationSeconds? }`. */
export function _checkTolerations(errors: ErrorList, field: string, tolerations: ReadonlyArray<TolerationLike> | undefined): void {
  // Callers in other languages can pass anything: a non-list or a non-object entry is reported, not crashed on.
  if (tolerations !== undefined && !Array.isArray(tolerations)) {
    errors.prop(field, 'must be a list of tolerations, each with at least a key');
    return;
  }
  (tolerations ?? []).forEach((t, i) => {
    if (t === null || typeof t !== 'object') {
      errors.prop(`${field}[${i}]`, 'must be a toleration (an object with at least a key)');
      return;
    }
    errors.prop(`${field}[${i}].key`, checkQualifiedName(t.key));
    if (t.value !== undefined) errors.prop(`${field}[${i}].value`, checkLabelValue(t.value));
    if (t.effect !== undefined && !EFFECTS.includes(t.effect)) {
      errors.prop(`${field}[${i}].effect`, `${JSON.stringify(t.effect)} must be one of ${EFFECTS.join(', ')}, or unset for all effects`);
    }
    if (t.tolerationSeconds !== undefined) {
      if (t.effect !== 'NoExecute') errors.prop(`${field}[${i}].tolerationSeconds`, `only applies to the NoExecute effect; set ${propName('effect')} to "NoExecute" or drop it`);
      if (!Number.isInteger(t.tolerationSeconds) || t.tolerationSeconds < 0) {
        errors.prop(`${field}[${i}].tolerationSeconds`, `${t.tolerationSeconds} must be a whole number of seconds, at least 0`);
      }
    }
  });
}

/** @internal Tolerations as core/v1 JSON: no value means operator Exists. */
export function _tolerationsToKube(tolerations: ReadonlyArray<TolerationLike> | undefined) {
  return tolerations?.map((t) => dropUndefined({
    key: t.key, operator: t.value === undefined ? 'Exists' : 'Equal', value: t.value, effect: t.effect, tolerationSeconds: t.tolerationSeconds,
  }));
}

/** @internal Check a node selector map. */
export function _checkNodeSelector(errors: ErrorList, field: string, selector: { [key: string]: string } | undefined): void {
  if (selector === null || typeof selector !== 'object' || Array.isArray(selector)) return; // reported as a map by the caller's checkStringMap
  for (const [key, value] of Object.entries(selector)) {
    errors.prop(`${field}["${key}"]`, checkQualifiedName(key) ?? checkLabelValue(value));
  }
}

function checkWeight(errors: ErrorList, field: string, weight: number): void {
  if (!Number.isInteger(weight) || weight < 1 || weight > 100) errors.prop(field, `${weight} must be a whole number from 1 to 100`);
}

function checkTerm(errors: ErrorList, field: string, term: NodeSelectorTerm): void {
  if (term.matchExpressions.length === 0) errors.prop(`${field}.matchExpressions`, 'must not be empty: an empty term matches no node');
  term.matchExpressions.forEach((r, i) => {
    const f = `${field}.matchExpressions[${i}]`;
    errors.prop(`${f}.key`, checkQualifiedName(r.key));
    const values = r.values ?? [];
    switch (r.operator) {
      case NodeSelectorOperator.IN:
      case NodeSelectorOperator.NOT_IN:
        if (values.length === 0) errors.prop(`${f}.values`, `${r.operator} needs at least one value`);
        break;
      case NodeSelectorOperator.EXISTS:
      case NodeSelectorOperator.DOES_NOT_EXIST:
        if (values.length > 0) errors.prop(`${f}.values`, `${r.operator} takes no values; drop them`);
        break;
      default:
        if (values.length !== 1 || !/^-?\d+$/.test(values[0])) errors.prop(`${f}.values`, `${r.operator} needs exactly one integer value, such as ["4"]`);
    }
  });
}

function checkPodTerm(errors: ErrorList, field: string, term: PodAffinityTerm): void {
  errors.prop(`${field}.topologyKey`, checkQualifiedName(term.topologyKey));
  if (Object.keys(term.matchLabels).length === 0) errors.prop(`${field}.matchLabels`, 'must not be empty: the term would match every Pod');
  for (const [k, v] of Object.entries(term.matchLabels)) {
    errors.prop(`${field}.matchLabels["${k}"]`, checkQualifiedName(k));
    errors.prop(`${field}.matchLabels["${k}"]`, checkLabelValue(v));
  }
  if (term.weight !== undefined) checkWeight(errors, `${field}.weight`, term.weight);
}

/** @internal Check an affinity. */
export function _checkAffinity(errors: ErrorList, field: string, a: SchedulingAffinity | undefined): void {
  if (!a) return;
  (a.requiredNodeTerms ?? []).forEach((t, i) => checkTerm(errors, `${field}.requiredNodeTerms[${i}]`, t));
  (a.preferredNodeTerms ?? []).forEach((t, i) => {
    checkTerm(errors, `${field}.preferredNodeTerms[${i}]`, t);
    checkWeight(errors, `${field}.preferredNodeTerms[${i}].weight`, t.weight);
  });
  (a.podAffinity ?? []).forEach((t, i) => checkPodTerm(errors, `${field}.podAffinity[${i}]`, t));
  (a.podAntiAffinity ?? []).forEach((t, i) => checkPodTerm(errors, `${field}.podAntiAffinity[${i}]`, t));
}

function nodeTermToKube(t: NodeSelectorTerm) {
  return { matchExpressions: t.matchExpressions.map((r) => dropUndefined({ key: r.key, operator: r.operator, values: r.values })) };
}

function podTermsToKube(terms: PodAffinityTerm[] | undefined) {
  if (!terms?.length) return undefined;
  const term = (t: PodAffinityTerm) => dropUndefined({
    labelSelector: { matchLabels: { ...t.matchLabels } }, topologyKey: t.topologyKey, namespaces: t.namespaces,
  });
  const required = terms.filter((t) => t.weight === undefined).map(term);
  const preferred = terms.filter((t) => t.weight !== undefined).map((t) => ({ weight: t.weight, podAffinityTerm: term(t) }));
  return dropUndefined({
    requiredDuringSchedulingIgnoredDuringExecution: required.length ? required : undefined,
    preferredDuringSchedulingIgnoredDuringExecution: preferred.length ? preferred : undefined,
  });
}

/** @internal An affinity as core/v1 Affinity JSON. */
export function _affinityToKube(a: SchedulingAffinity | undefined): { [key: string]: unknown } | undefined {
  if (!a) return undefined;
  const nodeAffinity = dropUndefined({
    requiredDuringSchedulingIgnoredDuringExecution: a.requiredNodeTerms?.length
      ? { nodeSelectorTerms: a.requiredNodeTerms.map(nodeTermToKube) } : undefined,
    preferredDuringSchedulingIgnoredDuringExecution: a.preferredNodeTerms?.length
      ? a.preferredNodeTerms.map((t) => ({ weight: t.weight, preference: nodeTermToKube(t) })) : undefined,
  });
  const result = dropUndefined({
    nodeAffinity: Object.keys(nodeAffinity).length ? nodeAffinity : undefined,
    podAffinity: podTermsToKube(a.podAffinity),
    podAntiAffinity: podTermsToKube(a.podAntiAffinity),
  });
  return Object.keys(result).length ? result : undefined;
}

/** @internal Check spread constraints; `podLabels` are the default selector. */
export function _checkSpread(errors: ErrorList, field: string, constraints: TopologySpreadConstraint[] | undefined,
  podLabels: { [key: string]: string } | undefined): void {
  (constraints ?? []).forEach((c, i) => {
    const f = `${field}[${i}]`;
    errors.prop(`${f}.topologyKey`, checkQualifiedName(c.topologyKey));
    if (c.maxSkew !== undefined && (!Number.isInteger(c.maxSkew) || c.maxSkew < 1)) errors.prop(`${f}.maxSkew`, `${c.maxSkew} must be a whole number of at least 1`);
    if (c.minDomains !== undefined) {
      if (!Number.isInteger(c.minDomains) || c.minDomains < 1) errors.prop(`${f}.minDomains`, `${c.minDomains} must be a whole number of at least 1`);
      if (c.whenUnsatisfiable === WhenUnsatisfiable.SCHEDULE_ANYWAY) errors.prop(`${f}.minDomains`, `only applies with DoNotSchedule; drop it or change ${propName('whenUnsatisfiable')}`);
    }
    const labels = c.matchLabels ?? podLabels ?? {};
    if (Object.keys(labels).length === 0) errors.prop(`${f}.matchLabels`, `is required when the Pod has no ${propName('podLabels')}: give the labels of the Pods to spread, or set ${propName('podLabels')}`);
  });
}

/** @internal Spread constraints as core/v1 JSON. */
export function _spreadToKube(constraints: TopologySpreadConstraint[] | undefined, podLabels: { [key: string]: string } | undefined) {
  if (!constraints?.length) return undefined;
  return constraints.map((c) => dropUndefined({
    maxSkew: c.maxSkew ?? 1,
    topologyKey: c.topologyKey,
    whenUnsatisfiable: c.whenUnsatisfiable ?? WhenUnsatisfiable.DO_NOT_SCHEDULE,
    labelSelector: { matchLabels: { ...(c.matchLabels ?? podLabels) } },
    minDomains: c.minDomains,
  }));
}
