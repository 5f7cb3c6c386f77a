import { ApiObject, ApiObjectMetadata, Duration } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { ROUTER_APP_LABEL, isReservedAnnotationKey, isReservedLabelKey } from './api/labels';
import { REFERENCED_KINDS } from './api/object-kinds';
import { propName, staticMethodName } from './api/spelling';
import { ErrorList, checkQualifiedName, checkLabelValue, checkDns1123Subdomain, checkStringMap } from './api/validation';
import { SandboxContainerProps, _checkId, _containerToKube, _listOf, _validateContainer, dropUndefined } from './container';
import { _checkDuration } from './custom-resource';
import { ObjectRef, _checkRef, _resolveRef } from './object-ref';
import { IRuntimeClass, _runtimeClassOf, _runtimeClassRefOf } from './runtime-class';
import {
  SchedulingAffinity, TopologySpreadConstraint, _affinityToKube, _checkAffinity, _checkNodeSelector, _checkSpread,
  _checkTolerations, _spreadToKube, _tolerationsToKube,
} from './scheduling';
import { SandboxVolume, VolumeClaimTemplate, _validateVolumeClaimTemplate, volumeClaimTemplateToKube } from './volume';

/** Pod-level security settings. Each hardening default can be switched off on its own. */
export interface PodSecurityOptions {
  /** Mount a service-account token into the sandbox. @default false */
  readonly automountServiceAccountToken?: boolean;
  /** Refuse to start containers as UID 0. @default true */
  readonly runAsNonRoot?: boolean;
  /** Run the seccomp RuntimeDefault profile. @default true */
  readonly seccompRuntimeDefault?: boolean;
  /** Drop ALL capabilities and forbid privilege escalation in every container. @default true */
  readonly hardenContainers?: boolean;
  /** fsGroup for mounted volumes, so a non-root user can write to PVCs. @default - none */
  readonly fsGroup?: number;
}

/** A toleration of the sandbox Pod. */
export interface SandboxToleration {
  /** Taint key. */
  readonly key: string;
  /** @default - any value (operator Exists) */
  readonly value?: string;
  /** `NoSchedule`, `PreferNoSchedule` or `NoExecute`. @default - all effects */
  readonly effect?: string;
  /** How long the Pod stays on a node after a NoExecute taint appears. @default - forever */
  readonly tolerationSeconds?: number;
}

/** What a sandbox Pod is made of: shared by {@link Sandbox} and {@link SandboxTemplate}. */
export interface SandboxBlueprintProps {
  /** Metadata of the object. @default - a generated name */
  readonly metadata?: ApiObjectMetadata;
  /** The containers; at least one (here or through `addContainer`). @default - none */
  readonly containers?: SandboxContainerProps[];
  /** Init containers. @default - none */
  readonly initContainers?: SandboxContainerProps[];
  /** Pod volumes. @default - none */
  readonly volumes?: SandboxVolume[];
  /** One PVC per entry per Sandbox, kept across suspend/resume. @default - none */
  readonly volumeClaimTemplates?: VolumeClaimTemplate[];
  /**
   * Isolation runtime, such as `SandboxRuntimeClass.gvisor(...)`, or any construct that wraps a
   * RuntimeClass (an imported `KubeRuntimeClass`), checked at synth to be one.
   * @default - the cluster default runtime
   */
  readonly runtimeClass?: IRuntimeClass | IConstruct;
  /** Labels for the Pod (keys under agents.x-k8s.io/ are reserved). @default - none */
  readonly podLabels?: { [key: string]: string };
  /** Annotations for the Pod. @default - none */
  readonly podAnnotations?: { [key: string]: string };
  /** Keep a headless Service named after the Sandbox. @default - unset: no Service is created */
  readonly service?: boolean;
  /** Service account of the Pod, by name (or give `serviceAccount`). @default - the namespace's `default` */
  readonly serviceAccountName?: string;
  /**
   * Service account of the Pod: a construct that defines one (a cdk8s-plus `ServiceAccount`, a
   * `KubeServiceAccount`), or an `ObjectRef` (by name with `ObjectRef.fromName`). Give this or
   * `serviceAccountName`, not both.
   * @default - `serviceAccountName`
   */
  readonly serviceAccount?: ObjectRef | IConstruct;
  /**
   * Secrets with registry credentials for pulling the images (`imagePullSecrets`): constructs that
   * define them (a cdk8s-plus `Secret`, a `KubeSecret`) or `ObjectRef`s.
   * @default - none
   */
  readonly imagePullSecrets?: Array<ObjectRef | IConstruct>;
  /** Node labels the Pod must land on. @default - none */
  readonly nodeSelector?: { [key: string]: string };
  /** Tolerations. @default - none */
  readonly tolerations?: SandboxToleration[];
  /** Node and Pod affinity. @default - none */
  readonly affinity?: SchedulingAffinity;
  /** Spread the Pods over zones or nodes. @default - none */
  readonly topologySpreadConstraints?: TopologySpreadConstraint[];
  /**
   * PriorityClass of the Pod (`priorityClassName`): a construct that defines one (a
   * `KubePriorityClass`), or an `ObjectRef` (by name with `ObjectRef.fromName`). Warm pools of a
   * low class are preempted before claimed Sandboxes of a higher one.
   * @default - the cluster's default priority
   */
  readonly priorityClass?: ObjectRef | IConstruct;
  /** Grace period for the Pod to stop on suspend or shutdown. @default - Kubernetes' 30 seconds */
  readonly terminationGracePeriod?: Duration;
  /** Security settings. @default - no token, non-root, seccomp RuntimeDefault, ALL capabilities dropped */
  readonly security?: PodSecurityOptions;
}

