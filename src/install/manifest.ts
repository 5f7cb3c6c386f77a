import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { PART_OF_LABEL } from '../api/crd-manifests';

/** The operator's name: its ServiceAccount, Deployment, ClusterRole and the prefix of its other objects. */
export const CONTROLLER = 'agent-sandbox-controller';
export const CONTROLLER_LABELS = { app: CONTROLLER, ...PART_OF_LABEL };

/** A namespaced object of the install, labelled as the operator's unless `labels` says otherwise. */
export function namespaced(scope: Construct, id: string, apiVersion: string, kind: string, name: string, namespace: string,
  body: object, labels: { [key: string]: string } = CONTROLLER_LABELS): ApiObject {
  return new ApiObject(scope, id, { apiVersion, kind, metadata: { name, namespace, labels: { ...labels } }, ...body });
}

/** Make every other ApiObject under `scope` depend on `first`, so cdk8s emits `first` at the top. */
export function orderFirst(scope: Construct, first: ApiObject[]): void {
  first.forEach((obj, i) => { if (i > 0) obj.addDependency(...first.slice(0, i)); });
  for (const child of scope.node.findAll()) {
    if (child instanceof ApiObject && !first.includes(child)) child.addDependency(...first);
  }
}
