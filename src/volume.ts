import { IConstruct } from 'constructs';
import { REFERENCED_KINDS, ReferencedKind } from './api/object-kinds';
import { ErrorList, checkDns1123Label, checkDns1123Subdomain, checkNonNegativeQuantity, checkPositiveQuantity } from './api/validation';
import { dropUndefined } from './container';
import { ObjectRef, _checkRef, _resolveRef } from './object-ref';

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

  /** The keys of a ConfigMap as files: a construct that defines one (a cdk8s-plus `ConfigMap`, a `KubeConfigMap`) or an `ObjectRef`. */
  public static fromConfigMap(name: string, configMap: ObjectRef | IConstruct): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.configMap, configMap, (n) => ({ configMap: { name: n } }));
  }

  /** The keys of a Secret as files: a construct that defines one (a cdk8s-plus `Secret`, a `KubeSecret`) or an `ObjectRef`. */
  public static fromSecret(name: string, secret: ObjectRef | IConstruct): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.secret, secret, (n) => ({ secret: { secretName: n } }));
  }

  /**
   * A PersistentVolumeClaim: a construct that defines one (a cdk8s-plus `PersistentVolumeClaim`, a
   * `KubePersistentVolumeClaim`) or an `ObjectRef`.
   */
  public static fromPersistentVolumeClaim(name: string, claim: ObjectRef | IConstruct, readOnly?: boolean): SandboxVolume {
    return new SandboxVolume(name, REFERENCED_KINDS.persistentVolumeClaim, claim,
      (n) => ({ persistentVolumeClaim: dropUndefined({ claimName: n, readOnly }) }));
  }

  /** The volume name that mounts refer to. */
  public readonly name: string;

  private constructor(
    name: string,
    private readonly kind?: ReferencedKind,
    private readonly ref?: ObjectRef | IConstruct,
    private readonly source?: (refName: string) => { [key: string]: unknown },
    private readonly fixedSource?: { [key: string]: unknown },
  ) {
    this.name = name;
  }

  /**
   * @internal Problems with the volume name, its source and the object it references, if any;
   * `field` names it, e.g. `volumes[0]`; `namespace` is the Pod's, when known.
   */
  public _validate(errors: ErrorList, field: string, namespace?: string): void {
    errors.prop(`${field}.name`, checkDns1123Label(this.name));
    if (this.ref) {
      _checkRef(errors, field, this.ref, this.kind!, namespace);
      return;
    }
    const s = (this.fixedSource ?? {}) as { emptyDir?: { sizeLimit?: string; medium?: string } };
    if (s.emptyDir?.sizeLimit !== undefined) errors.prop(`${field}.sizeLimit`, checkNonNegativeQuantity(s.emptyDir.sizeLimit));
    if (s.emptyDir?.medium !== undefined && !['', 'Memory', 'HugePages'].includes(s.emptyDir.medium) && !/^HugePages-/.test(String(s.emptyDir.medium))) {
      errors.prop(`${field}.medium`, `${JSON.stringify(s.emptyDir.medium)} is not a storage medium; use "Memory" for tmpfs, or leave it out for node disk`);
    }
  }

  /** @internal */
  public _toKube(field = 'volume', namespace?: string): { [key: string]: unknown } {
    const source = this.ref ? this.source!(_resolveRef(field, this.ref, this.kind!, namespace)!) : this.fixedSource!;
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

const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];

/** @internal Problems with a volume claim template; `field` names it, e.g. `volumeClaimTemplates[0]`. */
export function _validateVolumeClaimTemplate(errors: ErrorList, field: string, t: VolumeClaimTemplate): void {
  errors.prop(`${field}.name`, checkDns1123Label(t?.name));
  // The API server refuses a claim that requests no storage.
  errors.prop(`${field}.storage`, checkPositiveQuantity(t?.storage));
  if (t?.storageClassName !== undefined) errors.prop(`${field}.storageClassName`, checkDns1123Subdomain(t.storageClassName));
  if (t?.accessModes !== undefined) {
    if (!Array.isArray(t.accessModes)) {
      errors.prop(`${field}.accessModes`, `must be a list of ${ACCESS_MODES.join(', ')}`);
    } else {
      t.accessModes.filter((m) => !ACCESS_MODES.includes(m)).forEach((m) =>
        errors.prop(`${field}.accessModes`, `${JSON.stringify(m)} is not an access mode; use ${ACCESS_MODES.join(', ')}`));
    }
  }
  if (t?.volumeMode !== undefined && !['Filesystem', 'Block'].includes(t.volumeMode)) {
    errors.prop(`${field}.volumeMode`, `${JSON.stringify(t.volumeMode)} is not a volume mode; use Filesystem or Block`);
  }
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