/**
 * The Pod blueprint of a Sandbox or SandboxTemplate: containers, volumes, claim templates,
 * runtime class and the secure defaults, with mutators that work until synth.
 */
export abstract class SandboxBlueprint extends Construct {
  private readonly containers: SandboxContainerProps[];
  private readonly initContainers: SandboxContainerProps[];
  private readonly volumes: SandboxVolume[];
  private readonly claimTemplates: VolumeClaimTemplate[];
  private readonly blueprint: SandboxBlueprintProps;

  protected constructor(scope: Construct, id: string, props: SandboxBlueprintProps) {
    super(scope, id);
    this.blueprint = props;
    // jsii callers can pass anything: a non-list is reported at synth (see _validateBlueprint).
    const listOf = <T>(value: T[] | undefined): T[] => (Array.isArray(value) ? [...value] : []);
    this.containers = listOf(props.containers);
    this.initContainers = listOf(props.initContainers);
    this.volumes = listOf(props.volumes);
    this.claimTemplates = listOf(props.volumeClaimTemplates);
  }

  /** Add a container. */
  public addContainer(container: SandboxContainerProps): void {
    this.containers.push(container);
  }

  /** Add an init container. */
  public addInitContainer(container: SandboxContainerProps): void {
    this.initContainers.push(container);
  }

  /** Add a Pod volume. */
  public addVolume(volume: SandboxVolume): void {
    this.volumes.push(volume);
  }

  /** Add a volume claim template. */
  public addVolumeClaimTemplate(template: VolumeClaimTemplate): void {
    this.claimTemplates.push(template);
  }

  /** Names of the regular containers, in order (the first one receives claim env by default). */
  public get containerNames(): string[] {
    return this.containers.map((c, i) => containerName(c, i));
  }

  /** Names of the init containers. */
  public get initContainerNames(): string[] {
    return this.initContainers.map((c, i) => c?.name ?? `init-${i}`);
  }

  /** Whether this blueprint asks for a headless Service. */
  public get service(): boolean | undefined {
    return this.blueprint.service;
  }

  /** The namespace of the object, when known (from its metadata or its Chart). */
  private get podNamespace(): string | undefined {
    try {
      return ApiObject.of(this).metadata.namespace;
    } catch {
      return undefined;
    }
  }

