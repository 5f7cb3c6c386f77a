import {
  ClaimShutdownPolicy,
  EnvVarsInjectionPolicy,
  NetworkPolicyManagement,
  OperatingMode,
  SandboxShutdownPolicy,
  VolumeClaimTemplatesPolicy,
  WarmPoolUpdateStrategyType,
  enumValues,
} from './enums';
import {
  JSONSchemaProps,
  NETWORK_POLICY_EGRESS_RULE_SCHEMA,
  NETWORK_POLICY_INGRESS_RULE_SCHEMA,
  PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA,
  POD_SPEC_SCHEMA,
} from './generated/k8s-schemas';

/**
 * The OpenAPI v3 schemas of the four kinds, field for field as upstream's v1beta1 CRDs
 * (kubernetes-sigs/agent-sandbox api/v1beta1 and extensions/api/v1beta1), built from the Kubernetes
 * OpenAPI spec for the embedded core types.
 * Defaults and enums come from ./enums so the construct props, the CRDs and the operator
 * agree by construction.
 */

type Schema = JSONSchemaProps;

const string = (description?: string): Schema => ({ type: 'string', ...(description ? { description } : {}) });
const stringMap = (description: string): Schema => ({ type: 'object', description, additionalProperties: { type: 'string' } });
const int32 = (description: string, extra: Schema = {}): Schema => ({ type: 'integer', format: 'int32', description, ...extra });
const dateTime = (description: string): Schema => ({ type: 'string', format: 'date-time', description });
const enumOf = (e: { [key: string]: string }, defaultValue: string | undefined, description: string): Schema => ({
  type: 'string',
  description,
  enum: enumValues(e),
  ...(defaultValue !== undefined ? { default: defaultValue } : {}),
});

const podMetadata = (description: string): Schema => ({
  type: 'object',
  description,
  properties: {
    labels: stringMap('Labels for the Pod. Keys under agents.x-k8s.io/ and extensions.agents.x-k8s.io/ are reserved and dropped.'),
    annotations: stringMap('Annotations for the Pod. Reserved keys are dropped.'),
  },
});

const podTemplate: Schema = {
  type: 'object',
  description: 'Blueprint of the single Pod behind a Sandbox.',
  required: ['spec'],
  properties: {
    metadata: podMetadata('Labels and annotations for the Pod.'),
    spec: { ...POD_SPEC_SCHEMA, description: 'The Pod spec (core/v1 PodSpec).' },
  },
};

const volumeClaimTemplate: Schema = {
  type: 'object',
  required: ['spec'],
  properties: {
    metadata: {
      type: 'object',
      description: 'The name gives the volume name and the PVC name <name>-<sandbox>.',
      properties: {
        name: string('Volume name; the PVC is named <name>-<sandbox name>.'),
        labels: stringMap('Labels for the PVC.'),
        annotations: stringMap('Annotations for the PVC.'),
      },
    },
    spec: { ...PERSISTENT_VOLUME_CLAIM_SPEC_SCHEMA, description: 'The PVC spec (core/v1 PersistentVolumeClaimSpec).' },
  },
};

const volumeClaimTemplates = (description: string): Schema => ({
  'type': 'array',
  description,
  'items': volumeClaimTemplate,
  'x-kubernetes-list-type': 'atomic',
});

/** Fields shared by Sandbox and SandboxTemplate specs (upstream's inlined SandboxBlueprint). */
const blueprint = {
  podTemplate,
  volumeClaimTemplates: volumeClaimTemplates('One PVC per entry, mounted as a volume of the same name.'),
  service: {
    type: 'boolean',
    description: 'true: keep a headless Service named after the Sandbox. false: delete it. Unset: keep an existing one, create none.',
  },
};

/**
 * Ours (upstream has no idle lifecycle; kubernetes-sigs/agent-sandbox#968): suspend a Sandbox
 * nobody uses, and resume it on the next request through the router. Upstream clients never see
 * or send it; on upstream's CRDs the API server prunes it, and nothing else changes.
 */
const idlePolicy = (description: string): Schema => ({
  type: 'object',
  description,
  required: ['suspendAfterSeconds'],
  properties: {
    suspendAfterSeconds: int32(
      'Suspend the Sandbox after this many seconds with no request through the router, no open connection or stream, and no process its runtime runs.',
      { minimum: 1 },
    ),
    resumeOnRequest: {
      type: 'boolean',
      default: true,
      description: 'true: a request through the router for the suspended Sandbox resumes it and is held until it is Ready. false: such a request gets 409 SandboxSuspended.',
    },
  },
});

/** metav1.Condition exactly as controller-gen renders it. */
const conditions: Schema = {
  type: 'array',
  description: 'Current state, as standard conditions keyed by type.',
  items: {
    type: 'object',
    required: ['lastTransitionTime', 'message', 'reason', 'status', 'type'],
    properties: {
      lastTransitionTime: dateTime('When the condition last changed status.'),
      message: { type: 'string', maxLength: 32768, description: 'Human-readable detail.' },
      observedGeneration: { type: 'integer', format: 'int64', minimum: 0, description: 'metadata.generation the condition was set for.' },
      reason: {
        type: 'string',
        maxLength: 1024,
        minLength: 1,
        pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
        description: 'Machine-readable CamelCase reason.',
      },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'], description: 'True, False or Unknown.' },
      type: {
        type: 'string',
        maxLength: 316,
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
        description: 'Condition type, such as Ready.',
      },
    },
  },
};

