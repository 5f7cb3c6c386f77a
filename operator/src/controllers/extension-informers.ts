/**
 * The shared caches the three extension controllers (template, warm pool, claim) read, with every
 * index any of them needs. Each factory asks for all of them: the informer factory hands back the
 * one shared informer per type and merges the indexes, so the order the factories run in does not
 * matter and nothing is listed or watched twice.
 *
 * Sandboxes are the Sandbox controller's informer (unfiltered, full objects); the indexes are added
 * to it. NetworkPolicies get their own unfiltered informer: no other controller reads them.
 */
import { SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { networkPolicyNameFor } from '#api/network-policy-defaults';
import {
  CONTROLLER_UID_INDEX, controllerRefOf, controllerUidIndex, type NetworkPolicy, RESOURCES, SANDBOX_SPEC_SHARING, type Sandbox, type SandboxClaim,
  type SandboxTemplate, type SandboxWarmPool,
} from '../model';
import type { ControllerContext } from '../runtime/context';
import type { SharedInformer } from '../runtime/informer';

/** Sandboxes by `<namespace>/<warm-pool-sandbox label>`: a pool's members, and a claim's candidates. */
export const POOL_LABEL_INDEX = 'namespace-warm-pool-label';
/**
 * Sandboxes by `<namespace>/<sandbox-template-ref-hash label>`: the Sandboxes built from a
 * template, which keep its NetworkPolicy alive after the template is deleted.
 */
export const TEMPLATE_HASH_INDEX = 'namespace-template-ref-hash';
/** Sandboxes by their own UID: where a Sandbox a claim is adopting stands in the cache. */
export const UID_INDEX = 'uid';
/** Pools by `<namespace>/<sandboxTemplateRef.name>`: the pools a template event concerns. */
export const POOLS_BY_TEMPLATE_INDEX = 'namespace-template-ref';
/** Pools by `<namespace>/<NameHash(name)>`: the pool an orphan's membership label names. */
export const POOLS_BY_HASH_INDEX = 'namespace-name-hash';
/** Templates by `<namespace>/<networkPolicyNameFor(name)>`: the template a policy of that name blocks or belongs to. */
export const TEMPLATES_BY_POLICY_NAME_INDEX = 'namespace-policy-name';
/** NetworkPolicies by `<namespace>/<sandbox-template-ref-hash label>`: the operator's policy for a template hash. */
export const POLICIES_BY_TEMPLATE_HASH_INDEX = 'namespace-template-ref-hash';
/** Claims by `<namespace>/<warmPoolRef.name>`: the claims waiting on a pool. */
export const CLAIMS_BY_POOL_INDEX = 'namespace-warm-pool-ref';

export interface ExtensionInformers {
  readonly sandboxes: SharedInformer<Sandbox>;
  readonly templates: SharedInformer<SandboxTemplate>;
  readonly pools: SharedInformer<SandboxWarmPool>;
  readonly claims: SharedInformer<SandboxClaim>;
  readonly networkPolicies: SharedInformer<NetworkPolicy>;
}

const nsKey = (obj: { metadata: { namespace?: string } }, value: string) => `${obj.metadata.namespace ?? ''}/${value}`;

export function extensionInformers(ctx: Pick<ControllerContext, 'informers'>): ExtensionInformers {
  const { informers } = ctx;
  return {
    sandboxes: informers.forResource<Sandbox>(RESOURCES.sandboxes, {
      transform: SANDBOX_SPEC_SHARING.transform,
      indexes: {
        [POOL_LABEL_INDEX]: (sb) => {
          const label = sb.metadata.labels?.[SandboxLabels.WARM_POOL_SANDBOX];
          return label ? [nsKey(sb, label)] : [];
        },
        [TEMPLATE_HASH_INDEX]: (sb) => {
          const label = sb.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];
          return label ? [nsKey(sb, label)] : [];
        },
        [CONTROLLER_UID_INDEX]: controllerUidIndex,
        [UID_INDEX]: (sb) => (sb.metadata.uid ? [sb.metadata.uid] : []),
      },
    }),
    templates: informers.forResource<SandboxTemplate>(RESOURCES.templates, {
      indexes: { [TEMPLATES_BY_POLICY_NAME_INDEX]: (t) => [nsKey(t, networkPolicyNameFor(t.metadata.name))] },
    }),
    pools: informers.forResource<SandboxWarmPool>(RESOURCES.warmPools, {
      indexes: {
        [POOLS_BY_TEMPLATE_INDEX]: (p) => [nsKey(p, p.spec.sandboxTemplateRef?.name ?? '')],
        [POOLS_BY_HASH_INDEX]: (p) => [nsKey(p, NameHash.of(p.metadata.name))],
      },
    }),
    claims: informers.forResource<SandboxClaim>(RESOURCES.claims, {
      indexes: { [CLAIMS_BY_POOL_INDEX]: (c) => [nsKey(c, c.spec.warmPoolRef?.name ?? '')] },
    }),
    networkPolicies: informers.forResource<NetworkPolicy>(RESOURCES.networkPolicies, {
      indexes: {
        [POLICIES_BY_TEMPLATE_HASH_INDEX]: (p) => {
          const label = p.metadata.labels?.[SandboxLabels.SANDBOX_TEMPLATE_REF_HASH];
          return label ? [nsKey(p, label)] : [];
        },
      },
    }),
  };
}
