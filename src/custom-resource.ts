import { ApiObject, ApiObjectMetadata, Duration, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { KindNames, apiVersionOf } from './api/groups';
import { SANDBOX_CLAIM_SCHEMA, SANDBOX_SCHEMA, SANDBOX_TEMPLATE_SCHEMA, SANDBOX_WARM_POOL_SCHEMA } from './api/schema';
import { describeValue, schemaValueErrors } from './api/schema-values';
import { ErrorList } from './api/validation';
import { _guardChart } from './chart-guards';

/**
 * @internal The ApiObject of one of our kinds, with id `Resource` (so `ApiObject.of` finds it) and
 * a spec produced at synth, so mutators such as `addContainer` work until then.
 */
export function _customResource(scope: Construct, names: KindNames, metadata: ApiObjectMetadata | undefined, spec: () => unknown): ApiObject {
  _guardChart(scope);
  return new ApiObject(scope, 'Resource', {
    apiVersion: apiVersionOf(names),
    kind: names.kind,
    metadata,
    spec: Lazy.any({ produce: spec }),
  });
}

const SPEC_SCHEMAS: { readonly [kind: string]: any } = {
  Sandbox: SANDBOX_SCHEMA, SandboxTemplate: SANDBOX_TEMPLATE_SCHEMA, SandboxWarmPool: SANDBOX_WARM_POOL_SCHEMA, SandboxClaim: SANDBOX_CLAIM_SCHEMA,
};

/**
 * @internal Check the rendered spec against the kind's CRD schema, the last line of defence against
 * props of the wrong type (jsii callers can pass any value) or outside the allowed values: each
 * problem names the manifest field (`spec.podTemplate.spec.containers[0].imagePullPolicy`). Runs
 * only when the construct's own checks found nothing, so a problem is reported once, by prop name.
 */
export function _checkSpecSchema(errors: ErrorList, names: KindNames, render: () => unknown): void {
  if (errors.all.length > 0) return;
  for (const line of schemaValueErrors(SPEC_SCHEMAS[names.kind].properties.spec, render(), 'spec')) {
    const colon = line.indexOf(': ');
    errors.field(line.slice(0, colon), line.slice(colon + 2));
  }
}

/**
 * @internal Check an optional Duration prop (jsii callers can pass any value); with `wholeSeconds`,
 * it must also be a whole number of seconds of at most `maxSeconds`.
 */
export function _checkDuration(errors: ErrorList, field: string, value: unknown, wholeSeconds: boolean, maxSeconds = 2147483647): void {
  if (value === undefined) return;
  if (!(value instanceof Duration)) {
    errors.prop(field, `must be a Duration, got ${describeValue(value)}; use a Duration such as Duration.seconds(30)`);
    return;
  }
  if (wholeSeconds && (value.toMilliseconds() % 1000 !== 0 || value.toMilliseconds() / 1000 > maxSeconds)) {
    errors.prop(field, `must be a whole number of seconds of at most ${maxSeconds}, such as Duration.seconds(30) (it is ${value.toMilliseconds()} ms)`);
  }
}
