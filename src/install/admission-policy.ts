/**
 * The install's ValidatingAdmissionPolicies: every control of the Pod Security Standards' baseline
 * profile, the explicit settings its restricted profile forbids, and the router's Pod labels are
 * refused in Sandboxes and SandboxTemplates at the API server, without a webhook. Baseline controls
 * are waived for one object only by the allow-privileged annotation from a user granted a custom
 * verb; a restricted control whose secure default the operator applies is waived by naming that
 * default in the object's secure-defaults opt-out annotation. docs/pod-security-standards.md maps
 * each control to its rule and test.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { CONTROLLER } from './manifest';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { OperatingMode } from '../api/enums';
import { CORE_GROUP, EXTENSIONS_GROUP, KINDS } from '../api/groups';
import { SandboxAnnotations, SandboxLabels } from '../api/labels';
import { SANDBOX_SCHEMA } from '../api/schema';
import {
  APPARMOR_ANNOTATION_PREFIX, BASELINE_CAPABILITIES, CONFINED_PROFILE_TYPES, HARDENING_DEFAULTS, HardeningDefault, RESTRICTED_CAPABILITY,
  RESTRICTED_VOLUME_TYPES, SAFE_SYSCTLS, SECURE_DEFAULTS_OPT_OUT_ANNOTATION, SELINUX_TYPES,
} from '../api/secure-defaults';
import { propName } from '../api/spelling';
import { ErrorList, checkDns1123Subdomain } from '../api/validation';

/** Name of the ValidatingAdmissionPolicy and its binding. */
export const ADMISSION_POLICY_NAME = 'agent-sandbox-pod-hardening';
/** Name of the policy (and binding) on SandboxClaims, whose additionalPodMetadata reaches the Pod. */
export const CLAIM_POLICY_NAME = 'agent-sandbox-claim-pod-labels';
/** Name of the policy (and binding) on who may set a Sandbox's ownerReferences and system labels. */
export const OWNERSHIP_POLICY_NAME = 'agent-sandbox-ownership';
/**
 * Labels on a Sandbox only the operator sets: the claim and warm-pool controllers read them to
 * decide pool membership, which claim owns a Sandbox and whether a member is stale.
 */
export const OPERATOR_SANDBOX_LABELS: readonly string[] = [
  SandboxLabels.WARM_POOL_SANDBOX, SandboxLabels.CLAIM_UID, SandboxLabels.SANDBOX_TEMPLATE_HASH,
  SandboxLabels.SANDBOX_POD_TEMPLATE_HASH, SandboxLabels.SANDBOX_TEMPLATE_REF_HASH, SandboxLabels.LAUNCH_TYPE,
];
/**
 * The users the kube-controller-manager's garbage collector writes as: its own ServiceAccount with
 * `--use-service-account-credentials` (kubeadm's default), the controller manager's user without.
 * It removes ownerReferences to deleted owners when orphaning, and clears blockOwnerDeletion.
 */
export const GARBAGE_COLLECTOR_USERS: readonly string[] = [
  'system:serviceaccount:kube-system:generic-garbage-collector', 'system:kube-controller-manager',
];
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
export const DEFAULT_ALLOWED_CAPABILITIES = [...BASELINE_CAPABILITIES];

const POD = 'spec.podTemplate.spec';
const HOST_PROCESS_WHY = 'is true, which runs a Windows container as a process on the node; remove it or set it to false.';
const SECCOMP_WHY = 'is Unconfined, which turns the syscall filter off; remove it or use RuntimeDefault or Localhost.';
const APPARMOR_WHY = 'is not RuntimeDefault or Localhost (Unconfined turns AppArmor off); remove it or use one of those.';
const SELINUX_WHY = `sets a user, a role or a type other than ${SELINUX_TYPES.join(', ')} (spc_t, for one, is unconfined); remove them or use one of those types.`;
const ROOT_WHY = 'which runs the containers as root on the node\'s user IDs; remove it or set hostUsers: false for a user namespace';
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];
/** Probe and lifecycle handlers whose httpGet or tcpSocket may name a host. */
const HOST_HANDLERS = ['livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle.postStart', 'lifecycle.preStop'];
const q = (s: string) => JSON.stringify(s);
const celList = (items: readonly string[]) => `[${items.map(q).join(', ')}]`;

interface Validation { readonly expression: string; readonly message?: string; readonly messageExpression?: string; readonly reason: string }

/**
 * A CEL string naming the first element of the pod's `list` (iterated as `v`) that is `bad`: its
 * path with index, then the element's name, e.g. `spec.podTemplate.spec.volumes[1].hostPath (volume "root")`.
 * `suffix` is the field after the index, or a function of that element (bound to `x`) giving a CEL
 * string for it. The element is found once and bound by a one-element `map`.
 */
function firstBad(list: string, v: string, bad: string, suffix: string | ((first: string) => string), noun: string): string {
  const field = typeof suffix === 'string' ? `'].${suffix} (${noun} "'` : `'].' + ${suffix('x')} + ' (${noun} "'`;
  return `[variables.pod.${list}.filter(${v}, ${bad})[0]].map(x, '${POD}.${list}['`
    + ` + string(variables.pod.${list}.map(${v}, ${v}.name).indexOf(x.name)) + ${field} + x.name + '")')[0]`;
}

