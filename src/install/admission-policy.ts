/**
 * The install's ValidatingAdmissionPolicy: host access, privilege and the router's Pod labels are
 * refused in Sandboxes and SandboxTemplates at the API server, without a webhook. One annotation,
 * honoured only for users granted a custom verb, lets a cluster admin allow the host-access rules for
 * one object.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { CONTROLLER } from './manifest';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { CORE_GROUP, EXTENSIONS_GROUP, KINDS } from '../api/groups';
import { HARDENING_DEFAULTS, SECURE_DEFAULTS_OPT_OUT_ANNOTATION } from '../api/secure-defaults';
import { ErrorList } from '../api/validation';

/** Name of the ValidatingAdmissionPolicy and its binding. */
export const ADMISSION_POLICY_NAME = 'agent-sandbox-pod-hardening';
/** Name of the policy (and binding) on SandboxClaims, whose additionalPodMetadata reaches the Pod. */
export const CLAIM_POLICY_NAME = 'agent-sandbox-claim-pod-labels';
/** The annotation on a Sandbox or SandboxTemplate that asks for the host-access rules to be waived. */
export const ALLOW_PRIVILEGED_ANNOTATION = 'agents.x-k8s.io/allow-privileged';
/** The custom RBAC verb a user needs on the object's resource for the annotation to count. */
export const ALLOW_PRIVILEGED_VERB = 'allow-privileged';
/** The ClusterRole (shipped unbound) that grants the verb. */
export const ALLOW_PRIVILEGED_CLUSTER_ROLE = 'agent-sandbox-allow-privileged';
/**
 * Capabilities a container may add back: the container runtime's default set (the Pod Security
 * "baseline" list). A container that leaves `capabilities` alone has them anyway, so refusing to add
 * them after `drop: [ALL]` would only punish the hardened form.
 */
export const DEFAULT_ALLOWED_CAPABILITIES = [
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
];

const POD = 'spec.podTemplate.spec';
const HOST_PROCESS_WHY = 'is true, which runs a Windows container as a process on the node; remove it or set it to false.';
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];
const q = (s: string) => JSON.stringify(s);

interface Validation { readonly expression: string; readonly message?: string; readonly messageExpression?: string; readonly reason: string }

/**
 * A CEL string naming the first element of the pod's `list` (iterated as `v`) that is `bad`: its
 * path with index, then the element's name, e.g. `spec.podTemplate.spec.volumes[1].hostPath (volume "root")`.
 */
function firstBad(list: string, v: string, bad: string, suffix: string, noun: string): string {
  const first = `variables.pod.${list}.filter(${v}, ${bad})[0]`;
  return `'${POD}.${list}[' + string(variables.pod.${list}.map(${v}, ${v}.name).indexOf(${first}.name)) + '].${suffix} (${noun} "' + ${first}.name + '")'`;
}

/** A rule refused unless the object is opted out: `bad` is a CEL condition, `field` the CEL string naming the field. */
function optOutable(bad: string, field: string, why: string): Validation {
  return {
    expression: `variables.optedOut || !(${bad})`,
    messageExpression: `${field} + ${q(`: ${why}`)} + variables.optOutHint`,
    reason: 'Forbidden',
  };
}

function podRules(): Validation[] {
  const hostNamespaces = ['hostNetwork', 'hostPID', 'hostIPC'].map((field) => optOutable(
    `variables.pod.?${field}.orValue(false)`,
    q(`${POD}.${field}`),
    `is true, which shares the node's ${field.slice(4) === 'Network' ? 'network stack (NetworkPolicies do not apply to it)' : `${field.slice(4)} namespace`} with untrusted code; remove it or set it to false.`,
  ));
  const hostPath = optOutable(
    'variables.pod.?volumes.orValue([]).exists(v, has(v.hostPath))',
    firstBad('volumes', 'v', 'has(v.hostPath)', 'hostPath', 'volume'),
    'mounts a directory of the node; use an emptyDir, a PersistentVolumeClaim (volumeClaimTemplates) or a ConfigMap instead.',
  );
  const hostProcess = optOutable(
    'variables.pod.?securityContext.?windowsOptions.?hostProcess.orValue(false)',
    q(`${POD}.securityContext.windowsOptions.hostProcess`),
    HOST_PROCESS_WHY,
  );
  return [...hostNamespaces, hostPath, hostProcess];
}

