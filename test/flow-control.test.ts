import { Testing } from 'cdk8s';
import { SandboxFlowControl, SandboxFlowControlProps } from '../src/flow-control';

function synth(props: SandboxFlowControlProps = {}): any[] {
  const chart = Testing.chart();
  new SandboxFlowControl(chart, 'apf', props);
  return Testing.synth(chart);
}

function byKindAndName(objects: any[], kind: string, name: string): any {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}

/** A request as API Priority and Fairness classifies it; `namespace` unset means cluster scope. */
interface Request {
  readonly user: { readonly name: string; readonly namespace: string };
  readonly verb: string;
  readonly apiGroup?: string;
  readonly resource?: string;
  readonly namespace?: string;
  readonly nonResourceURL?: string;
}

const has = (list: string[] | undefined, value: string) => (list ?? []).some((v) => v === '*' || v === value);

function ruleMatches(rule: any, req: Request): boolean {
  const subject = rule.subjects.some((s: any) => s.kind === 'ServiceAccount'
    && (s.serviceAccount.name === '*' || s.serviceAccount.name === req.user.name) && s.serviceAccount.namespace === req.user.namespace);
  if (!subject) return false;
  if (req.nonResourceURL !== undefined) {
    return (rule.nonResourceRules ?? []).some((r: any) => has(r.verbs, req.verb) && has(r.nonResourceURLs, req.nonResourceURL!));
  }
  return (rule.resourceRules ?? []).some((r: any) => has(r.verbs, req.verb) && has(r.apiGroups, req.apiGroup!) && has(r.resources, req.resource!)
    && (req.namespace === undefined ? r.clusterScope === true : has(r.namespaces, req.namespace)));
}

/** The FlowSchema the API server picks for `req` among `objects`: the matching one of lowest precedence. */
function flowSchemaFor(objects: any[], req: Request): any | undefined {
  return objects.filter((o) => o.kind === 'FlowSchema')
    .sort((a, b) => a.spec.matchingPrecedence - b.spec.matchingPrecedence)
    .find((schema) => schema.spec.rules.some((rule: any) => ruleMatches(rule, req)));
}

const CONTROLLER = { name: 'agent-sandbox-controller', namespace: 'agent-sandbox-system' };
const SANDBOXES = 'agents.x-k8s.io';
const EXTENSIONS = 'extensions.agents.x-k8s.io';