/** A baseline rule, refused unless the object is opted out: `bad` is a CEL condition, `field` the CEL string naming the field. */
function optOutable(bad: string, field: string, why: string): Validation {
  return {
    expression: `variables.optedOut || !(${bad})`,
    messageExpression: `${field} + ${q(`: ${why}`)} + variables.optOutHint`,
    reason: 'Forbidden',
  };
}

/**
 * A restricted-profile rule on a setting whose secure default the operator applies (`optOut`):
 * naming that default in the secure-defaults opt-out annotation waives it, as does the
 * allow-privileged annotation.
 */
function restrictedRule(bad: string, field: string, why: string, optOut: HardeningDefault): Validation {
  return {
    expression: `variables.optedOut || ${q(optOut)} in variables.hardeningOptOuts || !(${bad})`,
    messageExpression: `${field} + ${q(`: ${why}${restrictedHint(optOut)}`)}`,
    reason: 'Forbidden',
  };
}

const restrictedHint = (optOut: HardeningDefault) => ` To allow it for this object, list ${optOut} in its ${SECURE_DEFAULTS_OPT_OUT_ANNOTATION} annotation.`;

/** CEL: whether an `seLinuxOptions` (optional `o`) sets a user, a role or a type baseline forbids. */
const seLinuxBad = (o: string) =>
  `!(${o}.?type.orValue('') in ${celList(['', ...SELINUX_TYPES])}) || ${o}.?user.orValue('') != '' || ${o}.?role.orValue('') != ''`;

/** CEL: the `<handler>.<httpGet|tcpSocket>.host` paths container `c` sets, as a list of strings. */
const hostFieldsOf = (c: string) => `[${HOST_HANDLERS.flatMap((h) => ['httpGet', 'tcpSocket'].map((kind) =>
  `${c}.?${h.split('.').join('.?')}.?${kind}.?host.orValue('') != '' ? ${q(`${h}.${kind}.host`)} : ''`)).join(', ')}].filter(s, s != '')`;

/** CEL: whether annotation `k` of map `m` is an AppArmor annotation with a value baseline forbids. */
const appArmorAnnotationBad = (m: string, k: string) =>
  `${k}.startsWith(${q(APPARMOR_ANNOTATION_PREFIX)}) && !(${m}[${k}] in ['', 'runtime/default'] || ${m}[${k}].startsWith('localhost/'))`;

/** The AppArmor annotation rule on the annotation map `m` found at `path`; `waivable` by allow-privileged or not. */
function appArmorAnnotationRule(m: string, path: string, waivable: boolean): Validation {
  const bad = `${m}.exists(k, ${appArmorAnnotationBad(m, 'k')})`;
  const first = `${m}.filter(k, ${appArmorAnnotationBad(m, 'k')})[0]`;
  const field = `${q(`${path}["`)} + ${first} + '"]'`;
  const why = 'is not runtime/default or localhost/<profile> ("unconfined" turns AppArmor off); remove it or use one of those.';
  if (waivable) return optOutable(bad, field, why);
  return { expression: `!(${bad})`, messageExpression: `${field} + ${q(`: ${why} (the ${ALLOW_PRIVILEGED_ANNOTATION} annotation does not waive this)`)}`, reason: 'Forbidden' };
}

function podRules(): Validation[] {
  const sc = 'variables.pod.?securityContext';
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
    `${sc}.?windowsOptions.?hostProcess.orValue(false)`,
    q(`${POD}.securityContext.windowsOptions.hostProcess`),
    HOST_PROCESS_WHY,
  );
  const seccomp = optOutable(`${sc}.?seccompProfile.?type.orValue('') == 'Unconfined'`, q(`${POD}.securityContext.seccompProfile.type`), SECCOMP_WHY);
  const appArmor = optOutable(`!(${sc}.?appArmorProfile.?type.orValue('RuntimeDefault') in ${celList(CONFINED_PROFILE_TYPES)})`,
    q(`${POD}.securityContext.appArmorProfile.type`), APPARMOR_WHY);
  const seLinux = optOutable(seLinuxBad(`${sc}.?seLinuxOptions`), q(`${POD}.securityContext.seLinuxOptions`), SELINUX_WHY);
  const unsafeSysctl = `!(s.name in ${celList(SAFE_SYSCTLS)})`;
  const sysctls = optOutable(`${sc}.?sysctls.orValue([]).exists(s, ${unsafeSysctl})`, firstBad('securityContext.sysctls', 's', unsafeSysctl, 'name', 'sysctl'),
    `is not a sysctl the baseline profile allows (unsafe ones reach the node's kernel); remove it, or use one of ${SAFE_SYSCTLS.join(', ')}.`);
  const otherVolume = RESTRICTED_VOLUME_TYPES.map((t) => `has(v.${t})`).join(' || ');
  const volumeTypes = optOutable(`variables.pod.?volumes.orValue([]).exists(v, ${otherVolume})`,
    firstBad('volumes', 'v', otherVolume, (x) => `[${RESTRICTED_VOLUME_TYPES.map((t) => `has(${x}.${t}) ? ${q(t)} : ''`).join(', ')}].filter(t, t != '')[0]`, 'volume'),
    'is a volume type the restricted profile forbids (the node mounts it); use configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected or secret instead.');
  const root = (bad: string) => `!variables.userNamespace && ${bad}`;
  const runAsNonRoot = restrictedRule(root(`${sc}.?runAsNonRoot.orValue(true) == false`), q(`${POD}.securityContext.runAsNonRoot`),
    `is false, ${ROOT_WHY}.`, HardeningDefault.RUN_AS_NON_ROOT);
  const runAsUser = restrictedRule(root(`${sc}.?runAsUser.orValue(1) == 0`), q(`${POD}.securityContext.runAsUser`),
    `is 0, ${ROOT_WHY}, or use a non-zero UID.`, HardeningDefault.RUN_AS_NON_ROOT);
  return [
    ...hostNamespaces, hostPath, hostProcess, seccomp, appArmor,
    appArmorAnnotationRule('variables.podAnnotations', 'spec.podTemplate.metadata.annotations', true),
    seLinux, sysctls, volumeTypes, runAsNonRoot, runAsUser,
  ];
}

