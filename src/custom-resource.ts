import { ApiObject, ApiObjectMetadata, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { KindNames, apiVersionOf } from './api/groups';

/**
 * @internal The ApiObject of one of our kinds, with id `Resource` (so `ApiObject.of` finds it) and
 * a spec produced at synth, so mutators such as `addContainer` work until then.
 */
export function _customResource(scope: Construct, names: KindNames, metadata: ApiObjectMetadata | undefined, spec: () => unknown): ApiObject {
  return new ApiObject(scope, 'Resource', {
    apiVersion: apiVersionOf(names),
    kind: names.kind,
    metadata,
    spec: Lazy.any({ produce: spec }),
  });
}