function containerRules(allowedCapabilities: string[]): Validation[] {
  const allowed = `[${allowedCapabilities.map(q).join(', ')}]`;
  const normalized = "(a.upperAscii().startsWith('CAP_') ? a.upperAscii().substring(4) : a.upperAscii())";
  const extra = `c.?securityContext.?capabilities.?add.orValue([]).filter(a, !(${normalized} in ${allowed}))`;
  return CONTAINER_LISTS.flatMap((list) => {
    const all = `variables.pod.?${list}.orValue([])`;
    const at = (bad: string, suffix: string) => firstBad(list, 'c', bad, suffix, 'container');
    const rule = (bad: string, suffix: string, why: string) => optOutable(`${all}.exists(c, ${bad})`, at(bad, suffix), why);
    const privileged = 'c.?securityContext.?privileged.orValue(false)';
    const escalation = 'c.?securityContext.?allowPrivilegeEscalation.orValue(false)';
    const hostPort = 'c.?ports.orValue([]).exists(p, p.?hostPort.orValue(0) != 0)';
    const addsExtra = `size(${extra}) > 0`;
    return [
      rule(privileged, 'securityContext.privileged', 'is true, which gives the container every device and capability of the node; remove it or set it to false.'),
      rule(escalation, 'securityContext.allowPrivilegeEscalation', 'is true, which lets setuid binaries gain privileges; remove it or set it to false.'),
      {
        ...rule(addsExtra, 'securityContext.capabilities.add', ''),
        messageExpression: `${at(addsExtra, 'securityContext.capabilities.add')} + ' adds ' + variables.pod.${list}.filter(c, ${addsExtra})[0]`
          + `.securityContext.capabilities.add.filter(a, !(${normalized} in ${allowed})).join(', ')`
          + ` + ${q(`: only ${allowedCapabilities.join(', ') || '(none)'} may be added; remove the others.`)} + variables.optOutHint`,
      },
      rule(hostPort, 'ports[*].hostPort', 'opens a port on the node; remove hostPort and reach the sandbox through its Service or the router.'),
      rule('c.?securityContext.?windowsOptions.?hostProcess.orValue(false)', 'securityContext.windowsOptions.hostProcess', HOST_PROCESS_WHY),
    ];
  });
}

/**
 * Refuse pod labels (`variables.podLabels`, at `field`) that include any one router Pod label: a
 * template carrying one and a claim the other would otherwise each pass, and the merged Pod would
 * match the router selector. Not waivable.
 */
function routerLabelRule(routerPodLabels: { readonly [key: string]: string }, field: string): Validation {
  const pairs = Object.entries(routerPodLabels).sort(([a], [b]) => a.localeCompare(b));
  const selector = pairs.map(([k, v]) => `${k}=${v}`).join(',');
  return {
    expression: `!(${pairs.map(([k, v]) => `(${q(k)} in variables.podLabels && variables.podLabels[${q(k)}] == ${q(v)})`).join(' || ')})`,
    message: `${field} carry a label of the sandbox router's Pods (${selector}), which the sandbox NetworkPolicies admit as the router; remove it (the ${ALLOW_PRIVILEGED_ANNOTATION} annotation does not waive this).`,
    reason: 'Forbidden',
  };
}

/**
 * A template's opt-out list must name defaults the operator knows: a misspelt entry would silently
 * leave the default on. Not waivable.
 */
function optOutListRule(): Validation {
  const known = `[${HARDENING_DEFAULTS.map(q).join(', ')}]`;
  const unknown = `variables.hardeningOptOuts.filter(s, !(s in ${known}))`;
  return {
    expression: `request.resource.resource != ${q(KINDS.template.plural)} || size(${unknown}) == 0`,
    messageExpression: `${q(`metadata.annotations["${SECURE_DEFAULTS_OPT_OUT_ANNOTATION}"]: `)} + ${unknown}.join(', ')`
      + ` + ${q(` is not a secure default; list any of ${HARDENING_DEFAULTS.join(', ')}, separated by commas.`)}`,
    reason: 'Invalid',
  };
}

/** Options of the admission policy, resolved by the install. */
export interface AdmissionPolicySettings {
  /** The operator's namespace: its ServiceAccount is exempt (it copies templates the policy admitted). */
  readonly namespace: string;
  /** Labels of the router Pods; a pod template carrying all of them is refused. */
  readonly routerPodLabels: { readonly [key: string]: string };
  readonly allowedCapabilities: string[];
}

/** Check `admissionPolicyAllowedCapabilities`; errors go to `errors`. */
export function checkAllowedCapabilities(errors: ErrorList, enabled: boolean, capabilities: string[] | undefined): void {
  if (capabilities === undefined) return;
  const field = 'admissionPolicyAllowedCapabilities';
  if (!enabled) errors.check(field, 'is set but admissionPolicy is false; drop one of them');
  capabilities.forEach((c, i) => {
    if (typeof c !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(c) || c.startsWith('CAP_') || c === 'ALL') {
      errors.check(`${field}[${i}]`, `${JSON.stringify(c)} is not a capability name; write it in upper case without the CAP_ prefix, e.g. "NET_BIND_SERVICE" ("ALL" is not allowed)`);
    }
  });
}