function containerRules(allowedCapabilities: string[]): Validation[] {
  const allowed = celList(allowedCapabilities);
  const normalized = "(a.upperAscii().startsWith('CAP_') ? a.upperAscii().substring(4) : a.upperAscii())";
  const extra = `c.?securityContext.?capabilities.?add.orValue([]).filter(a, !(${normalized} in ${allowed}))`;
  // Allowed by baseline (the rule above refuses the rest), but more than restricted's one capability.
  const restrictedExtra = (x: string) => `${x}.?securityContext.?capabilities.?add.orValue([]).filter(a, a != ${q(RESTRICTED_CAPABILITY)} && ${normalized} in ${allowed})`;
  return CONTAINER_LISTS.flatMap((list) => {
    const all = `variables.pod.?${list}.orValue([])`;
    const at = (bad: string, suffix: string | ((first: string) => string)) => firstBad(list, 'c', bad, suffix, 'container');
    const rule = (bad: string, suffix: string, why: string) => optOutable(`${all}.exists(c, ${bad})`, at(bad, suffix), why);
    const restricted = (bad: string, suffix: string, why: string, optOut: HardeningDefault) =>
      restrictedRule(`${all}.exists(c, ${bad})`, at(bad, suffix), why, optOut);
    const privileged = 'c.?securityContext.?privileged.orValue(false)';
    const escalation = 'c.?securityContext.?allowPrivilegeEscalation.orValue(false)';
    const hostPort = 'c.?ports.orValue([]).exists(p, p.?hostPort.orValue(0) != 0)';
    const addsExtra = `size(${extra}) > 0`;
    const hostProbe = `size(${hostFieldsOf('c')}) > 0`;
    const addsRestricted = `size(${restrictedExtra('c')}) > 0`;
    const root = (bad: string) => `!variables.userNamespace && ${bad}`;
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
      rule("c.?securityContext.?seccompProfile.?type.orValue('') == 'Unconfined'", 'securityContext.seccompProfile.type', SECCOMP_WHY),
      rule(`!(c.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') in ${celList(CONFINED_PROFILE_TYPES)})`, 'securityContext.appArmorProfile.type', APPARMOR_WHY),
      rule(seLinuxBad('c.?securityContext.?seLinuxOptions'), 'securityContext.seLinuxOptions', SELINUX_WHY),
      rule("c.?securityContext.?procMount.orValue('Default') != 'Default'", 'securityContext.procMount',
        'is not Default, which unmasks the /proc paths that expose the node; remove it or set it to Default.'),
      optOutable(`${all}.exists(c, ${hostProbe})`, at(hostProbe, (first) => `${hostFieldsOf(first)}[0]`),
        'is set, so the kubelet connects to that host from the node instead of to the Pod; remove host.'),
      restricted(root('c.?securityContext.?runAsNonRoot.orValue(true) == false'), 'securityContext.runAsNonRoot', `is false, ${ROOT_WHY}.`, HardeningDefault.RUN_AS_NON_ROOT),
      restricted(root('c.?securityContext.?runAsUser.orValue(1) == 0'), 'securityContext.runAsUser', `is 0, ${ROOT_WHY}, or use a non-zero UID.`, HardeningDefault.RUN_AS_NON_ROOT),
      restricted("!c.?securityContext.?capabilities.?drop.orValue(['ALL']).exists(d, d == 'ALL')", 'securityContext.capabilities.drop',
        'does not include "ALL", which the restricted profile requires; add "ALL" to it (or remove drop from a SandboxTemplate: the operator then drops ALL).', HardeningDefault.DROP_CAPABILITIES),
      {
        ...restricted(addsRestricted, 'securityContext.capabilities.add', '', HardeningDefault.DROP_CAPABILITIES),
        messageExpression: `${at(addsRestricted, 'securityContext.capabilities.add')} + ' adds ' + ${restrictedExtra(`variables.pod.${list}.filter(c, ${addsRestricted})[0]`)}.join(', ')`
          + ` + ${q(`: the restricted profile lets a container add only ${RESTRICTED_CAPABILITY}, spelled so; remove the others`
            + ` (a container that keeps the runtime's default capabilities has them anyway).${restrictedHint(HardeningDefault.DROP_CAPABILITIES)}`)}`,
      },
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
 * An opt-out list (on a template or a Sandbox) must name defaults the operator knows: a misspelt
 * entry would silently leave the default on, or waive nothing. Not waivable.
 */
function optOutListRule(): Validation {
  const known = `[${HARDENING_DEFAULTS.map(q).join(', ')}]`;
  const unknown = `variables.hardeningOptOuts.filter(s, !(s in ${known}))`;
  return {
    expression: `size(${unknown}) == 0`,
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
  if (!enabled) errors.check(field, `is set but ${propName('admissionPolicy')} is false; drop one of them`);
  capabilities.forEach((c, i) => {
    if (typeof c !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(c) || c.startsWith('CAP_') || c === 'ALL') {
      errors.check(`${field}[${i}]`, `${JSON.stringify(c)} is not a capability name; write it in upper case without the CAP_ prefix, e.g. "NET_BIND_SERVICE" ("ALL" is not allowed)`);
    }
  });
}

/** The resources whose `spec.podTemplate` becomes a Pod: Sandboxes and SandboxTemplates. */
const POD_TEMPLATE_RESOURCES = [
  { group: CORE_GROUP, plural: KINDS.sandbox.plural },
  { group: EXTENSIONS_GROUP, plural: KINDS.template.plural },
];
const annotationOf = (o: string, name: string) => `${o}.metadata.?annotations[?${q(name)}].orValue('')`;
const notTheOperator = (namespace: string) => ({
  name: 'not-the-operator', expression: `request.userInfo.username != ${q(`system:serviceaccount:${namespace}:${CONTROLLER}`)}`,
});

/** How one object asks for a policy to be waived: an annotation, honoured for holders of a verb. */
interface Waiver {
  readonly annotation: string;
  readonly verb: string;
  readonly clusterRole: string;
  /** Variable names: the annotation says "true"; it does and the user holds the verb; the hint for messages. */
  readonly asked: string;
  readonly granted: string;
  readonly hint: string;
}

const PRIVILEGED_WAIVER: Waiver = {
  annotation: ALLOW_PRIVILEGED_ANNOTATION,
  verb: ALLOW_PRIVILEGED_VERB,
  clusterRole: ALLOW_PRIVILEGED_CLUSTER_ROLE,
  asked: 'askedOptOut',
  granted: 'optedOut',
  hint: 'optOutHint',
};

/** The variables of `waiver`; `extra` go between the asked and granted ones. */
function waiverVariables(waiver: Waiver, extra: Array<{ name: string; expression: string }> = []): Array<{ name: string; expression: string }> {
  const { annotation, verb, clusterRole } = waiver;
  return [
    { name: waiver.asked, expression: `${annotationOf('object', annotation)} == 'true'` },
    ...extra,
    {
      name: waiver.granted,
      expression: `variables.${waiver.asked} && authorizer.group(request.resource.group).resource(request.resource.resource)`
        + `.namespace(request.namespace).check(${q(verb)}).allowed()`,
    },
    {
      name: waiver.hint,
      expression: `variables.${waiver.asked} ? ' The ${annotation} annotation is ignored: ' + request.userInfo.username`
        + ` + ' may not ${verb} ' + request.resource.resource + ' in namespace ' + request.namespace`
        + ` + ' (a cluster admin grants it with a RoleBinding to the ClusterRole ${clusterRole}).'`
        + ` : ' To allow it for this object only, a user granted the ClusterRole ${clusterRole} annotates it ${annotation}: "true".'`,
    },
  ];
}

/**
 * A Deny-bound policy on Sandboxes and SandboxTemplates, checked on create and on updates that
 * change the pod template or one of `annotations`; `variables.pod` is the pod spec.
 */
function podTemplatePolicy(scope: Construct, id: string, name: string, namespace: string, annotations: string[],
  variables: Array<{ name: string; expression: string }>, validations: Validation[]): ApiObject {
  const annotationsChanged = annotations.map((a) => `${annotationOf('object', a)} != ${annotationOf('oldObject', a)}`).join(' || ');
  const policy = new ApiObject(scope, id, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: { ...PART_OF_LABEL } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: POD_TEMPLATE_RESOURCES.map(({ group, plural }) => ({
          apiGroups: [group], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [plural],
        })),
      },
      matchConditions: [
        // The operator builds Sandboxes from templates this policy admitted, and patches their metadata.
        notTheOperator(namespace),
        // Updates that leave the pod template and the opt-out annotations alone (labels, finalizers, deletion) pass.
        {
          name: 'pod-template-or-opt-out-changed',
          expression: `request.operation != 'UPDATE' || object.spec.podTemplate != oldObject.spec.podTemplate || ${annotationsChanged}`,
        },
      ],
      variables: [{ name: 'pod', expression: 'object.spec.podTemplate.spec' }, ...variables],
      validations,
    },
  });
  denyBinding(scope, `${id}Binding`, name);
  return policy;
}

/** The unbound ClusterRole granting `waiver`'s verb on Sandboxes and SandboxTemplates. */
function waiverClusterRole(scope: Construct, id: string, waiver: Waiver): void {
  new ApiObject(scope, id, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: waiver.clusterRole, labels: { ...PART_OF_LABEL } },
    rules: POD_TEMPLATE_RESOURCES.map(({ group, plural }) => ({ apiGroups: [group], resources: [plural], verbs: [waiver.verb] })),
  });
}

