import { REFERENCED_KINDS, ReferencedKind } from './api/object-kinds';
import { ErrorList } from './api/validation';
import { dropUndefined } from './container';
import { ObjectRef } from './object-ref';

/** Options of an emptyDir volume. */
export interface EmptyDirOptions {
  /** `Memory` for tmpfs. @default - node disk */
  readonly medium?: string;
  /** Size limit as a quantity, such as `1Gi`. @default - unlimited */
  readonly sizeLimit?: string;
}

/** A volume of the sandbox Pod (besides those from volume claim templates). */
export class SandboxVolume {
  /** Scratch space that lives as long as the Pod (lost on suspend). */
  public static emptyDir(name: string, options: EmptyDirOptions = {}): SandboxVolume {
    return new SandboxVolume(name, undefined, undefined, undefined,
      { emptyDir: dropUndefined({ medium: options.medium, sizeLimit: options.sizeLimit }) });
  }

  /** The keys of a ConfigMap as files (by name; {@link SandboxVolume.fromConfigMap} also takes a construct). */
  public static configMap(name: string, configMapName: string): SandboxVolume {
    return SandboxVolume.fromConfigMap(name, ObjectRef.fromName(configMapName));
  }

  /** The keys of a Secret as files (by name; {@link SandboxVolume.fromSecret} also takes a construct). */
  public static secret(name: string, secretName: string): SandboxVolume {
    return SandboxVolume.fromSecret(name, ObjectRef.fromName(secretName));
  }

  /** An existing PersistentVolumeClaim (by name; {@link SandboxVolume.fromPersistentVolumeClaim} also takes a construct). */
  public static persistentVolumeClaim(name: string, claimName: string, readOnly?: boolean): SandboxVolume {
    return SandboxVolume.fromPersistentVolumeClaim(name, ObjectRef.fromName(claimName), readOnly);
  }

  /** The keys of a ConfigMap as files: a cdk8s-plus `ConfigMap`, a `KubeConfigMap`, or a name. */
  public static fromConfigMap(name: string, configMap: ObjectRef): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.configMap, configMap, (n) => ({ configMap: { name: n } }));
  }

  /** The keys of a Secret as files: a cdk8s-plus `Secret`, a `KubeSecret`, or a name. */
  public static fromSecret(name: string, secret: ObjectRef): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.secret, secret, (n) => ({ secret: { secretName: n } }));
  }

  /** A PersistentVolumeClaim: a cdk8s-plus `PersistentVolumeClaim`, a `KubePersistentVolumeClaim`, or a name. */
  public static fromPersistentVolumeClaim(name: string, claim: ObjectRef, readOnly?: boolean): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.persistentVolumeClaim, claim,
      (n) => ({ persistentVolumeClaim: dropUndefined({ claimName: n, readOnly }) }));
  }

  /** The volume name that mounts refer to. */
  public readonly name: string;

  private constructor(
    name: string,
    private readonly kind?: ReferencedKind,
    private readonly ref?: ObjectRef,
    private readonly source?: (refName: string) => { [key: string]: unknown },
    private readonly fixedSource?: { [key: string]: unknown },
  ) {
    this.name = name;
  }

  /** @internal Check the referenced object, if any. */
  public _validate(errors: ErrorList, field: string, namespace: string | undefined): void {
    if (this.ref) this.ref._check(errors, field, this.kind!, namespace);
  }

  /** @internal */
  public _toKube(field = 'volume', namespace?: string): { [key: string]: unknown } {
    const source = this.ref ? this.source!(this.ref._resolve(field, this.kind!, namespace)) : this.fixedSource!;
    return { name: this.name, ...source };
  }
}

/** A PersistentVolumeClaim created per Sandbox (`<name>-<sandbox>`) and mounted as volume `<name>`. */
export interface VolumeClaimTemplate {
  /** Volume name; also the PVC name prefix. */
  readonly name: string;
  /** Requested size, such as `10Gi`. */
  readonly storage: string;
  /** @default - the cluster's default StorageClass */
  readonly storageClassName?: string;
  /** @default ['ReadWriteOnce'] */
  readonly accessModes?: string[];
  /** `Filesystem` or `Block`. @default - Filesystem */
  readonly volumeMode?: string;
  /** Labels of the PVC. @default - none */
  readonly labels?: { [key: string]: string };
  /** Annotations of the PVC. @default - none */
  readonly annotations?: { [key: string]: string };
}

/** @internal A volume claim template as CRD JSON. */
export function volumeClaimTemplateToKube(t: VolumeClaimTemplate): { [key: string]: unknown } {
  return {
    metadata: dropUndefined({ name: t.name, labels: t.labels, annotations: t.annotations }),
    spec: dropUndefined({
      accessModes: t.accessModes ?? ['ReadWriteOnce'],
      resources: { requests: { storage: t.storage } },
      storageClassName: t.storageClassName,
      volumeMode: t.volumeMode,
    }),
  };
}
