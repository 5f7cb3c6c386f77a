import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { PART_OF_LABEL } from '../api/crd-manifests';
import { NetworkPolicySpecJson, allSandboxPodsSelector, sandboxTemplateSelector } from '../api/network-policy-defaults';

/** A networking.k8s.io/v1 NetworkPolicy as a plain ApiObject, so JSON patches reach every field. */
export function networkPolicyObject(scope: Construct, metadata: ApiObjectMetadata | undefined, spec: NetworkPolicySpecJson): ApiObject {
  return new ApiObject(scope, 'Resource', {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { ...metadata, labels: { ...PART_OF_LABEL, ...metadata?.labels } },
    spec: clone(spec),
  });
}

/** The Pods of one SandboxTemplate, or every sandbox Pod (bare ones included) when no template is named. */
export function podSelectorFor(templateName: string | undefined) {
  return templateName === undefined ? allSandboxPodsSelector() : sandboxTemplateSelector(templateName);
}

/** Value objects hand out copies, so editing the JSON of one rule cannot change the peer or policy it came from. */
export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value));
}