/** The hardening policy, the claim policy, their Deny bindings, and the unbound ClusterRole that grants the opt-out verb. */
export function addAdmissionPolicy(scope: Construct, settings: AdmissionPolicySettings): ApiObject {
  const policy = podTemplatePolicy(scope, 'AdmissionPolicy', ADMISSION_POLICY_NAME, settings.namespace,
    [ALLOW_PRIVILEGED_ANNOTATION, SECURE_DEFAULTS_OPT_OUT_ANNOTATION],
    [
      { name: 'podLabels', expression: 'object.spec.podTemplate.?metadata.?labels.orValue({})' },
      { name: 'podAnnotations', expression: 'object.spec.podTemplate.?metadata.?annotations.orValue({})' },
      // PSS allows root in a user namespace: the container's UID 0 is not the node's.
      { name: 'userNamespace', expression: 'variables.pod.?hostUsers.orValue(true) == false' },
      ...waiverVariables(PRIVILEGED_WAIVER, [{
        name: 'hardeningOptOuts',
        expression: `${annotationOf('object', SECURE_DEFAULTS_OPT_OUT_ANNOTATION)}.split(',').map(s, s.trim()).filter(s, s != '')`,
      }]),
    ],
    [...podRules(), ...containerRules(settings.allowedCapabilities), routerLabelRule(settings.routerPodLabels, 'spec.podTemplate.metadata.labels'), optOutListRule()],
  );
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
        notTheOperator(settings.namespace),
        {
          name: 'pod-metadata-changed',
          expression: `request.operation != 'UPDATE' || ${(['labels', 'annotations'] as const).map((m) => `${claimMetadata('object', m)} != ${claimMetadata('oldObject', m)}`).join(' || ')}`,
        },
      ],
      variables: [
        { name: 'podLabels', expression: claimMetadata('object', 'labels') },
        { name: 'podAnnotations', expression: claimMetadata('object', 'annotations') },
      ],
      validations: [
        routerLabelRule(settings.routerPodLabels, 'spec.additionalPodMetadata.labels'),
        // The operator refuses every kubernetes.io annotation from a claim too; this says so at once.
        appArmorAnnotationRule('variables.podAnnotations', 'spec.additionalPodMetadata.annotations', false),
      ],
    },
  });
  denyBinding(scope, 'ClaimAdmissionPolicyBinding', CLAIM_POLICY_NAME);
  addOwnershipPolicy(scope, settings.namespace);
  waiverClusterRole(scope, 'AllowPrivilegedClusterRole', PRIVILEGED_WAIVER);
  return policy;
}