  /** @internal Problems with the blueprint, as `field: message` lines. */
  protected _validateBlueprint(errors: ErrorList): void {
    const p = this.blueprint;
    const ns = this.podNamespace;
    for (const list of ['containers', 'initContainers', 'volumes', 'volumeClaimTemplates', 'imagePullSecrets'] as const) _listOf<unknown>(errors, list, p[list]);
    if (this.containers.length === 0) {
      errors.prop('containers', 'at least one container is required; give containers when constructing, or add one with the add-container method before synth');
    }
    this.containers.forEach((c, i) => _validateContainer(errors, `containers[${i}]`, c, ns));
    this.initContainers.forEach((c, i) => _validateContainer(errors, `initContainers[${i}]`, c, ns));
    if (p.serviceAccount && p.serviceAccountName !== undefined) {
      errors.prop('serviceAccount', `and ${propName('serviceAccountName')} are both set; give one`);
    }
    _checkRef(errors, 'serviceAccount', p.serviceAccount, REFERENCED_KINDS.serviceAccount, ns);
    (Array.isArray(p.imagePullSecrets) ? p.imagePullSecrets : []).forEach((r, i) => _checkRef(errors, `imagePullSecrets[${i}]`, r, REFERENCED_KINDS.secret, ns));
    _checkRef(errors, 'priorityClass', p.priorityClass, REFERENCED_KINDS.priorityClass, undefined);
    const runtimeClass = p.runtimeClass && _runtimeClassOf(p.runtimeClass);
    const runtimeClassRef = runtimeClass && _runtimeClassRefOf(runtimeClass);
    runtimeClassRef?._check(errors, 'runtimeClass', REFERENCED_KINDS.runtimeClass, undefined);
    _checkNodeSelector(errors, 'nodeSelector', p.nodeSelector);
    _checkTolerations(errors, 'tolerations', p.tolerations);
    _checkAffinity(errors, 'affinity', p.affinity);
    _checkSpread(errors, 'topologySpreadConstraints', p.topologySpreadConstraints, p.podLabels);
    checkUnique(errors, 'containers[].name', [...this.containerNames, ...this.initContainerNames]);

    const claimNames = this.claimTemplates.map((t) => t.name);
    this.claimTemplates.forEach((t, i) => _validateVolumeClaimTemplate(errors, `volumeClaimTemplates[${i}]`, t));
    checkUnique(errors, 'volumeClaimTemplates[].name', claimNames);
    this.volumes.forEach((v, i) => {
      if (v instanceof SandboxVolume) v._validate(errors, `volumes[${i}]`, ns);
      else errors.prop(`volumes[${i}]`, `must be a SandboxVolume; make one with ${['emptyDir', 'configMap', 'secret', 'persistentVolumeClaim'].map((m) => staticMethodName('SandboxVolume', m)).join(', ')}`);
    });
    const volumeNames = [...this.volumes.map((v) => v?.name), ...claimNames];
    checkUnique(errors, 'volumes[].name (including volume claim templates)', volumeNames);
    const mounts = [...this.containers, ...this.initContainers].flatMap((c) => (Array.isArray(c?.volumeMounts) ? c.volumeMounts : []));
    for (const mount of mounts) {
      if (!volumeNames.includes(mount.volume)) {
        errors.prop('volumeMounts', `volume "${mount.volume}" is mounted but not defined; add a volume or a volume claim template of that name`);
      }
    }

    for (const map of ['podLabels', 'podAnnotations', 'nodeSelector'] as const) errors.prop(map, checkStringMap(p[map]));
    if (p.serviceAccountName !== undefined) errors.prop('serviceAccountName', checkDns1123Subdomain(p.serviceAccountName));
    _checkDuration(errors, 'terminationGracePeriod', p.terminationGracePeriod, true);
    _checkId(errors, 'security.fsGroup', p.security?.fsGroup);
    for (const flag of ['automountServiceAccountToken', 'runAsNonRoot', 'seccompRuntimeDefault', 'hardenContainers'] as const) {
      const value = p.security?.[flag];
      if (value !== undefined && typeof value !== 'boolean') errors.prop(`security.${flag}`, `must be true or false, got ${JSON.stringify(value)}`);
    }

    for (const [field, map, reserved] of [
      ['podLabels', this.blueprint.podLabels, isReservedLabelKey],
      ['podAnnotations', this.blueprint.podAnnotations, isReservedAnnotationKey],
    ] as const) {
      for (const [key, value] of Object.entries(map ?? {})) {
        errors.prop(`${field}["${key}"]`, checkQualifiedName(key));
        if (reserved(key)) {
          errors.prop(`${field}["${key}"]`, 'the agents.x-k8s.io/ and extensions.agents.x-k8s.io/ prefixes are reserved for the system and would be dropped; use your own domain');
        }
        if (field === 'podLabels') errors.prop(`${field}["${key}"]`, checkLabelValue(value));
        if (field === 'podLabels' && key === ROUTER_APP_LABEL.key && value === ROUTER_APP_LABEL.value) {
          errors.prop(`${field}["${key}"]`, `${key}=${value} is the sandbox router's label, which sandbox NetworkPolicies admit as the router, `
            + 'so the operator refuses to build a Pod carrying it; use another value');
        }
      }
    }
  }

