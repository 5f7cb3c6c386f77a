/** API group of the core `Sandbox` kind. */
export const CORE_GROUP = 'agents.x-k8s.io';
/** API group of `SandboxTemplate`, `SandboxWarmPool` and `SandboxClaim`. */
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
/** The only version we serve and store. */
export const API_VERSION_NAME = 'v1beta1';

/** Names of one kind as the CRD declares them. */
export interface KindNames {
  readonly group: string;
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: string[];
}

function kindNames(group: string, kind: string, plural: string, shortName?: string): KindNames {
  const singular = kind.toLowerCase();
  return { group, kind, listKind: `${kind}List`, plural, singular, shortNames: [shortName ?? singular] };
}

/** The four kinds of the system, with the names upstream's CRDs give them. */
export const KINDS = {
  sandbox: kindNames(CORE_GROUP, 'Sandbox', 'sandboxes'),
  template: kindNames(EXTENSIONS_GROUP, 'SandboxTemplate', 'sandboxtemplates'),
  warmPool: kindNames(EXTENSIONS_GROUP, 'SandboxWarmPool', 'sandboxwarmpools', 'swp'),
  claim: kindNames(EXTENSIONS_GROUP, 'SandboxClaim', 'sandboxclaims'),
} as const;

/** `group/version` string for an apiVersion field. */
export function apiVersionOf(names: KindNames): string {
  return `${names.group}/${API_VERSION_NAME}`;
}

/** Name of the CustomResourceDefinition object for a kind (`<plural>.<group>`). */
export function crdNameOf(names: KindNames): string {
  return `${names.plural}.${names.group}`;
}