const OWNER_KINDS = [KINDS.claim.kind, KINDS.warmPool.kind];
const ONLY_THE_OPERATOR = 'only the agent-sandbox operator sets them';

/**
 * The claim controller, warm pool controller and router trust a Sandbox's controller ownerReference
 * and its {@link OPERATOR_SANDBOX_LABELS}: which claim's `connect` permission guards it, whether it
 * is an unclaimed pool member, which claim may adopt it. Anyone allowed to patch Sandboxes could
 * otherwise hand a used Sandbox back to a pool or point a victim's at their own claim. This policy
 * refuses, for everyone but the operator: a Sandbox created with an ownerReference to a SandboxClaim
 * or SandboxWarmPool or with one of those labels, and an update that changes its ownerReferences or
 * those labels. The garbage collector may only remove references (or clear blockOwnerDeletion).
 */
function addOwnershipPolicy(scope: Construct, namespace: string): void {
  const labels = celList(OPERATOR_SANDBOX_LABELS);
  const labelChanged = (k: string, now = 'variables.labels', before = 'variables.oldLabels') =>
    `((${k} in ${now}) != (${k} in ${before}) || (${k} in ${now} && ${now}[${k}] != ${before}[${k}]))`;
  const refsOf = (o: string) => `${o}.metadata.?ownerReferences.orValue([])`;
  const labelsOf = (o: string) => `${o}.metadata.?labels.orValue({})`;
  const ownerRef = `r.kind in ${celList(OWNER_KINDS)}`;
  const firstRef = `[variables.refs.filter(r, ${ownerRef})[0]].map(x, 'metadata.ownerReferences['`
    + ' + string(variables.refs.map(r, r.uid).indexOf(x.uid)) + \'] (\' + x.kind + \' "\' + x.name + \'")\')[0]';
  // Only removals: every remaining reference was there before, naming the same owner the same way.
  const onlyRemoved = 'variables.refs.all(r, variables.oldRefs.exists(o, o.uid == r.uid && o.kind == r.kind && o.name == r.name'
    + ' && o.apiVersion == r.apiVersion && o.?controller.orValue(false) == r.?controller.orValue(false)))';
  const validations: Validation[] = [
    {
      expression: `request.operation != 'CREATE' || !variables.refs.exists(r, ${ownerRef})`,
      messageExpression: `${firstRef} + ${q(`: a Sandbox may not be created with an ownerReference to a SandboxClaim or SandboxWarmPool, ${ONLY_THE_OPERATOR};`
        + ' create a SandboxClaim to get a claimed Sandbox.')}`,
      reason: 'Forbidden',
    },
    {
      expression: `request.operation != 'CREATE' || !${labels}.exists(k, k in variables.labels)`,
      messageExpression: `'metadata.labels["' + ${labels}.filter(k, k in variables.labels)[0] + '"]'`
        + ` + ${q(`: a Sandbox may not be created with this label, ${ONLY_THE_OPERATOR} (they decide warm-pool membership and which claim owns a Sandbox); remove it.`)}`,
      reason: 'Forbidden',
    },
    {
      expression: `request.operation != 'UPDATE' || variables.refs == variables.oldRefs || (variables.garbageCollector && ${onlyRemoved})`,
      message: `metadata.ownerReferences: may not be changed, ${ONLY_THE_OPERATOR} (the garbage collector only removes references to deleted owners);`
        + ' they decide which SandboxClaim guards the Sandbox and whether it is a warm-pool member. Leave them as they are.',
      reason: 'Forbidden',
    },
    {
      expression: `request.operation != 'UPDATE' || !${labels}.exists(k, ${labelChanged('k')})`,
      messageExpression: `'metadata.labels["' + ${labels}.filter(k, ${labelChanged('k')})[0] + '"]'`
        + ` + ${q(`: may not be added, changed or removed, ${ONLY_THE_OPERATOR} (they decide warm-pool membership and which claim owns a Sandbox); leave it as it is.`)}`,
      reason: 'Forbidden',
    },
  ];
  new ApiObject(scope, 'OwnershipAdmissionPolicy', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: OWNERSHIP_POLICY_NAME, labels: { ...PART_OF_LABEL } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [CORE_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [KINDS.sandbox.plural] }],
      },
      matchConditions: [
        // The claim and warm pool controllers create members, adopt them and hand them over.
        notTheOperator(namespace),
        // Updates that leave the ownerReferences and these labels alone (the SDK's suspend and resume) pass.
        {
          name: 'ownership-changed',
          expression: `request.operation != 'UPDATE' || ${refsOf('object')} != ${refsOf('oldObject')}`
            + ` || ${labels}.exists(k, ${labelChanged('k', labelsOf('object'), labelsOf('oldObject'))})`,
        },
      ],
      variables: [
        { name: 'refs', expression: refsOf('object') },
        { name: 'oldRefs', expression: `request.operation == 'UPDATE' ? ${refsOf('oldObject')} : []` },
        { name: 'labels', expression: labelsOf('object') },
        { name: 'oldLabels', expression: `request.operation == 'UPDATE' ? ${labelsOf('oldObject')} : {}` },
        { name: 'garbageCollector', expression: `request.userInfo.username in ${celList(GARBAGE_COLLECTOR_USERS)}` },
      ],
      validations,
    },
  });
  denyBinding(scope, 'OwnershipAdmissionPolicyBinding', OWNERSHIP_POLICY_NAME);
}

