import { ApiObject } from 'cdk8s';
import { Construct, IConstruct } from 'constructs';
import { PART_OF_LABEL } from './api/crd-manifests';
import { CORE_GROUP, EXTENSIONS_GROUP, KINDS } from './api/groups';
import { DEFAULT_SYSTEM_NAMESPACE } from './api/labels';
import { REFERENCED_KINDS } from './api/object-kinds';
import { propName } from './api/spelling';
import { ErrorList, checkDns1123Label, checkDns1123Subdomain } from './api/validation';
import { _guardChart } from './chart-guards';
import { ObjectRef, _dropClusterScopedNamespaces } from './object-ref';

/** Shuffle-sharded queuing of a priority level (`spec.limited.limitResponse.queuing`). */
export interface PriorityLevelQueuing {
  /** Number of queues. @default 16 */
  readonly queues?: number;
  /** Queues each flow is dealt (shuffle-sharding hand size); at most `queues`. @default 4 */
  readonly handSize?: number;
  /** Requests each queue may hold before the API server answers 429. @default 100 */
  readonly queueLengthLimit?: number;
}

/**
 * Tuning of {@link SandboxFlowControl}. The defaults are upstream's `apf-insulation` overlay.
 * @see https://kubernetes.io/docs/concepts/cluster-administration/flow-control/
 */
export interface SandboxFlowControlOptions {
  /**
   * Nominal concurrency shares of `agent-sandbox-critical`, the level of the claim-to-Ready hot path.
   * Seats = shares / (sum of all levels' shares) × the API server's inflight limits.
   * @default 40
   */
  readonly criticalShares?: number;
  /**
   * Percent of the critical level's seats other levels may borrow. 0 keeps the hot path's seats a
   * hard floor: borrowed seats would be held by others exactly when a claim burst starts.
   * @default 0
   */
  readonly criticalLendablePercent?: number;
  /** Queuing of the critical level. @default - 16 queues, hand size 4, 100 per queue */
  readonly criticalQueuing?: PriorityLevelQueuing;
  /** Nominal concurrency shares of `agent-sandbox-bulk` (refill, list/watch, discovery). @default 25 */
  readonly bulkShares?: number;
  /** Percent of the bulk level's seats other levels may borrow while pools are quiet. @default 75 */
  readonly bulkLendablePercent?: number;
  /** Queuing of the bulk level. @default - 16 queues, hand size 4, 100 per queue */
  readonly bulkQueuing?: PriorityLevelQueuing;
  /** matchingPrecedence of the `agent-sandbox-critical` FlowSchema (lower matches first). @default 900 */
  readonly criticalPrecedence?: number;
  /** matchingPrecedence of the `agent-sandbox-events` FlowSchema. @default 950 */
  readonly eventsPrecedence?: number;
  /** matchingPrecedence of the catch-all `agent-sandbox-bulk` FlowSchema. @default 1000 */
  readonly bulkPrecedence?: number;
  /**
   * Existing priority level that receives the controller's Events: they are sacrificial and must
   * not take seats from either dedicated level.
   * @default "workload-low"
   */
  readonly eventsPriorityLevel?: string;
}

/** Props of {@link SandboxFlowControl}. */
export interface SandboxFlowControlProps extends SandboxFlowControlOptions {
  /** ServiceAccount the controller runs as; the FlowSchemas match only its requests. @default "agent-sandbox-controller" */
  readonly serviceAccountName?: string;
  /** Namespace of that ServiceAccount. @default "agent-sandbox-system" */
  readonly serviceAccountNamespace?: string;
  /**
   * The controller's ServiceAccount as a construct (a cdk8s-plus `ServiceAccount`, a
   * `KubeServiceAccount`): its name and namespace, instead of `serviceAccountName` and
   * `serviceAccountNamespace`.
   * @default - `serviceAccountName` in `serviceAccountNamespace`
   */
  readonly serviceAccount?: IConstruct;
}

const API_VERSION = 'flowcontrol.apiserver.k8s.io/v1';
const LABELS = { app: 'agent-sandbox-controller', ...PART_OF_LABEL };
// The built-in `service-accounts` FlowSchema; ours must precede it or they never match.
const SERVICE_ACCOUNTS_PRECEDENCE = 9000;
// shufflesharding.MaxHashBits in k8s.io/apiserver: the API server rejects hands needing more entropy.
const MAX_HASH_BITS = 60;
const ALL_SCOPES = { clusterScope: true, namespaces: ['*'] };

