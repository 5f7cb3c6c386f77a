import { ApiObject } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { PART_OF_LABEL } from './api/crd-manifests';
import { REFERENCED_KINDS } from './api/object-kinds';
import { ErrorList, checkContainerResources, checkDns1123Subdomain } from './api/validation';
import { _guardChart } from './chart-guards';
import { dropUndefined } from './container';
import { ObjectRef, _dropClusterScopedNamespaces } from './object-ref';

/** A RuntimeClass a sandbox template can run under. */
export interface IRuntimeClass {
  /** The RuntimeClass name, put into `podTemplate.spec.runtimeClassName`. */
  readonly runtimeClassName: string;
}

/** Kata Containers hypervisors, with the handler names kata-deploy installs. */
export enum KataHypervisor {
  /** QEMU (`kata-qemu`), the most compatible. */
  QEMU = 'kata-qemu',
  /** Firecracker (`kata-fc`), the smallest footprint; needs a block-device snapshotter. */
  FIRECRACKER = 'kata-fc',
  /** Cloud Hypervisor (`kata-clh`). */
  CLOUD_HYPERVISOR = 'kata-clh',
}

/** A toleration for RuntimeClass scheduling. */
export interface RuntimeClassToleration {
  /** Taint key. */
  readonly key: string;
  /** @default - tolerate any value (operator Exists) */
  readonly value?: string;
  /** `NoSchedule`, `PreferNoSchedule` or `NoExecute`. @default - all effects */
  readonly effect?: string;
}

/** Options shared by the RuntimeClass presets. */
export interface SandboxRuntimeClassOptions {
  /** RuntimeClass name. @default - the handler name (`gvisor` for gVisor) */
  readonly name?: string;
  /** Node labels that nodes with this runtime carry; pods get them as nodeSelector. @default - none */
  readonly nodeSelector?: { [key: string]: string };
  /** Tolerations added to pods that use this class. @default - none */
  readonly tolerations?: RuntimeClassToleration[];
  /** Fixed per-pod overhead, such as `{ cpu: '250m', memory: '160Mi' }`. @default - the preset's overhead */
  readonly overhead?: { [resource: string]: string };
}

/** Props of {@link SandboxRuntimeClass}. */
export interface SandboxRuntimeClassProps extends SandboxRuntimeClassOptions {
  /** The CRI handler configured on the nodes (e.g. `runsc`). */
  readonly handler: string;
}

/**
 * A node.k8s.io/v1 RuntimeClass for sandbox isolation. Use the presets {@link SandboxRuntimeClass.gvisor}
 * and {@link SandboxRuntimeClass.kata}, or {@link SandboxRuntimeClass.fromName} for one the cluster has.
 */
export class SandboxRuntimeClass extends Construct implements IRuntimeClass {
  /** gVisor (handler `runsc`): a user-space kernel, low overhead, good syscall isolation. */
  public static gvisor(scope: Construct, id: string, options: SandboxRuntimeClassOptions = {}): SandboxRuntimeClass {
    return new SandboxRuntimeClass(scope, id, { name: 'gvisor', ...options, handler: 'runsc' });
  }

  /** Kata Containers: each sandbox in its own lightweight VM. Overhead defaults follow kata-deploy. */
  public static kata(scope: Construct, id: string, hypervisor: KataHypervisor, options: SandboxRuntimeClassOptions = {}): SandboxRuntimeClass {
    const overhead = hypervisor === KataHypervisor.QEMU ? { cpu: '250m', memory: '160Mi' } : { cpu: '250m', memory: '130Mi' };
    return new SandboxRuntimeClass(scope, id, { overhead, ...options, handler: hypervisor });
  }

  /** A RuntimeClass that already exists in the cluster. */
  public static fromName(runtimeClassName: string): IRuntimeClass {
    return { runtimeClassName };
  }

  /**
   * The RuntimeClass defined by any construct that wraps one, such as a `KubeRuntimeClass`; checked
   * at synth to be a node.k8s.io RuntimeClass.
   */
  public static fromConstruct(construct: IConstruct): IRuntimeClass {
    return new RuntimeClassReference(ObjectRef.fromConstruct(construct));
  }

  public readonly runtimeClassName: string;
  /** The CRI handler. */
  public readonly handler: string;
  /** The underlying ApiObject (escape hatch). */
  public readonly apiObject: ApiObject;

  public constructor(scope: Construct, id: string, props: SandboxRuntimeClassProps) {
    super(scope, id);
    _guardChart(this);
    this.handler = props.handler;
    this.runtimeClassName = props.name ?? props.handler;
    const errors = new ErrorList();
    errors.prop('name', checkDns1123Subdomain(this.runtimeClassName));
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(props.handler) || props.handler.length > 63) {
      errors.prop('handler', `"${props.handler}" must be a DNS-1123 label, the handler name in the nodes' CRI config`);
    }
    // The API server checks podFixed as it checks a container's limits (names, amounts of 0 or more,
    // whole extended resources, whole huge pages next to cpu or memory).
    checkContainerResources(errors, 'overhead', props.overhead === undefined ? undefined : { limits: props.overhead }, { limits: 'overhead' });
    errors.throwIfAny(`SandboxRuntimeClass ${this.node.path}`);

    const scheduling = dropUndefined({
      nodeSelector: props.nodeSelector,
      tolerations: props.tolerations?.map((t) => dropUndefined({
        key: t.key,
        operator: t.value === undefined ? 'Exists' : 'Equal',
        value: t.value,
        effect: t.effect,
      })),
    });
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: this.runtimeClassName, labels: { ...PART_OF_LABEL } },
      handler: props.handler,
      ...(props.overhead ? { overhead: { podFixed: props.overhead } } : {}),
      ...(Object.keys(scheduling).length > 0 ? { scheduling } : {}),
    });
    _dropClusterScopedNamespaces(this);
  }
}

/** A RuntimeClass known through a construct; the kind is checked where it is used. */
class RuntimeClassReference implements IRuntimeClass {
  public constructor(public readonly _ref: ObjectRef) {}

  public get runtimeClassName(): string {
    return this._ref._resolve('runtimeClass', REFERENCED_KINDS.runtimeClass, undefined);
  }
}

/**
 * @internal A `runtimeClass` prop as a runtime class: one already (a SandboxRuntimeClass, `fromName`,
 * `fromConstruct`), or any construct that wraps a RuntimeClass (an imported `KubeRuntimeClass`), taken
 * as {@link SandboxRuntimeClass.fromConstruct} takes it.
 */
export function _runtimeClassOf(value: IRuntimeClass | IConstruct): IRuntimeClass {
  // `in`, not a read: a construct reference's name resolves only at synth.
  return 'runtimeClassName' in value ? value as IRuntimeClass : new RuntimeClassReference(ObjectRef.fromConstruct(value as IConstruct));
}

/** @internal The construct reference behind a runtime class from {@link SandboxRuntimeClass.fromConstruct}, if it is one. */
export function _runtimeClassRefOf(runtimeClass: IRuntimeClass): ObjectRef | undefined {
  return runtimeClass instanceof RuntimeClassReference ? runtimeClass._ref : undefined;
}