/** Name of the opt-in policy (and binding) on the credentials a sandbox Pod may name. */
export const CREDENTIALS_POLICY_NAME = 'agent-sandbox-credentials';
/** The annotation on a Sandbox or SandboxTemplate that asks for the credentials policy to be waived. */
export const ALLOW_CREDENTIALS_ANNOTATION = 'agents.x-k8s.io/allow-credentials';
/** The custom RBAC verb a user needs on the object's resource for that annotation to count. */
export const ALLOW_CREDENTIALS_VERB = 'allow-credentials';
/** The ClusterRole (shipped unbound, with the policy) that grants the verb. */
export const ALLOW_CREDENTIALS_CLUSTER_ROLE = 'agent-sandbox-allow-credentials';

const CREDENTIALS_WAIVER: Waiver = {
  annotation: ALLOW_CREDENTIALS_ANNOTATION,
  verb: ALLOW_CREDENTIALS_VERB,
  clusterRole: ALLOW_CREDENTIALS_CLUSTER_ROLE,
  asked: 'askedWaiver',
  granted: 'waived',
  hint: 'waiverHint',
};

/** Options of the credentials policy, resolved by the install. */
export interface CredentialsPolicySettings {
  /** The operator's namespace: its ServiceAccount is exempt. */
  readonly namespace: string;
  /** ServiceAccounts a pod template may name besides `default`. */
  readonly serviceAccounts: string[];
  /** Secrets a pod template may read (volumes, projected sources, env, envFrom, CSI node-publish secrets). */
  readonly secrets: string[];
  /** Whether a pod template may ask for a service-account token. */
  readonly serviceAccountTokens: boolean;
}

/** The credentials props of the install, as `AgentSandboxSystemProps` spells them. */
export interface CredentialsPolicyProps {
  readonly credentialsPolicy?: boolean;
  readonly credentialsPolicyServiceAccounts?: string[];
  readonly credentialsPolicySecrets?: string[];
  readonly credentialsPolicyServiceAccountTokens?: boolean;
}

/** Check the credentials policy props; errors go to `errors`. */
export function checkCredentialsPolicy(errors: ErrorList, props: CredentialsPolicyProps): void {
  const enabled = props.credentialsPolicy ?? false;
  if (typeof enabled !== 'boolean') errors.check('credentialsPolicy', `${JSON.stringify(enabled)} must be true or false`);
  const tokens = props.credentialsPolicyServiceAccountTokens;
  if (tokens !== undefined && typeof tokens !== 'boolean') errors.check('credentialsPolicyServiceAccountTokens', `${JSON.stringify(tokens)} must be true or false`);
  for (const field of ['credentialsPolicyServiceAccounts', 'credentialsPolicySecrets', 'credentialsPolicyServiceAccountTokens'] as const) {
    if (props[field] !== undefined && enabled !== true) errors.check(field, `is set but ${propName('credentialsPolicy')} is not true; set ${propName('credentialsPolicy')} to true or drop it`);
  }
  for (const field of ['credentialsPolicyServiceAccounts', 'credentialsPolicySecrets'] as const) {
    (props[field] ?? []).forEach((name, i) => {
      const problem = typeof name === 'string' ? checkDns1123Subdomain(name) : 'must be a string';
      if (problem) errors.check(`${field}[${i}]`, `${JSON.stringify(name)} is not a ${field.endsWith('Secrets') ? 'Secret' : 'ServiceAccount'} name: ${problem}`);
    });
  }
}

