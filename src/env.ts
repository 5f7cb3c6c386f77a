import { IConstruct } from 'constructs';
import { REFERENCED_KINDS } from './api/object-kinds';
import { ErrorList } from './api/validation';
import { dropUndefined } from './container';
import { ObjectRef, _checkRef, _resolveRef } from './object-ref';

/** Options of a value taken from a key of a Secret or ConfigMap. */
export interface EnvKeyOptions {
  /** Start the container even when the object or key is missing. @default false */
  readonly optional?: boolean;
}

/**
 * The value of an environment variable taken from somewhere else: a Secret or ConfigMap key, or a
 * field of the Pod (`valueFrom`). Literal values go in `env`.
 */
export class EnvValue {
  /** A key of a Secret (`secretKeyRef`): a construct that defines the Secret (a cdk8s-plus `Secret`, a `KubeSecret`) or an `ObjectRef`. */
  public static fromSecretKey(secret: ObjectRef | IConstruct, key: string, options: EnvKeyOptions = {}): EnvValue {
    return new EnvValue('secretKeyRef', secret, key, options.optional);
  }

  /** A key of a ConfigMap (`configMapKeyRef`): a construct that defines the ConfigMap (a cdk8s-plus `ConfigMap`, a `KubeConfigMap`) or an `ObjectRef`. */
  public static fromConfigMapKey(configMap: ObjectRef | IConstruct, key: string, options: EnvKeyOptions = {}): EnvValue {
    return new EnvValue('configMapKeyRef', configMap, key, options.optional);
  }

  /** A field of the Pod (`fieldRef`), such as `metadata.name`, `metadata.namespace` or `status.podIP`. */
  public static fromField(fieldPath: string): EnvValue {
    return new EnvValue('fieldRef', undefined, fieldPath, undefined);
  }

  private constructor(
    private readonly source: 'secretKeyRef' | 'configMapKeyRef' | 'fieldRef',
    private readonly ref: ObjectRef | IConstruct | undefined,
    private readonly keyOrPath: string,
    private readonly optional: boolean | undefined,
  ) {}

  /** @internal */
  public _validate(errors: ErrorList, field: string, namespace: string | undefined): void {
    if (this.source === 'fieldRef') {
      if (!FIELD_PATH.test(this.keyOrPath)) {
        errors.prop(field, `"${this.keyOrPath}" is not a Pod field the downward API offers; use metadata.name, metadata.namespace, metadata.uid, metadata.labels['<key>'], metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.hostIP or status.podIP`);
      }
      return;
    }
    _checkRef(errors, field, this.ref, this.source === 'secretKeyRef' ? REFERENCED_KINDS.secret : REFERENCED_KINDS.configMap, namespace);
    if (!CONFIG_KEY.test(this.keyOrPath)) errors.prop(`${field}.key`, `"${this.keyOrPath}" must be letters, digits, '-', '_' or '.'`);
  }

  /** @internal The `valueFrom` JSON. */
  public _toKube(field: string, namespace: string | undefined): { [key: string]: unknown } {
    if (this.source === 'fieldRef') return { fieldRef: { fieldPath: this.keyOrPath } };
    const kind = this.source === 'secretKeyRef' ? REFERENCED_KINDS.secret : REFERENCED_KINDS.configMap;
    return { [this.source]: dropUndefined({ name: _resolveRef(field, this.ref, kind, namespace), key: this.keyOrPath, optional: this.optional }) };
  }
}

/** Options of {@link EnvFrom}. */
export interface EnvFromOptions {
  /** Prefix of every variable name. @default - none */
  readonly prefix?: string;
  /** Start the container even when the object is missing. @default false */
  readonly optional?: boolean;
}

/** Every key of a Secret or ConfigMap as environment variables (`envFrom`). */
export class EnvFrom {
  /** All keys of a Secret: a construct that defines it (a cdk8s-plus `Secret`, a `KubeSecret`) or an `ObjectRef`. */
  public static secret(secret: ObjectRef | IConstruct, options: EnvFromOptions = {}): EnvFrom {
    return new EnvFrom('secretRef', secret, options);
  }

  /** All keys of a ConfigMap: a construct that defines it (a cdk8s-plus `ConfigMap`, a `KubeConfigMap`) or an `ObjectRef`. */
  public static configMap(configMap: ObjectRef | IConstruct, options: EnvFromOptions = {}): EnvFrom {
    return new EnvFrom('configMapRef', configMap, options);
  }

  private constructor(private readonly source: 'secretRef' | 'configMapRef', private readonly ref: ObjectRef | IConstruct, private readonly options: EnvFromOptions) {}

  private get kind() {
    return this.source === 'secretRef' ? REFERENCED_KINDS.secret : REFERENCED_KINDS.configMap;
  }

  /** @internal */
  public _validate(errors: ErrorList, field: string, namespace: string | undefined): void {
    _checkRef(errors, field, this.ref, this.kind, namespace);
    if (this.options.prefix !== undefined && !ENV_NAME.test(this.options.prefix)) {
      errors.prop(`${field}.prefix`, `"${this.options.prefix}" must be letters, digits, '_', '-' or '.', not starting with a digit`);
    }
  }

  /** @internal */
  public _toKube(field: string, namespace: string | undefined): { [key: string]: unknown } {
    return dropUndefined({
      prefix: this.options.prefix,
      [this.source]: dropUndefined({ name: _resolveRef(field, this.ref, this.kind, namespace), optional: this.options.optional }),
    });
  }
}

// Environment variable names: Kubernetes accepts any printable name without '='; we keep to the portable set.
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** @internal What is wrong with `name` as an environment variable name; undefined when nothing is. */
export function _checkEnvName(name: string): string | undefined {
  return ENV_NAME.test(name) ? undefined : `"${name}" is not an environment variable name; use letters, digits, '_', '-' or '.', not starting with a digit, such as "HTTPS_PROXY"`;
}
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const FIELD_PATH = /^(metadata\.(name|namespace|uid)|metadata\.(labels|annotations)\['[^']+'\]|spec\.(nodeName|serviceAccountName)|status\.(hostIP|hostIPs|podIP|podIPs))$/;

