import { ApiObject, JsonPatch } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { CLUSTER_SCOPED_KINDS, ReferencedKind, groupOf } from './api/object-kinds';
import { staticMethodName } from './api/spelling';
import { ErrorList, checkDns1123Subdomain, propError } from './api/validation';

/**
 * A Kubernetes object that a prop refers to (a ServiceAccount, Secret, ConfigMap, PVC,
 * RuntimeClass, PriorityClass...): either by name, or by any construct that wraps an `ApiObject`
 * of the right kind, such as a cdk8s-plus `ServiceAccount` or `Secret`, an imported L1
 * (`KubeSecret`), or one of this library's constructs. Props and arguments that take a reference
 * also take such a construct itself, which is the same as passing `ObjectRef.fromConstruct` of it.
 * Construct references are resolved with `ApiObject.of(construct)` and checked at synth: the kind
 * must be the one the prop expects, and a namespaced object must be in the namespace of the object
 * that uses it.
 */
export class ObjectRef {
  /** An object by name, as it exists (or will exist) in the cluster. */
  public static fromName(name: string): ObjectRef {
    return new ObjectRef(name, undefined);
  }

  /** The object that `construct` defines, found with `ApiObject.of(construct)`. */
  public static fromConstruct(construct: IConstruct): ObjectRef {
    return new ObjectRef(undefined, construct);
  }

  private constructor(private readonly fixedName: string | undefined, private readonly construct: IConstruct | undefined) {}

  /**
   * The referenced name. For a construct reference, the name of its ApiObject; throws when the
   * construct wraps none.
   */
  public get name(): string {
    return this.fixedName ?? ApiObject.of(this.construct!).name;
  }

  /**
   * @internal What is wrong with this reference for `field`, which expects `expected`, from an
   * object in `namespace` (when known); undefined when nothing is.
   */
  public _problem(expected: ReferencedKind, namespace: string | undefined): string | undefined {
    if (this.fixedName !== undefined) return checkDns1123Subdomain(this.fixedName);
    let obj: ApiObject;
    try {
      obj = ApiObject.of(this.construct!);
    } catch {
      return `construct ${this.construct!.node.path} defines no Kubernetes object; pass a construct that wraps a ${expected.kind} (or its ApiObject), or refer to the ${expected.kind} by name with ${staticMethodName('ObjectRef', 'fromName')}`;
    }
    const group = groupOf(obj.apiVersion);
    if (obj.kind !== expected.kind || group !== expected.group) {
      const want = expected.group ? `${expected.kind} (${expected.group})` : expected.kind;
      return `construct ${obj.node.path} is a ${obj.kind} (${obj.apiVersion}) but a ${want} is expected; pass a ${expected.kind}, or refer to one by name with ${staticMethodName('ObjectRef', 'fromName')}`;
    }
    const theirs = obj.metadata.namespace;
    if (expected.namespaced && namespace !== undefined && theirs !== undefined && theirs !== namespace) {
      return `${expected.kind} "${obj.name}" is in namespace "${theirs}" but it is used from namespace "${namespace}"; a Pod can only use objects of its own namespace, so define it in "${namespace}"`;
    }
    return undefined;
  }

  /** @internal The name, after checking the reference; throws with `field` in the message when it is wrong. */
  public _resolve(field: string, expected: ReferencedKind, namespace: string | undefined): string {
    const problem = this._problem(expected, namespace);
    if (problem !== undefined) throw propError(field, problem);
    return this.name;
  }

  /** @internal Record a problem of this reference under `field`. */
  public _check(errors: ErrorList, field: string, expected: ReferencedKind, namespace: string | undefined): void {
    errors.prop(field, this._problem(expected, namespace));
  }
}

/**
 * @internal The reference that a reference prop or argument holds: an `ObjectRef` as is, or a
 * construct (a cdk8s-plus object, an imported L1, an `ApiObject`, one of this library's constructs)
 * as `ObjectRef.fromConstruct` takes it. Undefined for anything else, which jsii callers can pass.
 */
export function _refOf(value: unknown): ObjectRef | undefined {
  if (value instanceof ObjectRef) return value;
  if (Construct.isConstruct(value)) return ObjectRef.fromConstruct(value);
  return undefined;
}

/**
 * @internal Check the reference prop `field` (an `ObjectRef` or a construct), which must refer to an
 * `expected` object, from an object in `namespace` when known: a value that is neither, a construct
 * of another kind or a bad name is recorded in `errors`. Nothing is recorded for undefined.
 */
export function _checkRef(errors: ErrorList, field: string, value: unknown, expected: ReferencedKind, namespace: string | undefined): void {
  if (value === undefined) return;
  const ref = _refOf(value);
  if (ref === undefined) {
    errors.prop(field, `must be a ${expected.kind}: pass a construct that defines one (such as a cdk8s-plus ${expected.kind}), `
      + `or refer to it by name with ${staticMethodName('ObjectRef', 'fromName')}`);
    return;
  }
  ref._check(errors, field, expected, namespace);
}

/**
 * @internal The name that the reference prop `field` refers to (undefined when it is unset), after
 * the checks of {@link _checkRef}; throws naming `field` when the reference is wrong.
 */
export function _resolveRef(field: string, value: unknown, expected: ReferencedKind, namespace: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const ref = _refOf(value);
  if (ref === undefined) {
    const errors = new ErrorList();
    _checkRef(errors, field, value, expected, namespace);
    throw new Error(errors.all[0]);
  }
  return ref._resolve(field, expected, namespace);
}

/**
 * @internal Remove metadata.namespace from every cluster-scoped ApiObject under `scope` (a Chart with
 * a namespace gives one to every object it holds).
 */
export function _dropClusterScopedNamespaces(scope: IConstruct): void {
  for (const child of scope.node.findAll()) {
    if (!(child instanceof ApiObject)) continue;
    const key = `${groupOf(child.apiVersion)}/${child.kind}`;
    if (CLUSTER_SCOPED_KINDS.has(key) && child.metadata.namespace !== undefined && !(child as any)[DROPPED]) {
      child.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
      Object.defineProperty(child, DROPPED, { value: true });
    }
  }
}

const DROPPED = Symbol('cdk8s-agent-sandbox.namespace-dropped');