/**
 * API Priority and Fairness for the controller (opt-in, as upstream's `apf-insulation` overlay):
 * without it all controller traffic lands in the shared `workload-low` level, where other tenants'
 * service accounts and the controller's own refill bursts delay claim adoption writes.
 *
 * Emits PriorityLevelConfigurations `agent-sandbox-critical` and `agent-sandbox-bulk` and
 * FlowSchemas `agent-sandbox-critical` (hot-path writes and leader-election leases),
 * `agent-sandbox-events` (Events to `workload-low`) and `agent-sandbox-bulk` (everything else).
 * @see https://kubernetes.io/docs/concepts/cluster-administration/flow-control/
 */
export class SandboxFlowControl extends Construct {
  /** The PriorityLevelConfigurations, critical first. */
  public readonly priorityLevels: ApiObject[];
  /** The FlowSchemas, in precedence order of the defaults (critical, events, bulk). */
  public readonly flowSchemas: ApiObject[];

  public constructor(scope: Construct, id: string, props: SandboxFlowControlProps = {}) {
    super(scope, id);
    _guardChart(this);
    const errors = new ErrorList();
    const sa = props.serviceAccount && serviceAccountOf(errors, props);
    const saName = sa?.name ?? props.serviceAccountName ?? 'agent-sandbox-controller';
    const saNamespace = sa?.namespace ?? props.serviceAccountNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
    const critical = { shares: props.criticalShares ?? 40, lendable: props.criticalLendablePercent ?? 0, queuing: queuingOf(props.criticalQueuing) };
    const bulk = { shares: props.bulkShares ?? 25, lendable: props.bulkLendablePercent ?? 75, queuing: queuingOf(props.bulkQueuing) };
    const precedence = { critical: props.criticalPrecedence ?? 900, events: props.eventsPrecedence ?? 950, bulk: props.bulkPrecedence ?? 1000 };
    const eventsLevel = props.eventsPriorityLevel ?? 'workload-low';

    errors.prop('serviceAccountName', checkDns1123Subdomain(saName));
    errors.prop('serviceAccountNamespace', checkDns1123Label(saNamespace));
    errors.prop('eventsPriorityLevel', checkDns1123Subdomain(eventsLevel));
    for (const [level, settings] of [['critical', critical], ['bulk', bulk]] as const) {
      errors.prop(`${level}Shares`, checkPositiveInteger(settings.shares,
        'a level without nominal seats runs only on borrowed capacity; use at least 1'));
      errors.prop(`${level}LendablePercent`, checkPercent(settings.lendable));
      checkQueuing(errors, `${level}Queuing`, settings.queuing);
    }
    for (const [name, value] of Object.entries(precedence)) {
      errors.prop(`${name}Precedence`, value >= 1 && value < SERVICE_ACCOUNTS_PRECEDENCE && Number.isInteger(value)
        ? undefined
        : `${value} must be a whole number from 1 to ${SERVICE_ACCOUNTS_PRECEDENCE - 1}; at ${SERVICE_ACCOUNTS_PRECEDENCE} or above the built-in "service-accounts" FlowSchema matches the controller first`);
    }
    for (const name of ['critical', 'events'] as const) {
      if (precedence[name] >= precedence.bulk) {
        errors.prop(`${name}Precedence`, `${precedence[name]} must be lower than ${propName('bulkPrecedence')} (${precedence.bulk}): the bulk FlowSchema matches every request of the controller, so it must come last`);
      }
    }
    errors.throwIfAny(`SandboxFlowControl ${this.node.path}`);

    this.priorityLevels = [
      this.priorityLevel('agent-sandbox-critical', critical),
      this.priorityLevel('agent-sandbox-bulk', bulk),
    ];
    // Subjects are written as plain JSON because the generated L1 drops `serviceAccount`.
    const subjects = [{ kind: 'ServiceAccount', serviceAccount: { name: saName, namespace: saNamespace } }];
    const claims = KINDS.claim.plural;
    const sandboxes = KINDS.sandbox.plural;
    this.flowSchemas = [
      this.flowSchema('agent-sandbox-critical', 'agent-sandbox-critical', precedence.critical, [{
        subjects,
        resourceRules: [
          { apiGroups: [EXTENSIONS_GROUP], resources: [claims, `${claims}/status`], verbs: ['update', 'patch'], ...ALL_SCOPES },
          { apiGroups: [CORE_GROUP], resources: [sandboxes, `${sandboxes}/status`, `${sandboxes}/finalizers`], verbs: ['update', 'patch'], ...ALL_SCOPES },
          { apiGroups: [''], resources: ['pods'], verbs: ['update', 'patch'], ...ALL_SCOPES },
          // Lease renewals are tiny; starving them mid-burst would drop leadership and abort every reconcile.
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], ...ALL_SCOPES },
        ],
      }]),
      this.flowSchema('agent-sandbox-events', eventsLevel, precedence.events, [{
        subjects,
        resourceRules: [{ apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['*'], ...ALL_SCOPES }],
      }]),
      this.flowSchema('agent-sandbox-bulk', 'agent-sandbox-bulk', precedence.bulk, [{
        subjects,
        resourceRules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'], ...ALL_SCOPES }],
        nonResourceRules: [{ nonResourceURLs: ['*'], verbs: ['*'] }],
      }]),
    ];
    _dropClusterScopedNamespaces(this);
  }

  private priorityLevel(name: string, settings: { shares: number; lendable: number; queuing: Required<PriorityLevelQueuing> }): ApiObject {
    return new ApiObject(this, name, {
      apiVersion: API_VERSION,
      kind: 'PriorityLevelConfiguration',
      metadata: { name, labels: { ...LABELS } },
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: settings.shares,
          lendablePercent: settings.lendable,
          limitResponse: { type: 'Queue', queuing: { ...settings.queuing } },
        },
      },
    });
  }

  private flowSchema(name: string, level: string, matchingPrecedence: number, rules: object[]): ApiObject {
    return new ApiObject(this, `${name}-flow-schema`, {
      apiVersion: API_VERSION,
      kind: 'FlowSchema',
      metadata: { name, labels: { ...LABELS } },
      spec: {
        priorityLevelConfiguration: { name: level },
        matchingPrecedence,
        distinguisherMethod: { type: 'ByUser' },
        rules,
      },
    });
  }
}

