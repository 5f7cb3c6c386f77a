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