function errorOf(props: SandboxFlowControlProps): string {
  try {
    synth(props);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('SandboxFlowControl', () => {
  test('defaults match the upstream apf-insulation overlay', () => {
    expect(synth()).toMatchSnapshot();
  });

  test('priority levels: critical lends nothing, bulk lends 75%, both queue 16/4/100', () => {
    const objects = synth();
    const critical = byKindAndName(objects, 'PriorityLevelConfiguration', 'agent-sandbox-critical');
    expect(critical.apiVersion).toBe('flowcontrol.apiserver.k8s.io/v1');
    expect(critical.spec).toEqual({
      type: 'Limited',
      limited: {
        nominalConcurrencyShares: 40,
        lendablePercent: 0,
        limitResponse: { type: 'Queue', queuing: { queues: 16, handSize: 4, queueLengthLimit: 100 } },
      },
    });
    const bulk = byKindAndName(objects, 'PriorityLevelConfiguration', 'agent-sandbox-bulk');
    expect(bulk.spec.limited.nominalConcurrencyShares).toBe(25);
    expect(bulk.spec.limited.lendablePercent).toBe(75);
    expect(bulk.spec.limited.limitResponse.queuing).toEqual({ queues: 16, handSize: 4, queueLengthLimit: 100 });
  });

  test('every FlowSchema keeps its ServiceAccount subject through synthesis', () => {
    const schemas = synth({ serviceAccountName: 'ctrl', serviceAccountNamespace: 'sandbox-ops' })
      .filter((o) => o.kind === 'FlowSchema');
    expect(schemas.map((s) => s.metadata.name)).toEqual(['agent-sandbox-critical', 'agent-sandbox-events', 'agent-sandbox-bulk']);
    for (const schema of schemas) {
      expect(schema.spec.rules[0].subjects).toEqual([
        { kind: 'ServiceAccount', serviceAccount: { name: 'ctrl', namespace: 'sandbox-ops' } },
      ]);
    }
  });

  test('critical schema carries only the hot-path writes and leases', () => {
    const critical = byKindAndName(synth(), 'FlowSchema', 'agent-sandbox-critical');
    expect(critical.spec.matchingPrecedence).toBe(900);
    expect(critical.spec.distinguisherMethod).toEqual({ type: 'ByUser' });
    expect(critical.spec.priorityLevelConfiguration).toEqual({ name: 'agent-sandbox-critical' });
    const rules = critical.spec.rules[0].resourceRules;
    const scopes = { clusterScope: true, namespaces: ['*'] };
    expect(rules).toEqual([
      { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims', 'sandboxclaims/status'], verbs: ['update', 'patch'], ...scopes },
      { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes', 'sandboxes/status', 'sandboxes/finalizers'], verbs: ['update', 'patch'], ...scopes },
      { apiGroups: [''], resources: ['pods'], verbs: ['update', 'patch'], ...scopes },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], ...scopes },
    ]);
    expect(critical.spec.rules[0].nonResourceRules).toBeUndefined();
  });

  test('events go to workload-low; bulk catches every other request', () => {
    const objects = synth();
    const events = byKindAndName(objects, 'FlowSchema', 'agent-sandbox-events');
    expect(events.spec.matchingPrecedence).toBe(950);
    expect(events.spec.priorityLevelConfiguration).toEqual({ name: 'workload-low' });
    expect(events.spec.rules[0].resourceRules).toEqual([
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['*'], clusterScope: true, namespaces: ['*'] },
    ]);
    const bulk = byKindAndName(objects, 'FlowSchema', 'agent-sandbox-bulk');
    expect(bulk.spec.matchingPrecedence).toBe(1000);
    expect(bulk.spec.priorityLevelConfiguration).toEqual({ name: 'agent-sandbox-bulk' });
    expect(bulk.spec.rules[0].resourceRules).toEqual([
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'], clusterScope: true, namespaces: ['*'] },
    ]);
    expect(bulk.spec.rules[0].nonResourceRules).toEqual([{ nonResourceURLs: ['*'], verbs: ['*'] }]);
  });

  test('every object is labelled for the controller and the install', () => {
    for (const o of synth()) {
      expect(o.metadata.labels).toEqual({ 'app': 'agent-sandbox-controller', 'app.kubernetes.io/part-of': 'agent-sandbox' });
    }
  });

  test('tuning props reach the objects', () => {
    const objects = synth({
      criticalShares: 80,
      criticalLendablePercent: 10,
      criticalQueuing: { queues: 64, handSize: 8, queueLengthLimit: 500 },
      bulkShares: 10,
      bulkLendablePercent: 100,
      bulkQueuing: { queues: 8 },
      criticalPrecedence: 500,
      eventsPrecedence: 600,
      bulkPrecedence: 700,
      eventsPriorityLevel: 'catch-all',
    });
    const critical = byKindAndName(objects, 'PriorityLevelConfiguration', 'agent-sandbox-critical').spec.limited;
    expect(critical.nominalConcurrencyShares).toBe(80);
    expect(critical.lendablePercent).toBe(10);
    expect(critical.limitResponse.queuing).toEqual({ queues: 64, handSize: 8, queueLengthLimit: 500 });
    const bulk = byKindAndName(objects, 'PriorityLevelConfiguration', 'agent-sandbox-bulk').spec.limited;
    expect(bulk).toMatchObject({ nominalConcurrencyShares: 10, lendablePercent: 100 });
    expect(bulk.limitResponse.queuing).toEqual({ queues: 8, handSize: 4, queueLengthLimit: 100 });
    expect(byKindAndName(objects, 'FlowSchema', 'agent-sandbox-critical').spec.matchingPrecedence).toBe(500);
    const events = byKindAndName(objects, 'FlowSchema', 'agent-sandbox-events').spec;
    expect(events).toMatchObject({ matchingPrecedence: 600, priorityLevelConfiguration: { name: 'catch-all' } });
    expect(byKindAndName(objects, 'FlowSchema', 'agent-sandbox-bulk').spec.matchingPrecedence).toBe(700);
  });

  test('each FlowSchema sends requests to a priority level that exists', () => {
    for (const eventsPriorityLevel of [undefined, 'catch-all']) {
      const objects = synth({ eventsPriorityLevel });
      const ours = objects.filter((o) => o.kind === 'PriorityLevelConfiguration').map((o) => o.metadata.name);
      const levelOf = (name: string) => byKindAndName(objects, 'FlowSchema', name).spec.priorityLevelConfiguration.name;
      expect(ours).toContain(levelOf('agent-sandbox-critical'));
      expect(ours).toContain(levelOf('agent-sandbox-bulk'));
      // Events go to a level the cluster already has, never one of the two dedicated levels.
      expect(levelOf('agent-sandbox-events')).toBe(eventsPriorityLevel ?? 'workload-low');
      expect(ours).not.toContain(levelOf('agent-sandbox-events'));
    }
  });

  test('every FlowSchema matches before the built-in service-accounts schema (9000)', () => {
    for (const schema of synth().filter((o) => o.kind === 'FlowSchema')) expect(schema.spec.matchingPrecedence).toBeLessThan(9000);
  });

  describe.each([
    ['default precedences', {}],
    ['custom precedences', { criticalPrecedence: 500, eventsPrecedence: 400, bulkPrecedence: 700 }],
  ] as Array<[string, SandboxFlowControlProps]>)('with %s, the operator\'s requests land on their level', (_, props) => {
    let objects: any[];
    beforeAll(() => { objects = synth(props); });
    const ns = 'team-a';
    test.each([
      // The claim-to-Ready hot path: status and metadata writes, adoption, and Lease renewals.
      ['agent-sandbox-critical', { verb: 'patch', apiGroup: SANDBOXES, resource: 'sandboxes/status', namespace: ns }],
      ['agent-sandbox-critical', { verb: 'patch', apiGroup: SANDBOXES, resource: 'sandboxes', namespace: ns }],
      ['agent-sandbox-critical', { verb: 'patch', apiGroup: EXTENSIONS, resource: 'sandboxclaims/status', namespace: ns }],
      ['agent-sandbox-critical', { verb: 'patch', apiGroup: EXTENSIONS, resource: 'sandboxclaims', namespace: ns }],
      ['agent-sandbox-critical', { verb: 'patch', apiGroup: '', resource: 'pods', namespace: ns }],
      ['agent-sandbox-critical', { verb: 'update', apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: CONTROLLER.namespace }],
      ['agent-sandbox-critical', { verb: 'get', apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: CONTROLLER.namespace }],
      // Events, however they are written.
      ['workload-low', { verb: 'create', apiGroup: 'events.k8s.io', resource: 'events', namespace: ns }],
      ['workload-low', { verb: 'patch', apiGroup: '', resource: 'events', namespace: ns }],
      // Everything else: informers' cluster-wide lists and watches, pool refill, policies, discovery.
      ['agent-sandbox-bulk', { verb: 'list', apiGroup: '', resource: 'pods' }],
      ['agent-sandbox-bulk', { verb: 'watch', apiGroup: SANDBOXES, resource: 'sandboxes' }],
      ['agent-sandbox-bulk', { verb: 'create', apiGroup: SANDBOXES, resource: 'sandboxes', namespace: ns }],
      ['agent-sandbox-bulk', { verb: 'patch', apiGroup: EXTENSIONS, resource: 'sandboxwarmpools/status', namespace: ns }],
      ['agent-sandbox-bulk', { verb: 'create', apiGroup: 'networking.k8s.io', resource: 'networkpolicies', namespace: ns }],
      ['agent-sandbox-bulk', { verb: 'watch', apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: CONTROLLER.namespace }],
      ['agent-sandbox-bulk', { verb: 'get', nonResourceURL: '/apis' }],
    ] as Array<[string, Omit<Request, 'user'>]>)('%s: %j', (level, req) => {
      expect(flowSchemaFor(objects, { user: CONTROLLER, ...req })?.spec.priorityLevelConfiguration.name).toBe(level);
    });

    test('requests of other ServiceAccounts match none of the schemas', () => {
      const req = { verb: 'patch', apiGroup: SANDBOXES, resource: 'sandboxes/status', namespace: ns };
      expect(flowSchemaFor(objects, { user: { name: 'default', namespace: CONTROLLER.namespace }, ...req })).toBeUndefined();
      expect(flowSchemaFor(objects, { user: { name: CONTROLLER.name, namespace: 'other' }, ...req })).toBeUndefined();
    });
  });

  describe('validation names the construct, the field and the fix', () => {
    test.each([
      [{ serviceAccountName: 'Bad_Name' }, 'serviceAccountName: "Bad_Name" must consist of lowercase'],
      [{ serviceAccountNamespace: 'a.b' }, 'serviceAccountNamespace: "a.b" must consist of lowercase'],
      [{ eventsPriorityLevel: '' }, 'eventsPriorityLevel: must not be empty'],
      [{ criticalShares: 0 }, 'criticalShares: 0 must be a whole number of at least 1; a level without nominal seats'],
      [{ bulkShares: 2.5 }, 'bulkShares: 2.5 must be a whole number of at least 1'],
      [{ criticalLendablePercent: 101 }, 'criticalLendablePercent: 101 must be a whole percent from 0 to 100'],
      [{ bulkLendablePercent: -1 }, 'bulkLendablePercent: -1 must be a whole percent from 0 to 100'],
      [{ criticalQueuing: { queues: 0, handSize: 1 } }, 'criticalQueuing.queues: 0 must be a whole number of at least 1; use at least 1 queue'],
      [{ bulkQueuing: { handSize: 0 } }, 'bulkQueuing.handSize: 0 must be a whole number of at least 1'],
      [{ bulkQueuing: { queueLengthLimit: 0 } }, 'bulkQueuing.queueLengthLimit: 0 must be a whole number of at least 1; use a limit of at least 1 request'],
      [{ criticalQueuing: { queues: 4, handSize: 8 } }, 'criticalQueuing.handSize: 8 must not exceed queues (4); lower handSize or raise queues'],
      [{ criticalQueuing: { queues: 512, handSize: 10 } }, 'criticalQueuing.handSize: 10 with 512 queues needs more than 60 bits of hash'],
      [{ criticalPrecedence: 0 }, 'criticalPrecedence: 0 must be a whole number from 1 to 8999'],
      [{ bulkPrecedence: 9000 }, 'bulkPrecedence: 9000 must be a whole number from 1 to 8999; at 9000 or above the built-in "service-accounts" FlowSchema'],
      [{ eventsPrecedence: 1000 }, 'eventsPrecedence: 1000 must be lower than bulkPrecedence (1000): the bulk FlowSchema matches every request'],
      [{ criticalPrecedence: 1200 }, 'criticalPrecedence: 1200 must be lower than bulkPrecedence (1000)'],
    ] as Array<[SandboxFlowControlProps, string]>)('%j', (props, expected) => {
      const message = errorOf(props);
      expect(message).toContain('SandboxFlowControl test/apf: invalid props');
      expect(message).toContain(expected);
    });
  });
});