function queuingOf(q: PriorityLevelQueuing | undefined): Required<PriorityLevelQueuing> {
  return { queues: q?.queues ?? 16, handSize: q?.handSize ?? 4, queueLengthLimit: q?.queueLengthLimit ?? 100 };
}

function checkPositiveInteger(value: number, fix: string): string | undefined {
  return Number.isInteger(value) && value >= 1 ? undefined : `${value} must be a whole number of at least 1; ${fix}`;
}

function checkPercent(value: number): string | undefined {
  return Number.isInteger(value) && value >= 0 && value <= 100 ? undefined : `${value} must be a whole percent from 0 to 100`;
}

function checkQueuing(errors: ErrorList, field: string, q: Required<PriorityLevelQueuing>): void {
  errors.prop(`${field}.queues`, checkPositiveInteger(q.queues, 'use at least 1 queue'));
  errors.prop(`${field}.handSize`, checkPositiveInteger(q.handSize, 'use a hand of at least 1 queue'));
  errors.prop(`${field}.queueLengthLimit`, checkPositiveInteger(q.queueLengthLimit, 'use a limit of at least 1 request'));
  if (q.handSize > q.queues) {
    errors.prop(`${field}.handSize`, `${q.handSize} must not exceed ${propName('queues')} (${q.queues}); lower ${propName('handSize')} or raise ${propName('queues')}`);
  } else if (q.queues > 1 && Math.ceil(Math.log2(q.queues) * q.handSize) > MAX_HASH_BITS) {
    errors.prop(`${field}.handSize`, `${q.handSize} with ${q.queues} queues needs more than ${MAX_HASH_BITS} bits of hash, which the API server rejects; lower ${propName('handSize')} or ${propName('queues')}`);
  }
}

/** Name and namespace of the `serviceAccount` construct; problems go to `errors`. */
function serviceAccountOf(errors: ErrorList, props: SandboxFlowControlProps): { name: string; namespace?: string } | undefined {
  if (props.serviceAccountName !== undefined || props.serviceAccountNamespace !== undefined) {
    errors.prop('serviceAccount', `is given with ${propName('serviceAccountName')} or ${propName('serviceAccountNamespace')}; give the construct or the names`);
  }
  const ref = ObjectRef.fromConstruct(props.serviceAccount!);
  const problem = ref._problem(REFERENCED_KINDS.serviceAccount, undefined);
  if (problem !== undefined) {
    errors.prop('serviceAccount', problem);
    return undefined;
  }
  const obj = ApiObject.of(props.serviceAccount!);
  if (obj.metadata.namespace === undefined) {
    errors.prop('serviceAccount', `ServiceAccount "${obj.name}" has no namespace; give it one (or its Chart), since the FlowSchemas match a namespace and a name`);
  }
  return { name: obj.name, namespace: obj.metadata.namespace };
}