const objectRoot = (spec: Schema, status: Schema | undefined, description: string, rules: Schema[] = []): Schema => ({
  type: 'object',
  description,
  required: ['spec'],
  properties: {
    apiVersion: string('Versioned schema of this representation of an object.'),
    kind: string('REST resource this object represents.'),
    metadata: { type: 'object' },
    spec,
    ...(status ? { status } : {}),
  },
  ...(rules.length > 0 ? { 'x-kubernetes-validations': rules } : {}),
});

/**
 * Our one addition to upstream's validation: a Sandbox that asks for a Service must have a name
 * that can be a Service name. Upstream accepts such a Sandbox and then fails forever with
 * ReconcilerError (upstream issue #342); rejecting it at admission loses nothing that worked.
 */
export const SANDBOX_SERVICE_NAME_RULE = {
  rule: "!has(self.spec.service) || !self.spec.service || (size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$'))",
  message: 'metadata.name must be a DNS-1035 label (at most 63 lowercase letters, digits or "-", starting with a letter) when spec.service is true, because the Service takes the Sandbox name; shorten the name or set spec.service to false',
  // The rule sits on the root (it reads metadata.name), so without these the API server reports
  // the error at "<nil>" with reason FieldValueInvalid lost; name the field that asked for the Service.
  fieldPath: '.spec.service',
  reason: 'FieldValueInvalid',
};

/** Upstream's transition rule: volume claim templates cannot change after creation. */
export const SANDBOX_VCT_IMMUTABLE_RULE = {
  rule: 'has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)',
  message: 'volumeClaimTemplates is immutable',
};

export const SANDBOX_SCHEMA: Schema = objectRoot(
  {
    'type': 'object',
    'description': 'Desired state of the Sandbox.',
    'required': ['podTemplate'],
    'properties': {
      ...blueprint,
      shutdownTime: dateTime('When the Sandbox expires (RFC 3339). Unset: never.'),
      shutdownPolicy: enumOf(SandboxShutdownPolicy, SandboxShutdownPolicy.RETAIN, 'What happens at shutdownTime: Delete the Sandbox, or Retain it expired.'),
      operatingMode: enumOf(OperatingMode, OperatingMode.RUNNING, 'Running keeps the Pod; Suspended deletes it and keeps PVCs and Service.'),
      idlePolicy: idlePolicy('Suspend after a stretch without use, and resume on the next request (ours). Unset: never suspended for idleness. An unclaimed warm-pool member is never idle-suspended.'),
    },
    'x-kubernetes-validations': [SANDBOX_VCT_IMMUTABLE_RULE],
  },
  {
    type: 'object',
    description: 'Observed state of the Sandbox.',
    properties: {
      conditions,
      service: string('Name of the headless Service, while one is in use.'),
      serviceFQDN: string('<service>.<namespace>.svc.<cluster domain>.'),
      selector: string('Label selector of the Sandbox Pod (agents.x-k8s.io/sandbox-name-hash=<hash>).'),
      podIPs: { type: 'array', description: 'IPs of the Sandbox Pod.', items: { type: 'string' } },
      nodeName: string('Node the Sandbox Pod runs on.'),
    },
  },
  'Sandbox: one isolated, stateful Pod with a stable identity, storage, suspend/resume and scheduled shutdown.',
  [SANDBOX_SERVICE_NAME_RULE],
);

export const SANDBOX_TEMPLATE_SCHEMA: Schema = objectRoot(
  {
    type: 'object',
    description: 'A reusable Sandbox blueprint with its network and injection policies.',
    required: ['podTemplate'],
    properties: {
      ...blueprint,
      volumeClaimTemplates: volumeClaimTemplates('Copied into every Sandbox made from this template.'),
      networkPolicy: {
        type: 'object',
        description: 'Custom rules for the template NetworkPolicy (Managed only). Unset: the secure default.',
        properties: {
          ingress: { type: 'array', description: 'Allowed ingress; empty denies all.', items: NETWORK_POLICY_INGRESS_RULE_SCHEMA },
          egress: { type: 'array', description: 'Allowed egress; empty denies all.', items: NETWORK_POLICY_EGRESS_RULE_SCHEMA },
        },
      },
      networkPolicyManagement: enumOf(NetworkPolicyManagement, NetworkPolicyManagement.MANAGED, 'Managed: the operator owns <template>-network-policy. Unmanaged: it does not.'),
      envVarsInjectionPolicy: enumOf(EnvVarsInjectionPolicy, EnvVarsInjectionPolicy.DISALLOWED, 'Whether claims may add (Allowed) or also replace (Overrides) env vars.'),
      volumeClaimTemplatesPolicy: enumOf(VolumeClaimTemplatesPolicy, VolumeClaimTemplatesPolicy.DISALLOWED, 'Whether claims may add (Allowed) or also replace (Overrides) volume claim templates.'),
      idlePolicy: idlePolicy('The idle policy of every claimed Sandbox made from this template, unless its claim sets one, copied into the Sandbox when it is claimed (later edits do not reach it) (ours). Unset: none.'),
    },
  },
  {
    type: 'object',
    description: 'Observed state of the template (ours; upstream templates have no status).',
    properties: { conditions },
  },
  'SandboxTemplate: the blueprint that warm pools and claims build Sandboxes from.',
);