/** The message tail for a credential (`what`) outside the allow-list `allowed`, and how to fix it. */
function credentialsWhy(what: string, allowed: string[], fix: string): string {
  return `${what}; the platform lets sandbox authors use ${allowed.length > 0 ? allowed.join(', ') : 'none'}: ${fix}`;
}

function credentialsRules(settings: CredentialsPolicySettings): Validation[] {
  const accounts = celList(['default', ...settings.serviceAccounts]);
  const secrets = celList(settings.secrets);
  const rule = (bad: string, message: string): Validation => ({
    expression: `variables.waived || !(${bad})`,
    messageExpression: `${message} + variables.waiverHint`,
    reason: 'Forbidden',
  });
  const accountRules = ['serviceAccountName', 'serviceAccount'].map((field) => {
    const name = `variables.pod.?${field}.orValue('default')`;
    return rule(`!(${name} in ${accounts})`, `${q(`${POD}.${field}: "`)} + ${name} + '"'
      + ${q(`: ${credentialsWhy('is a ServiceAccount sandbox authors may not run as', ['default', ...settings.serviceAccounts], 'remove it to run as default, or use one of those.')}`)}`);
  });
  const tokenRules = settings.serviceAccountTokens ? [] : [
    rule('variables.pod.?automountServiceAccountToken.orValue(false)',
      q(`${POD}.automountServiceAccountToken: is true, which mounts a token of the Pod's ServiceAccount for the code in the sandbox; remove it or set it to false.`)),
    rule('variables.pod.?volumes.orValue([]).exists(v, v.?projected.?sources.orValue([]).exists(s, has(s.serviceAccountToken)))',
      `${firstBad('volumes', 'v', 'v.?projected.?sources.orValue([]).exists(s, has(s.serviceAccountToken))', 'projected.sources[*].serviceAccountToken', 'volume')}`
      + ` + ${q(': mints a token of the Pod\'s ServiceAccount for the code in the sandbox; remove that source.')}`),
  ];
  const notAllowed = (name: string) => `!(${name}.orValue('') in ${secrets})`;
  const secretWhy = q(`: ${credentialsWhy('names a Secret sandbox authors may not read', settings.secrets, 'remove it, or ask for it to be allowed.')}`);
  const volumeSecret = `has(v.secret) && ${notAllowed('v.secret.?secretName')}`;
  const projectedSecret = `v.?projected.?sources.orValue([]).exists(s, has(s.secret) && ${notAllowed('s.secret.?name')})`;
  const csiSecret = `v.?csi.?nodePublishSecretRef.hasValue() && ${notAllowed('v.csi.nodePublishSecretRef.?name')}`;
  const volumeRules = ([[volumeSecret, 'secret.secretName'], [projectedSecret, 'projected.sources[*].secret.name'], [csiSecret, 'csi.nodePublishSecretRef.name']] as const)
    .map(([bad, suffix]) => rule(`variables.pod.?volumes.orValue([]).exists(v, ${bad})`, `${firstBad('volumes', 'v', bad, suffix, 'volume')} + ${secretWhy}`));
  const containerRulesOf = CONTAINER_LISTS.flatMap((list) => {
    const envSecret = `c.?env.orValue([]).exists(e, e.?valueFrom.?secretKeyRef.hasValue() && ${notAllowed('e.valueFrom.secretKeyRef.?name')})`;
    const envFromSecret = `c.?envFrom.orValue([]).exists(f, f.?secretRef.hasValue() && ${notAllowed('f.secretRef.?name')})`;
    return ([[envSecret, 'env[*].valueFrom.secretKeyRef.name'], [envFromSecret, 'envFrom[*].secretRef.name']] as const).map(([bad, suffix]) =>
      rule(`variables.pod.?${list}.orValue([]).exists(c, ${bad})`, `${firstBad(list, 'c', bad, suffix, 'container')} + ${secretWhy}`));
  });
  return [...accountRules, ...tokenRules, ...volumeRules, ...containerRulesOf];
}

/**
 * The opt-in policy on the credentials a Sandbox or SandboxTemplate Pod may name (ServiceAccount,
 * tokens, Secrets), its Deny binding, and the unbound ClusterRole granting its waiver verb.
 */
export function addCredentialsPolicy(scope: Construct, settings: CredentialsPolicySettings): ApiObject {
  const policy = podTemplatePolicy(scope, 'CredentialsPolicy', CREDENTIALS_POLICY_NAME, settings.namespace, [ALLOW_CREDENTIALS_ANNOTATION],
    waiverVariables(CREDENTIALS_WAIVER), credentialsRules(settings));
  waiverClusterRole(scope, 'AllowCredentialsClusterRole', CREDENTIALS_WAIVER);
  return policy;
}

const claimMetadata = (o: string, map: 'labels' | 'annotations') => `${o}.spec.?additionalPodMetadata.?${map}.orValue({})`;

/** Name of the policy (and binding) on what the sandbox router may change in a Sandbox. */
export const ROUTER_POLICY_NAME = 'agent-sandbox-router';
/** The annotations the router writes on a Sandbox: its activity stamp, and the idle mark a resume removes. */
export const ROUTER_ANNOTATIONS: readonly string[] = [SandboxAnnotations.LAST_ACTIVITY, SandboxAnnotations.IDLE_SUSPENDED_AT];
const ROUTER_MAY = `the sandbox router may only stamp ${SandboxAnnotations.LAST_ACTIVITY} and resume a Sandbox whose idlePolicy allows it; it changed `;

/** CEL: the keys of map `now` that are added, changed or removed against `before`, except `exempt`. */
function changedKeys(now: string, before: string, exempt: readonly string[] = []): string {
  const skip = exempt.length > 0 ? `!(k in ${celList(exempt)}) && ` : '';
  return `${now}.filter(k, ${skip}(!(k in ${before}) || ${before}[k] != ${now}[k])) + ${before}.filter(k, ${skip}!(k in ${now}))`;
}

/**
 * The router has cluster-wide `patch` on Sandboxes for exactly two writes: the
 * {@link SandboxAnnotations.LAST_ACTIVITY} stamp, and the resume of an idle-suspended Sandbox whose
 * idlePolicy allows it (operatingMode Suspended to Running, removing
 * {@link SandboxAnnotations.IDLE_SUSPENDED_AT}). This policy refuses every other update by `username`
 * (the router's ServiceAccount), so a compromised router cannot rewrite a pod template (image,
 * command, ServiceAccount), labels, ownerReferences, finalizers or other annotations. Status is a
 * subresource the router may not write (and `sandboxes` does not match `sandboxes/status`). The spec
 * fields are compared one by one, as the CRD declares them (it prunes any other): CEL type-checks a
 * typed object's fields, not iteration over them.
 */
export function addRouterPolicy(scope: Construct, username: string): ApiObject {
  const specFields = Object.keys(SANDBOX_SCHEMA.properties!.spec.properties!).filter((f) => f !== 'operatingMode');
  const fieldChanged = (f: string) => `has(object.spec.${f}) != has(oldObject.spec.${f}) || (has(object.spec.${f}) && object.spec.${f} != oldObject.spec.${f})`;
  const keys = (what: string) => `'metadata.${what}["' + variables.${what}Changed.join('"], metadata.${what}["') + '"]'`;
  const { RUNNING, SUSPENDED } = OperatingMode;
  const validations: Validation[] = [
    {
      expression: 'size(variables.specChanged) == 0',
      messageExpression: `${q(ROUTER_MAY)} + variables.specChanged.join(', ')`,
      reason: 'Forbidden',
    },
    {
      expression: `variables.mode == variables.oldMode || (variables.oldMode == ${q(SUSPENDED)} && variables.mode == ${q(RUNNING)} && variables.resumable)`,
      messageExpression: `${q(ROUTER_MAY)} + 'spec.operatingMode from ' + variables.oldMode + ' to ' + variables.mode`
        + ` + (variables.oldMode != ${q(SUSPENDED)} || variables.mode != ${q(RUNNING)} ? ''`
        + ' : has(oldObject.spec.idlePolicy) ? \' (its idlePolicy has resumeOnRequest: false)\' : \' (it has no idlePolicy)\')',
      reason: 'Forbidden',
    },
    {
      expression: 'size(variables.labelsChanged) == 0',
      messageExpression: `${q(ROUTER_MAY)} + ${keys('labels')}`,
      reason: 'Forbidden',
    },
    {
      expression: 'size(variables.annotationsChanged) == 0',
      messageExpression: `${q(ROUTER_MAY)} + ${keys('annotations')}`,
      reason: 'Forbidden',
    },
    ...(['ownerReferences', 'finalizers'] as const).map((field) => ({
      expression: `object.metadata.?${field}.orValue([]) == oldObject.metadata.?${field}.orValue([])`,
      message: `${ROUTER_MAY}metadata.${field}`,
      reason: 'Forbidden',
    })),
  ];
  const policy = new ApiObject(scope, 'RouterAdmissionPolicy', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: ROUTER_POLICY_NAME, labels: { ...PART_OF_LABEL } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [CORE_GROUP], apiVersions: ['*'], operations: ['UPDATE'], resources: [KINDS.sandbox.plural] }],
      },
      matchConditions: [{ name: 'the-router', expression: `request.userInfo.username == ${q(username)}` }],
      variables: [
        { name: 'specChanged', expression: `[${specFields.map((f) => `${fieldChanged(f)} ? ${q(`spec.${f}`)} : ''`).join(', ')}].filter(s, s != '')` },
        { name: 'mode', expression: `object.spec.?operatingMode.orValue(${q(RUNNING)})` },
        { name: 'oldMode', expression: `oldObject.spec.?operatingMode.orValue(${q(RUNNING)})` },
        { name: 'resumable', expression: 'has(oldObject.spec.idlePolicy) && oldObject.spec.idlePolicy.?resumeOnRequest.orValue(true)' },
        { name: 'labelsChanged', expression: changedKeys('object.metadata.?labels.orValue({})', 'oldObject.metadata.?labels.orValue({})') },
        {
          name: 'annotationsChanged',
          expression: changedKeys('object.metadata.?annotations.orValue({})', 'oldObject.metadata.?annotations.orValue({})', ROUTER_ANNOTATIONS),
        },
      ],
      validations,
    },
  });
  denyBinding(scope, 'RouterAdmissionPolicyBinding', ROUTER_POLICY_NAME);
  return policy;
}

function denyBinding(scope: Construct, id: string, policyName: string): void {
  new ApiObject(scope, id, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName, labels: { ...PART_OF_LABEL } },
    spec: { policyName, validationActions: ['Deny'] },
  });
}