/** The policy, its Deny binding, and the unbound ClusterRole that grants the opt-out verb. */
export function addAdmissionPolicy(scope: Construct, settings: AdmissionPolicySettings): ApiObject {
  const resources = [
    { group: CORE_GROUP, plural: KINDS.sandbox.plural },
    { group: EXTENSIONS_GROUP, plural: KINDS.template.plural },
  ];
  const annotationOf = (o: string, name: string) => `${o}.metadata.?annotations[?${q(name)}].orValue('')`;
  const annotation = annotationOf('object', ALLOW_PRIVILEGED_ANNOTATION);
  const annotationsChanged = [ALLOW_PRIVILEGED_ANNOTATION, SECURE_DEFAULTS_OPT_OUT_ANNOTATION]
    .map((name) => `${annotationOf('object', name)} != ${annotationOf('oldObject', name)}`).join(' || ');
  const notTheOperator = { name: 'not-the-operator', expression: `request.userInfo.username != ${q(`system:serviceaccount:${settings.namespace}:${CONTROLLER}`)}` };
  const policy = new ApiObject(scope, 'AdmissionPolicy', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: ADMISSION_POLICY_NAME, labels: { ...PART_OF_LABEL } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: resources.map(({ group, plural }) => ({
          apiGroups: [group], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [plural],
        })),
      },
      matchConditions: [
        // The operator builds Sandboxes from templates this policy admitted, and patches their metadata.
        notTheOperator,
        // Updates that leave the pod template and the opt-out annotations alone (labels, finalizers, deletion) pass.
        {
          name: 'pod-template-or-opt-out-changed',
          expression: `request.operation != 'UPDATE' || object.spec.podTemplate != oldObject.spec.podTemplate || ${annotationsChanged}`,
        },
      ],
      variables: [
        { name: 'pod', expression: 'object.spec.podTemplate.spec' },
        { name: 'podLabels', expression: 'object.spec.podTemplate.?metadata.?labels.orValue({})' },
        { name: 'askedOptOut', expression: `${annotation} == 'true'` },
        {
          name: 'hardeningOptOuts',
          expression: `${annotationOf('object', SECURE_DEFAULTS_OPT_OUT_ANNOTATION)}.split(',').map(s, s.trim()).filter(s, s != '')`,
        },
        {
          name: 'optedOut',
          expression: 'variables.askedOptOut && authorizer.group(request.resource.group).resource(request.resource.resource)'
            + `.namespace(request.namespace).check(${q(ALLOW_PRIVILEGED_VERB)}).allowed()`,
        },
        {
          name: 'optOutHint',
          expression: `variables.askedOptOut ? ' The ${ALLOW_PRIVILEGED_ANNOTATION} annotation is ignored: ' + request.userInfo.username`
            + ` + ' may not ${ALLOW_PRIVILEGED_VERB} ' + request.resource.resource + ' in namespace ' + request.namespace`
            + ` + ' (a cluster admin grants it with a RoleBinding to the ClusterRole ${ALLOW_PRIVILEGED_CLUSTER_ROLE}).'`
            + ` : ' To allow it for this object only, a user granted the ClusterRole ${ALLOW_PRIVILEGED_CLUSTER_ROLE} annotates it ${ALLOW_PRIVILEGED_ANNOTATION}: "true".'`,
        },
      ],
      validations: [...podRules(), ...containerRules(settings.allowedCapabilities), routerLabelRule(settings.routerPodLabels, 'spec.podTemplate.metadata.labels'), optOutListRule()],
    },
  });
  denyBinding(scope, 'AdmissionPolicyBinding', ADMISSION_POLICY_NAME);
  new ApiObject(scope, 'ClaimAdmissionPolicy', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: CLAIM_POLICY_NAME, labels: { ...PART_OF_LABEL } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [EXTENSIONS_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [KINDS.claim.plural] }],
      },
      matchConditions: [
        notTheOperator,
        {
          name: 'pod-labels-changed',
          expression: `request.operation != 'UPDATE' || ${claimLabels('object')} != ${claimLabels('oldObject')}`,
        },
      ],
      variables: [{ name: 'podLabels', expression: claimLabels('object') }],
      validations: [routerLabelRule(settings.routerPodLabels, 'spec.additionalPodMetadata.labels')],
    },
  });
  denyBinding(scope, 'ClaimAdmissionPolicyBinding', CLAIM_POLICY_NAME);
  new ApiObject(scope, 'AllowPrivilegedClusterRole', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: ALLOW_PRIVILEGED_CLUSTER_ROLE, labels: { ...PART_OF_LABEL } },
    rules: resources.map(({ group, plural }) => ({ apiGroups: [group], resources: [plural], verbs: [ALLOW_PRIVILEGED_VERB] })),
  });
  return policy;
}

const claimLabels = (o: string) => `${o}.spec.?additionalPodMetadata.?labels.orValue({})`;

function denyBinding(scope: Construct, id: string, policyName: string): void {
  new ApiObject(scope, id, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName, labels: { ...PART_OF_LABEL } },
    spec: { policyName, validationActions: ['Deny'] },
  });
}
