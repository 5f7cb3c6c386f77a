import { ErrorList, checkDns1123Label, checkDns1123Subdomain, checkQuantity } from './api/validation';
import { dropUndefined } from './container';

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
    return new SandboxVolume(name, { emptyDir: dropUndefined({ medium: options.medium, sizeLimit: options.sizeLimit }) });
  }

  /** The keys of a ConfigMap as files. */
  public static configMap(name: string, configMapName: string): SandboxVolume {
    return new SandboxVolume(name, { configMap: { name: configMapName } });
  }

  /** The keys of a Secret as files. */
  public static secret(name: string, secretName: string): SandboxVolume {
    return new SandboxVolume(name, { secret: { secretName } });
  }

  /** An existing PersistentVolumeClaim. */
  public static persistentVolumeClaim(name: string, claimName: string, readOnly?: boolean): SandboxVolume {
    return new SandboxVolume(name, { persistentVolumeClaim: dropUndefined({ claimName, readOnly }) });
  }

  /** The volume name that mounts refer to. */
  public readonly name: string;
  private readonly source: { [key: string]: unknown };

  private constructor(name: string, source: { [key: string]: unknown }) {
    this.name = name;
    this.source = source;
  }

  /** @internal Problems with the volume name and source; `field` names it, e.g. `volumes[0]`. */
  public _validate(errors: ErrorList, field: string): void {
    errors.check(`${field}.name`, checkDns1123Label(this.name));
    const s = this.source as {
      emptyDir?: { sizeLimit?: string; medium?: string };
      configMap?: { name: string };
      secret?: { secretName: string };
      persistentVolumeClaim?: { claimName: string };
    };
    if (s.emptyDir?.sizeLimit !== undefined) errors.check(`${field}.sizeLimit`, checkQuantity(s.emptyDir.sizeLimit));
    if (s.emptyDir?.medium !== undefined && !['', 'Memory', 'HugePages'].includes(s.emptyDir.medium) && !/^HugePages-/.test(String(s.emptyDir.medium))) {
      errors.check(`${field}.medium`, `${JSON.stringify(s.emptyDir.medium)} is not a storage medium; use "Memory" for tmpfs, or leave it out for node disk`);
    }
    if (s.configMap) errors.check(`${field}.configMap name`, checkDns1123Subdomain(s.configMap.name));
    if (s.secret) errors.check(`${field}.secretName`, checkDns1123Subdomain(s.secret.secretName));
    if (s.persistentVolumeClaim) errors.check(`${field}.claimName`, checkDns1123Subdomain(s.persistentVolumeClaim.claimName));
  }

  /** @internal */
  public _toKube(): { [key: string]: unknown } {
    return { name: this.name, ...this.source };
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
  errors.check(`${field}.name`, checkDns1123Label(t?.name));
  errors.check(`${field}.storage`, checkQuantity(t?.storage));
  if (t?.storageClassName !== undefined) errors.check(`${field}.storageClassName`, checkDns1123Subdomain(t.storageClassName));
  if (t?.accessModes !== undefined) {
    if (!Array.isArray(t.accessModes)) {
      errors.check(`${field}.accessModes`, `must be a list of ${ACCESS_MODES.join(', ')}`);
    } else {
      t.accessModes.filter((m) => !ACCESS_MODES.includes(m)).forEach((m) =>
        errors.check(`${field}.accessModes`, `${JSON.stringify(m)} is not an access mode; use ${ACCESS_MODES.join(', ')}`));
    }
  }
  if (t?.volumeMode !== undefined && !['Filesystem', 'Block'].includes(t.volumeMode)) {
    errors.check(`${field}.volumeMode`, `${JSON.stringify(t.volumeMode)} is not a volume mode; use Filesystem or Block`);
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
