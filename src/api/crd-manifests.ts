import { API_VERSION_NAME, KINDS, KindNames, crdNameOf } from './groups';
import { SANDBOX_CLAIM_SCHEMA, SANDBOX_SCHEMA, SANDBOX_TEMPLATE_SCHEMA, SANDBOX_WARM_POOL_SCHEMA } from './schema';

/** A printer column of `kubectl get`. */
interface PrinterColumn {
  readonly name: string;
  readonly type: string;
  readonly jsonPath: string;
}

const readyColumn: PrinterColumn = { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" };
const reasonColumn: PrinterColumn = { name: 'Reason', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].reason" };
const ageColumn: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** Everything that differs between the four CRDs. */
interface CrdShape {
  readonly names: KindNames;
  readonly schema: object;
  readonly columns: PrinterColumn[];
  readonly subresources: object | undefined;
}

const CRD_SHAPES: readonly CrdShape[] = [
  { names: KINDS.sandbox, schema: SANDBOX_SCHEMA, columns: [readyColumn, reasonColumn, ageColumn], subresources: { status: {} } },
  { names: KINDS.template, schema: SANDBOX_TEMPLATE_SCHEMA, columns: [], subresources: { status: {} } },
  {
    names: KINDS.warmPool,
    schema: SANDBOX_WARM_POOL_SCHEMA,
    columns: [
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
      { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas' },
      ageColumn,
    ],
    subresources: {
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    },
  },
  {
    names: KINDS.claim,
    schema: SANDBOX_CLAIM_SCHEMA,
    columns: [readyColumn, { name: 'Sandbox', type: 'string', jsonPath: '.status.sandbox.name' }, reasonColumn, ageColumn],
    subresources: { status: {} },
  },
];

/** The label every object of the install carries, so `kubectl get -l` finds them. */
export const PART_OF_LABEL = { 'app.kubernetes.io/part-of': 'agent-sandbox' } as const;

/**
 * v1alpha1, listed but neither served nor stored. Upstream's CRDs served it (deprecated) through a
 * conversion webhook; a cluster that ever stored it keeps `v1alpha1` in the CRD's
 * `status.storedVersions`, and the API server refuses a CRD update that drops a stored version from
 * `spec.versions`. Listing it lets such clusters apply these CRDs in place. Nothing is served at
 * v1alpha1, so no conversion webhook is needed; its schema keeps whatever is stored.
 */
const LEGACY_VERSION = {
  name: 'v1alpha1',
  served: false,
  storage: false,
  schema: { openAPIV3Schema: { 'type': 'object', 'x-kubernetes-preserve-unknown-fields': true } },
} as const;

/**
 * A CustomResourceDefinition (apiextensions.k8s.io/v1) as a plain manifest: v1beta1 served and
 * stored, v1alpha1 listed only (see LEGACY_VERSION). `conversion: None` is written out so applying
 * over upstream's CRDs replaces their webhook conversion instead of keeping a webhook that no longer
 * exists.
 */
export function crdManifest(shape: CrdShape): { [key: string]: unknown } {
  const { names } = shape;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdNameOf(names), labels: { ...PART_OF_LABEL } },
    spec: {
      group: names.group,
      names: {
        kind: names.kind,
        listKind: names.listKind,
        plural: names.plural,
        singular: names.singular,
        shortNames: names.shortNames,
      },
      scope: 'Namespaced',
      versions: [
        {
          name: API_VERSION_NAME,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: shape.schema },
          ...(shape.subresources ? { subresources: shape.subresources } : {}),
          ...(shape.columns.length > 0 ? { additionalPrinterColumns: shape.columns } : {}),
        },
        LEGACY_VERSION,
      ],
      conversion: { strategy: 'None' },
    },
  };
}

/** The core CRD (Sandbox). */
export function coreCrdManifests(): { [key: string]: unknown }[] {
  return CRD_SHAPES.filter((s) => s.names === KINDS.sandbox).map(crdManifest);
}

/** The extension CRDs (SandboxTemplate, SandboxWarmPool, SandboxClaim). */
export function extensionCrdManifests(): { [key: string]: unknown }[] {
  return CRD_SHAPES.filter((s) => s.names !== KINDS.sandbox).map(crdManifest);
}
