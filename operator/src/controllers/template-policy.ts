/**
 * What the template, warm-pool and claim controllers share about templates' NetworkPolicies: where
 * the router is (the default policy admits it, and no template may give its Pods its labels), and
 * which templates and pools a policy event concerns.
 */
import { parseLabelList } from '#api/controller-flags';
import { DEFAULT_SYSTEM_NAMESPACE, SandboxAnnotations } from '#api/labels';
import { type NetworkPolicy, type SandboxTemplate, type SandboxWarmPool } from '../model';
import { POOLS_BY_TEMPLATE_INDEX, TEMPLATES_BY_POLICY_NAME_INDEX } from './extension-informers';
import type { Flags } from '../runtime/flags';
import { keyOf, type Store } from '../runtime/types';

/** Where the router Pods run and what labels they carry. */
export interface RouterLocation {
  /** Namespace of the sandbox router, which the default policy admits. */
  readonly routerNamespace: string;
  /** Labels of the router Pods; undefined for app=sandbox-router. */
  readonly routerPodLabels?: { readonly [key: string]: string };
  /** `--cluster-cidrs`: the cluster's ranges outside the private ones, left out of the default egress. */
  readonly clusterCidrs: readonly string[];
}

/**
 * The template a NetworkPolicy event concerns: the one its `sandbox-template-ref` annotation
 * names (the operator's policies, also once the template is gone, so the policy can be removed),
 * else the one whose policy name it has (a policy someone else made under that name blocks the
 * template, and wakes it when it goes, so the template can create its own).
 */
export function templateKeysOfPolicy(policy: NetworkPolicy, templates: Pick<Store<SandboxTemplate>, 'byIndex'>): string[] {
  const ns = policy.metadata.namespace ?? '';
  const keys = new Set(templates.byIndex(TEMPLATES_BY_POLICY_NAME_INDEX, `${ns}/${policy.metadata.name}`).map(keyOf));
  const named = policy.metadata.annotations?.[SandboxAnnotations.SANDBOX_TEMPLATE_REF];
  if (named) keys.add(`${ns}/${named}`);
  return [...keys];
}

/**
 * Where the router Pods run, for the default policy: `--router-namespace` (the install bundle sets
 * it to where it deploys the router), else the operator's own namespace; `--router-pod-labels`,
 * else app=sandbox-router.
 */
export function routerLocation(flags: Flags, ownNamespace: string | undefined): RouterLocation {
  const labels = parseLabelList(flags.string('router-pod-labels'));
  // The flag table validated the value at startup; an unparsable one cannot get here.
  const routerPodLabels = typeof labels === 'string' || Object.keys(labels).length === 0 ? undefined : labels;
  const clusterCidrs = flags.string('cluster-cidrs').split(',').map((c) => c.trim()).filter(Boolean);
  return { routerNamespace: flags.string('router-namespace') || ownNamespace || DEFAULT_SYSTEM_NAMESPACE, routerPodLabels, clusterCidrs };
}

/** The pools a NetworkPolicy event concerns: those of the template(s) the policy belongs to or blocks. */
export function poolKeysOfPolicy(
  policy: NetworkPolicy,
  templates: Pick<Store<SandboxTemplate>, 'byIndex'>,
  pools: Pick<Store<SandboxWarmPool>, 'byIndex'>,
): string[] {
  return templateKeysOfPolicy(policy, templates).flatMap((key) => pools.byIndex(POOLS_BY_TEMPLATE_INDEX, key).map(keyOf));
}
