/** The Sandbox reconciler over the fake API server and its (lagging) caches, as the unit tests drive it. */
import { SandboxAnnotations } from '#api/labels';
import { NOW, sandbox } from './fixtures';
import type { Deferral } from '../../../src/controllers/claims-first';
import { SandboxReconciler } from '../../../src/controllers/sandbox/reconcile';
import { CONTROLLER_UID_INDEX, controllerUidIndex, type PersistentVolumeClaim, type Pod, type Sandbox, type Service } from '../../../src/model';
import type { KubeObject } from '../../../src/runtime/types';
import { FakeClient, FakeStore } from '../../fake-kube';

export const KEY = 'team-a/my-sandbox';
const RESOURCE_OF_KIND: Record<string, string> = { Sandbox: 'sandboxes', Pod: 'pods', Service: 'services', PersistentVolumeClaim: 'persistentvolumeclaims' };
const resourceOf = (o: KubeObject) => RESOURCE_OF_KIND[o.kind ?? ''];
const byUid = { [CONTROLLER_UID_INDEX]: controllerUidIndex };

export function setup(
  sb: Sandbox | undefined,
  children: { pods?: Pod[]; services?: Service[]; pvcs?: PersistentVolumeClaim[] } = {},
  extra: {
    progressStatusWindowMs?: number;
    warmMemberProgressWindowMs?: number;
    now?: () => number;
    deferral?: Deferral;
    idleSuspended?: (sb: Sandbox) => void;
  } = {},
) {
  const objects = [...(sb ? [sb] : []), ...(children.pods ?? []), ...(children.services ?? []), ...(children.pvcs ?? [])];
  const client = new FakeClient(() => NOW).seed(resourceOf, ...objects);
  const stores = {
    sandboxes: new FakeStore<Sandbox>().put(...(sb ? [sb] : [])),
    pods: new FakeStore<Pod>(byUid).put(...(children.pods ?? [])),
    services: new FakeStore<Service>(byUid).put(...(children.services ?? [])),
    pvcs: new FakeStore<PersistentVolumeClaim>(byUid).put(...(children.pvcs ?? [])),
  };
  const reconciler = new SandboxReconciler({ client, ...stores, clusterDomain: 'cluster.local', now: () => NOW, ...extra });
  reconciler.follow('pod', stores.pods);
  reconciler.follow('service', stores.services);
  reconciler.follow('pvc', stores.pvcs);
  return { client, stores, reconciler };
}

export type Stores = ReturnType<typeof setup>['stores'];

/** Every watch caught up: the caches show the server's objects. */
export function catchUp(client: FakeClient, stores: Stores): void {
  stores.sandboxes.syncFrom(client, 'sandboxes');
  stores.pods.syncFrom(client, 'pods');
  stores.services.syncFrom(client, 'services');
  stores.pvcs.syncFrom(client, 'persistentvolumeclaims');
}

/** The writes of one more pass. */
export async function pass(client: FakeClient, reconciler: SandboxReconciler): Promise<string[]> {
  client.calls.length = 0;
  await reconciler.reconcile(KEY);
  return client.writes;
}

export function statusBody(client: FakeClient): any {
  return client.calls.find((c) => c.verb === 'patch' && c.options?.subresource === 'status')?.body.status;
}

/** A Sandbox whose Pod was created: it carries the pod-name annotation. */
export const created = sandbox({ annotations: { [SandboxAnnotations.POD_NAME]: 'my-sandbox' } });