  /** @internal The blueprint fields of the spec: podTemplate, volumeClaimTemplates, service. */
  protected _blueprintToKube(): { [key: string]: unknown } {
    const p = this.blueprint;
    const ns = this.podNamespace;
    const runtimeClass = p.runtimeClass && _runtimeClassOf(p.runtimeClass);
    const runtimeClassRef = runtimeClass && _runtimeClassRefOf(runtimeClass);
    const sec = p.security ?? {};
    const hardened = sec.hardenContainers ?? true;
    const podSecurityContext = dropUndefined({
      runAsNonRoot: (sec.runAsNonRoot ?? true) ? true : undefined,
      seccompProfile: (sec.seccompRuntimeDefault ?? true) ? { type: 'RuntimeDefault' } : undefined,
      fsGroup: sec.fsGroup,
    });
    const spec = dropUndefined({
      automountServiceAccountToken: sec.automountServiceAccountToken ?? false,
      runtimeClassName: runtimeClassRef
        ? runtimeClassRef._resolve('runtimeClass', REFERENCED_KINDS.runtimeClass, undefined) : runtimeClass?.runtimeClassName,
      serviceAccountName: _resolveRef('serviceAccount', p.serviceAccount, REFERENCED_KINDS.serviceAccount, ns) ?? p.serviceAccountName,
      imagePullSecrets: p.imagePullSecrets?.length
        ? p.imagePullSecrets.map((r, i) => ({ name: _resolveRef(`imagePullSecrets[${i}]`, r, REFERENCED_KINDS.secret, ns) })) : undefined,
      priorityClassName: _resolveRef('priorityClass', p.priorityClass, REFERENCED_KINDS.priorityClass, undefined),
      nodeSelector: p.nodeSelector,
      tolerations: _tolerationsToKube(p.tolerations),
      affinity: _affinityToKube(p.affinity),
      topologySpreadConstraints: _spreadToKube(p.topologySpreadConstraints, p.podLabels),
      terminationGracePeriodSeconds: p.terminationGracePeriod?.toSeconds(),
      securityContext: Object.keys(podSecurityContext).length > 0 ? podSecurityContext : undefined,
      initContainers: this.initContainers.length > 0
        ? this.initContainers.map((c, i) => _containerToKube(c, c.name ?? `init-${i}`, { hardened }, `initContainers[${i}]`, ns))
        : undefined,
      containers: this.containers.map((c, i) => _containerToKube(c, containerName(c, i), { hardened }, `containers[${i}]`, ns)),
      volumes: this.volumes.length > 0 ? this.volumes.map((v, i) => v._toKube(`volumes[${i}]`, ns)) : undefined,
    });
    return dropUndefined({
      podTemplate: {
        metadata: dropUndefined({ labels: p.podLabels, annotations: p.podAnnotations }),
        spec,
      },
      volumeClaimTemplates: this.claimTemplates.length > 0 ? this.claimTemplates.map(volumeClaimTemplateToKube) : undefined,
      service: p.service,
    });
  }
}

function containerName(c: SandboxContainerProps, index: number): string {
  return c?.name ?? (index === 0 ? 'sandbox' : `container-${index}`);
}

function checkUnique(errors: ErrorList, field: string, names: string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) errors.prop(field, `"${name}" is used twice; names must be unique`);
    seen.add(name);
  }
}