export const SANDBOX_WARM_POOL_SCHEMA: Schema = objectRoot(
  {
    type: 'object',
    description: 'A pool of pre-warmed, unclaimed Sandboxes.',
    required: ['sandboxTemplateRef'],
    properties: {
      replicas: int32('Number of unclaimed warm Sandboxes to keep. 0 allows cold starts only.', { default: 1, minimum: 0 }),
      sandboxTemplateRef: {
        type: 'object',
        description: 'The SandboxTemplate in the same namespace.',
        required: ['name'],
        properties: { name: string('Name of the SandboxTemplate.') },
      },
      updateStrategy: {
        type: 'object',
        description: 'How stale unclaimed Sandboxes are replaced after a template change.',
        properties: {
          type: enumOf(WarmPoolUpdateStrategyType, WarmPoolUpdateStrategyType.ON_REPLENISH, 'Recreate replaces stale members at once; OnReplenish only on refill.'),
        },
      },
      scaleToZeroAfterSeconds: int32(
        'After this many seconds without a claim, keep no warm members (replicas stays as set); the next claim starts cold and brings the pool back to replicas (ours). Unset: never.',
        { minimum: 1 },
      ),
    },
  },
  {
    type: 'object',
    description: 'Observed state of the pool.',
    properties: {
      replicas: int32('Active pool members.'),
      readyReplicas: int32('Active pool members that are Ready.'),
      selector: string('Label selector of the members (agents.x-k8s.io/warm-pool-sandbox=<hash>).'),
      observedGeneration: { type: 'integer', format: 'int64', minimum: 0, description: 'metadata.generation at the last reconcile.' },
      lastClaimTime: dateTime('When a claim last drew on the pool, as far as scaleToZeroAfterSeconds needs to know (ours).'),
      conditions,
    },
  },
  'SandboxWarmPool: keeps a number of Sandboxes of one template warm for fast claims.',
);

export const SANDBOX_CLAIM_SCHEMA: Schema = objectRoot(
  {
    type: 'object',
    description: 'A request for a Sandbox from a warm pool.',
    required: ['warmPoolRef'],
    properties: {
      warmPoolRef: {
        type: 'object',
        description: 'The SandboxWarmPool in the same namespace to draw from.',
        required: ['name'],
        properties: { name: string('Name of the SandboxWarmPool.') },
      },
      lifecycle: {
        type: 'object',
        description: 'When the claim expires and what happens then. Unset: never.',
        properties: {
          shutdownTime: dateTime('When the claim expires (RFC 3339).'),
          ttlSecondsAfterFinished: int32('Expire this many seconds after the Sandbox finished.', { minimum: 0 }),
          shutdownPolicy: enumOf(ClaimShutdownPolicy, ClaimShutdownPolicy.RETAIN, 'Delete or DeleteForeground the claim, or Retain it and delete its Sandbox.'),
        },
      },
      additionalPodMetadata: podMetadata('Extra labels and annotations for the Sandbox Pod.'),
      env: {
        'type': 'array',
        'description': 'Environment variables to inject (forces a cold start; needs the template to allow it).',
        'x-kubernetes-list-type': 'atomic',
        'items': {
          type: 'object',
          required: ['name', 'value'],
          properties: {
            name: string('Variable name.'),
            value: string('Variable value.'),
            containerName: string('Target container (regular or init). Empty: the first container.'),
          },
        },
      },
      volumeClaimTemplates: volumeClaimTemplates('Extra or overriding PVC templates (forces a cold start; needs the template to allow it).'),
      idlePolicy: idlePolicy('The idle policy of the claimed Sandbox, instead of the template\'s, copied into it when it is claimed (later edits do not reach it) (ours). Unset: the template\'s.'),
    },
  },
  {
    type: 'object',
    description: 'Observed state of the claim.',
    properties: {
      conditions,
      sandbox: {
        type: 'object',
        description: 'The Sandbox bound to this claim.',
        properties: {
          name: string('Name of the bound Sandbox.'),
          podIPs: { type: 'array', description: 'IPs of the bound Sandbox Pod.', items: { type: 'string' } },
          serviceFQDN: string('In-cluster DNS name of the bound Sandbox\'s Service, mirrored from its status.serviceFQDN; unset while it has none.'),
        },
      },
    },
  },
  'SandboxClaim: an agent\'s request for a Sandbox, served warm from a pool or cold from its template.',
);
