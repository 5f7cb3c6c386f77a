/**
 * Props fuzzing of the public constructs with fast-check: valid and invalid props, including wrong
 * types that a jsii caller (Python, say) can send. Property: synth either succeeds and every object
 * of our kinds passes its CRD schema (and nothing anywhere is NaN, undefined or "[object Object]"),
 * or it throws a plain Error whose message names the offending field and says what to do. Never a
 * TypeError, never silent garbage, never a rejection of props that were all valid.
 *
 * Bounded by default (fixed seed); FUZZ_RUNS and FUZZ_SEED scale it up or replay a failure.
 * Counts per input class go to test-results/fuzz.json (key `constructs`).
 */
import * as fs from 'fs';
import * as path from 'path';
import { Duration, Testing } from 'cdk8s';
import * as fc from 'fast-check';
import {
  BAD_DNS_LABEL, BAD_IMAGE, BAD_LABEL_VALUE, BAD_QUANTITY, BAD_SUBDOMAIN, BAD_TIME, DNS_LABEL, Gen, IMAGE, LABEL_VALUE, NOT_BOOLEAN, NOT_LIST,
  NOT_NUMBER,
  NOT_STRING, QUANTITY, TIME, field, labels, list, map, modes, ok, rec,
} from './gen';
import {
  ClaimShutdownPolicy, EnvVarsInjectionPolicy, NetworkPolicyManagement, OperatingMode, SandboxShutdownPolicy, VolumeClaimTemplatesPolicy,
  WarmPoolUpdateStrategyType,
} from '../../src/api/enums';
import { SANDBOX_CLAIM_SCHEMA, SANDBOX_SCHEMA, SANDBOX_TEMPLATE_SCHEMA, SANDBOX_WARM_POOL_SCHEMA } from '../../src/api/schema';
import { schemaValueErrors } from '../../src/api/schema-values';
import { checkDns1123Subdomain, parseQuantity } from '../../src/api/validation';
import { SandboxClaim } from '../../src/claim';
import { ImagePullPolicy, Protocol } from '../../src/container';
import { AgentSandboxSystem } from '../../src/install';
import { DnsAccess, SandboxNetworkPort, SandboxPeer } from '../../src/network-policy';
import { Sandbox } from '../../src/sandbox';
import { SandboxTemplate } from '../../src/template';
import { SandboxVolume } from '../../src/volume';
import { SandboxWarmPool, WarmPoolScalingMetric } from '../../src/warm-pool';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
const counts: Record<string, { cases: number; accepted: number; rejected: number }> = {};

const SCHEMAS: Record<string, any> = {
  Sandbox: SANDBOX_SCHEMA, SandboxTemplate: SANDBOX_TEMPLATE_SCHEMA, SandboxWarmPool: SANDBOX_WARM_POOL_SCHEMA, SandboxClaim: SANDBOX_CLAIM_SCHEMA,
};
const FIX_WORDS = /\b(use|must|give|set|add|remove|drop|choose|shorten|omit|leave|make|list|check|pin|is not)\b/i;
const BAD_ENUM = fc.oneof(fc.constantFrom('', 'running', 'Sleeping', 'DELETE', 'Always '), NOT_STRING);

// ---- generators -------------------------------------------------------------------------------

/** A string map whose values come from `good` (keys are plain resource-like names). */
function labelsOf(good: fc.Arbitrary<string>, bad: fc.Arbitrary<unknown>, name: string): Gen<Record<string, string>> {
  return fc.dictionary(fc.constantFrom('cpu', 'memory', 'nvidia.com/gpu'), field(good, bad, [name]), { maxKeys: 2 })
    .map((d) => ({ v: Object.fromEntries(Object.entries(d).map(([k, t]) => [k, t.v])), bad: Object.values(d).flatMap((t) => t.bad) }));
}
function NOT_MAP_LIKE(): fc.Arbitrary<unknown> {
  return fc.constantFrom<unknown>('A=b', 7, ['A'], true);
}

function generators() {
  const VOLUME_NAMES = ['work', 'cache', 'data'];
  const port = rec(
    { number: field(fc.integer({ min: 1, max: 65535 }), fc.oneof(fc.constantFrom(0, -1, 65536, 1e9, 80.5), NOT_NUMBER), ['number', 'containerPort']) },
    {
      name: field(fc.stringMatching(/^[a-z]([-a-z0-9]{0,12}[a-z0-9])?$/), fc.oneof(fc.constantFrom('HTTP', 'x'.repeat(16), '-a', ''), NOT_STRING), ['name']),
      protocol: field(fc.constantFrom(...Object.values(Protocol)), BAD_ENUM, ['protocol']),
    },
  );
  const container = rec(
    { image: field(IMAGE, BAD_IMAGE, ['image']) },
    {
      name: field(DNS_LABEL, BAD_DNS_LABEL, ['name']),
      command: field(fc.array(fc.string(), { maxLength: 3 }), fc.oneof(NOT_LIST, fc.constant([1, 2])), ['command']),
      args: field(fc.array(fc.string(), { maxLength: 3 }), fc.oneof(NOT_LIST, fc.constant([undefined])), ['args']),
      env: field(fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string(), { maxKeys: 3 }), fc.oneof(NOT_MAP_LIKE(), fc.constant({ A: 5 })), ['env']),
      ports: list(port, 0, 2),
      resources: rec({}, {
        requests: map(labelsOf(QUANTITY, BAD_QUANTITY, 'requests'), (v) => v),
        limits: map(labelsOf(QUANTITY, BAD_QUANTITY, 'limits'), (v) => v),
      }),
      volumeMounts: list(rec({
        volume: ok(fc.constantFrom(...VOLUME_NAMES)),
        path: field(fc.stringMatching(/^\/[a-z]{1,8}$/), fc.oneof(fc.constantFrom('relative', ''), NOT_STRING), ['path', 'mountPath']),
      }, { readOnly: field(fc.boolean(), NOT_BOOLEAN, ['readOnly']) }), 0, 2),
      workingDir: field(fc.constantFrom('/work', '/'), NOT_STRING, ['workingDir']),
      imagePullPolicy: field(fc.constantFrom(...Object.values(ImagePullPolicy)), BAD_ENUM, ['imagePullPolicy']),
      security: rec({}, {
        runAsUser: field(fc.integer({ min: 0, max: 65535 }), fc.oneof(fc.constantFrom(1.5, -1, 2 ** 63), NOT_NUMBER), ['runAsUser']),
        readOnlyRootFilesystem: field(fc.boolean(), NOT_BOOLEAN, ['readOnlyRootFilesystem']),
        addCapabilities: field(fc.constantFrom(['NET_BIND_SERVICE'], ['CHOWN']), fc.oneof(NOT_LIST, fc.constant([7])), ['addCapabilities', 'add']),
      }),
    },
  );

  const volume: Gen<SandboxVolume> = fc.oneof(
    fc.tuple(field(fc.constantFrom(...VOLUME_NAMES), BAD_DNS_LABEL, ['volumes', 'name']), fc.option(field(QUANTITY, BAD_QUANTITY, ['sizeLimit']), { nil: undefined }))
      .map(([n, s]) => ({ v: SandboxVolume.emptyDir(n.v as string, s ? { sizeLimit: s.v as string } : {}), bad: [...n.bad, ...(s?.bad ?? [])] })),
    fc.tuple(field(fc.constantFrom(...VOLUME_NAMES), BAD_DNS_LABEL, ['volumes', 'name']), field(DNS_LABEL, BAD_SUBDOMAIN, ['secretName', 'secret']))
      .map(([n, s]) => ({ v: SandboxVolume.secret(n.v as string, s.v as string), bad: [...n.bad, ...s.bad] })),
    fc.tuple(field(fc.constantFrom(...VOLUME_NAMES), BAD_DNS_LABEL, ['volumes', 'name']), field(DNS_LABEL, BAD_SUBDOMAIN, ['configMap', 'name']))
      .map(([n, s]) => ({ v: SandboxVolume.configMap(n.v as string, s.v as string), bad: [...n.bad, ...s.bad] })),
  );
  const vct = rec(
    { name: field(fc.constantFrom(...VOLUME_NAMES), BAD_DNS_LABEL, ['volumeClaimTemplates']), storage: field(QUANTITY.filter((q) => q !== '0'), fc.oneof(BAD_QUANTITY, fc.constant('0')), ['storage']) },
    {
      storageClassName: field(DNS_LABEL, NOT_STRING, ['storageClassName']),
      accessModes: field(fc.constantFrom(['ReadWriteOnce'], ['ReadWriteOncePod', 'ReadOnlyMany']), fc.oneof(NOT_LIST, fc.constant(['Sometimes'])), ['accessModes']),
      volumeMode: field(fc.constantFrom('Filesystem', 'Block'), fc.oneof(fc.constantFrom('block', 'Raw'), NOT_STRING), ['volumeMode']),
    },
  );
  const toleration = rec(
    { key: field(fc.constantFrom('gpu', 'example.com/sandbox'), fc.oneof(fc.constantFrom('bad key', '-x'), NOT_STRING), ['tolerations']) },
    {
      value: field(LABEL_VALUE, BAD_LABEL_VALUE, ['tolerations']),
      effect: field(fc.constantFrom('NoSchedule', 'PreferNoSchedule', 'NoExecute'), BAD_ENUM, ['tolerations', 'effect']),
    },
  );
  const duration = (names: string[]) => field(
    fc.integer({ min: 0, max: 3600 }).map((s) => Duration.seconds(s)),
    fc.oneof(fc.constantFrom<unknown>(30, '30s', {}), fc.constant(Duration.millis(1500))),
    names,
  );
  const blueprint = {
    containers: list(container, 1, 3),
    initContainers: list(container, 0, 1),
    volumes: list(volume, 0, 2),
    volumeClaimTemplates: list(vct, 0, 2),
    podLabels: labels('podLabels'),
    podAnnotations: labels('podAnnotations', fc.string({ maxLength: 20 }), NOT_STRING),
    service: field(fc.boolean(), NOT_BOOLEAN, ['service']),
    serviceAccountName: field(DNS_LABEL, BAD_SUBDOMAIN, ['serviceAccountName']),
    nodeSelector: labels('nodeSelector'),
    tolerations: list(toleration, 0, 2),
    terminationGracePeriod: duration(['terminationGracePeriod']),
    security: rec({}, {
      automountServiceAccountToken: field(fc.boolean(), NOT_BOOLEAN, ['automountServiceAccountToken']),
      runAsNonRoot: field(fc.boolean(), NOT_BOOLEAN, ['runAsNonRoot']),
      fsGroup: field(fc.integer({ min: 0, max: 65535 }), fc.oneof(fc.constantFrom(-1, 2.5, 2 ** 64), NOT_NUMBER), ['fsGroup']),
    }),
  };
  const metadataName = (bad: fc.Arbitrary<unknown> = BAD_SUBDOMAIN) =>
    map(field(DNS_LABEL, bad, ['metadata.name', 'name']), (name) => ({ name }));

  const sandboxProps = rec({ metadata: metadataName() }, {
    ...blueprint,
    operatingMode: field(fc.constantFrom(...Object.values(OperatingMode)), BAD_ENUM, ['operatingMode']),
    shutdownTime: field(TIME, BAD_TIME, ['shutdownTime']),
    shutdownPolicy: field(fc.constantFrom(...Object.values(SandboxShutdownPolicy)), BAD_ENUM, ['shutdownPolicy']),
  });

  const peer: Gen<() => SandboxPeer> = fc.oneof(
    ok(fc.constant(() => SandboxPeer.publicInternet())),
    ok(fc.constant(() => SandboxPeer.anywhere())),
    map(field(DNS_LABEL, BAD_DNS_LABEL, ['name']), (n) => () => SandboxPeer.namespace(n)),
    map(field(fc.constantFrom('10.0.0.0/8', '203.0.113.0/24', '2001:db8::/32'), fc.oneof(fc.constantFrom('10.0.0.0/33', '10.0.0/8', '300.1.1.1/8', 'fc00::/129', ''), NOT_STRING), ['cidr']),
      (c) => () => SandboxPeer.ipBlock(c)),
    map(labels('labels'), (l) => () => SandboxPeer.pods(l)),
  );
  const netPort: Gen<() => SandboxNetworkPort> = fc.oneof(
    map(field(fc.integer({ min: 1, max: 65535 }), fc.oneof(fc.constantFrom(0, 65536, 1.5), NOT_NUMBER), ['port']), (p) => () => SandboxNetworkPort.tcp(p)),
    ok(fc.constant(() => SandboxNetworkPort.allUdp())),
    fc.tuple(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }))
      .map(([a, b]) => ({ v: () => SandboxNetworkPort.tcpRange(a, b), bad: b < a ? [['endPort']] : [] })),
  );
  const rule = rec({}, { peers: list(peer, 1, 2), ports: list(netPort, 1, 2) });
  const network = rec({}, {
    management: field(fc.constantFrom(...Object.values(NetworkPolicyManagement)), BAD_ENUM, ['management', 'networkPolicyManagement']),
    ingress: list(rule, 0, 2),
    egress: list(rule, 0, 2),
    dns: fc.oneof(
      ok(fc.constant(() => DnsAccess.none())),
      ok(fc.constant(() => DnsAccess.publicResolvers())),
      map(field(DNS_LABEL, BAD_DNS_LABEL, ['namespace']), (n) => () => DnsAccess.clusterDns({ namespace: n })),
    ),
    routerNamespace: field(DNS_LABEL, BAD_DNS_LABEL, ['routerNamespace']),
    routerPodLabels: labels('routerPodLabels'),
  });
  const templateProps = rec({ metadata: metadataName() }, {
    ...blueprint,
    network,
    envVarsInjectionPolicy: field(fc.constantFrom(...Object.values(EnvVarsInjectionPolicy)), BAD_ENUM, ['envVarsInjectionPolicy']),
    volumeClaimTemplatesPolicy: field(fc.constantFrom(...Object.values(VolumeClaimTemplatesPolicy)), BAD_ENUM, ['volumeClaimTemplatesPolicy']),
  });

  const metric: Gen<() => WarmPoolScalingMetric> = fc.oneof(
    map(field(fc.integer({ min: 1, max: 100 }), fc.oneof(fc.constantFrom(0, -5, 50.5), NOT_NUMBER), ['metrics', 'utilization']), (p) => () => WarmPoolScalingMetric.resourceUtilization('cpu', p)),
    // An HPA target must be above 0.
    map(field(QUANTITY.filter((q) => q !== '0'), fc.oneof(BAD_QUANTITY, fc.constantFrom('0', '-1')), ['metrics']), (q) => () => WarmPoolScalingMetric.external('claims_per_second', q)),
  );
  const poolProps = rec({ metadata: metadataName(), templateName: field(DNS_LABEL, BAD_SUBDOMAIN, ['template', 'sandboxTemplateRef']) }, {
    replicas: field(fc.integer({ min: 0, max: 1000 }), fc.oneof(fc.constantFrom(-1, 1.5, 2 ** 31, 1e20), NOT_NUMBER), ['replicas']),
    updateStrategy: field(fc.constantFrom(...Object.values(WarmPoolUpdateStrategyType)), BAD_ENUM, ['updateStrategy']),
    autoscaling: fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 10 }), list(metric, 1, 2))
      .map(([min, max, m]) => ({ v: { minReplicas: min, maxReplicas: max, metrics: m.v }, bad: [...m.bad, ...(max < min ? [['maxReplicas']] : [])] })),
  });

  const claimProps = rec({ metadata: metadataName(), poolName: field(DNS_LABEL, BAD_SUBDOMAIN, ['warmPool', 'warmPoolRef']) }, {
    lifecycle: rec({}, {
      shutdownTime: field(TIME, BAD_TIME, ['shutdownTime']),
      ttlAfterFinished: duration(['ttlAfterFinished']),
      shutdownPolicy: field(fc.constantFrom(...Object.values(ClaimShutdownPolicy)), BAD_ENUM, ['shutdownPolicy']),
    }),
    env: list(rec({
      name: field(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.oneof(fc.constantFrom('1A', 'A B', ''), NOT_STRING), ['env']),
      value: field(fc.string({ maxLength: 10 }), NOT_STRING, ['env', 'value']),
    }), 0, 2),
    volumeClaimTemplates: list(vct, 0, 1),
    podLabels: fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), field(LABEL_VALUE, BAD_LABEL_VALUE, ['podLabels']), { maxKeys: 2 })
      .map((d) => ({ v: Object.fromEntries(Object.entries(d).map(([k, t]) => [`sandbox.users.io/${k}`, t.v])), bad: Object.values(d).flatMap((t) => t.bad) })),
    podAnnotations: labels('podAnnotations', fc.string({ maxLength: 10 }), NOT_STRING),
  });

  const systemProps = rec({}, {
    namespace: field(DNS_LABEL, BAD_DNS_LABEL, ['namespace']),
    image: field(IMAGE.filter((i) => !i.includes('@')), BAD_IMAGE, ['image']),
    replicas: field(fc.integer({ min: 0, max: 5 }), fc.oneof(fc.constantFrom(-1, 1.5), NOT_NUMBER), ['replicas']),
    imagePullPolicy: field(fc.constantFrom(...Object.values(ImagePullPolicy)), BAD_ENUM, ['imagePullPolicy']),
    createNamespace: field(fc.boolean(), NOT_BOOLEAN, ['createNamespace']),
    extensions: field(fc.boolean(), NOT_BOOLEAN, ['extensions']),
    controller: rec({}, {
      sandboxConcurrentWorkers: field(fc.integer({ min: 1, max: 500 }), fc.oneof(fc.constantFrom(0, -1, 1.5), NOT_NUMBER), ['sandboxConcurrentWorkers']),
      kubeApiQps: field(fc.constantFrom(-1, 5, 50.5), NOT_NUMBER, ['kubeApiQps']),
      // Controller durations may be fractional seconds (rendered as Go durations such as 1.5s).
      sandboxWarmPoolReplenishDelay: field(fc.integer({ min: 0, max: 600_000 }).map((ms) => Duration.millis(ms)), fc.constantFrom<unknown>(30, '30s', {}), ['sandboxWarmPoolReplenishDelay']),
      clusterDomain: field(fc.constantFrom('cluster.local', 'example.internal'), fc.oneof(fc.constantFrom('', 'a b'), NOT_STRING), ['clusterDomain']),
      logLevel: field(fc.constantFrom('debug', 'info', 'warn', 'error'), BAD_ENUM, ['logLevel']),
    }),
    router: rec({}, {
      replicas: field(fc.integer({ min: 0, max: 5 }), fc.oneof(fc.constantFrom(-1, 0.5), NOT_NUMBER), ['router.replicas', 'replicas']),
      serviceName: field(DNS_LABEL, BAD_DNS_LABEL, ['serviceName']),
      podLabels: map(labels('podLabels'), (l) => (l !== null && typeof l === 'object' && !Array.isArray(l) && Object.keys(l).length === 0 ? undefined : l)),
    }),
  });
  return { sandboxProps, templateProps, poolProps, claimProps, systemProps };
}
const G = {
  sandboxProps: modes(() => generators().sandboxProps),
  templateProps: modes(() => generators().templateProps),
  poolProps: modes(() => generators().poolProps),
  claimProps: modes(() => generators().claimProps),
  systemProps: modes(() => generators().systemProps),
};

// ---- the property -------------------------------------------------------------------------------

/** Problems an extra look at the generated props finds: names used twice, mounts of undefined volumes. */
function conflicts(p: any): string[][] {
  const out: string[][] = [];
  const arr = (x: unknown): any[] => (Array.isArray(x) ? x : []);
  const names = [
    ...arr(p.containers).map((c: any, i: number) => c?.name ?? (i === 0 ? 'sandbox' : `container-${i}`)),
    ...arr(p.initContainers).map((c: any, i: number) => c?.name ?? `init-${i}`),
  ];
  if (new Set(names).size !== names.length) out.push(['used twice', 'unique']);
  if (Array.isArray(p.containers) && p.containers.length === 0) out.push(['containers']);
  if (p.containers === undefined) out.push(['containers']);
  const volumeNames = [...arr(p.volumes).map((v: any) => v.name), ...arr(p.volumeClaimTemplates).map((t: any) => t?.name)];
  if (new Set(volumeNames).size !== volumeNames.length) out.push(['used twice', 'unique']);
  for (const c of [...arr(p.containers), ...arr(p.initContainers)]) {
    for (const m of arr(c?.volumeMounts)) if (!volumeNames.includes(m.volume)) out.push(['volumeMounts', 'not defined']);
  }
  if (p.service === true && p.metadata?.name && typeof p.metadata.name === 'string' && !/^[a-z]/.test(p.metadata.name)) out.push(['metadata.name']);
  for (const c of [...arr(p.containers), ...arr(p.initContainers)]) out.push(...resourceConflicts(c?.resources));
  return out;
}

/**
 * What the API server refuses in a container's resources even when each quantity is well formed: a
 * request above its limit; for an extended resource (nvidia.com/gpu), a fraction, a request without
 * a limit or one that differs from it. Parsed with parseQuantity (its own tests are in resources.test.ts).
 */
function resourceConflicts(resources: any): string[][] {
  const amounts = (given: unknown) => new Map(Object.entries(given !== null && typeof given === 'object' && !Array.isArray(given) ? given : {})
    .map(([k, q]) => [k, typeof q === 'string' ? parseQuantity(q) : undefined]));
  const requests = amounts(resources?.requests);
  const limits = amounts(resources?.limits);
  const out: string[][] = [];
  const unit = BigInt(10) ** BigInt(9);
  for (const [name, amount] of [...requests, ...limits]) {
    if (name.includes('/') && amount !== undefined && amount % unit !== BigInt(0)) out.push([name, 'whole number']);
  }
  for (const [name, request] of requests) {
    const limit = limits.get(name);
    if (request === undefined || (limits.has(name) && limit === undefined)) continue;
    if (name.includes('/') && limit === undefined) out.push(['limits', 'is required']);
    else if (name.includes('/') && request !== limit) out.push([name, 'must equal']);
    else if (limit !== undefined && request > limit) out.push(['requests', 'is more than']);
  }
  return out;
}

/** Strings and numbers that show a value slipped through unconverted. */
function garbage(value: unknown, where: string, out: string[]): void {
  if (typeof value === 'number' && !Number.isFinite(value)) out.push(`${where}: ${value}`);
  else if (typeof value === 'string' && /^(undefined|NaN|null)$|\[object Object\]|=undefined|=NaN/.test(value)) out.push(`${where}: ${value}`);
  else if (value === undefined || typeof value === 'function') out.push(`${where}: ${typeof value}`);
  else if (Array.isArray(value)) value.forEach((v, i) => garbage(v, `${where}[${i}]`, out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) garbage(v, `${where}.${k}`, out);
}

interface Outcome { readonly accepted: boolean; readonly detail: string }

function judge(kind: string, bad: readonly string[][], build: (chart: any) => void): Outcome {
  const chart = Testing.chart();
  let objects: any[];
  try {
    build(chart);
    objects = Testing.synth(chart);
  } catch (e) {
    const err = e as Error;
    if (!(err instanceof Error) || err.constructor !== Error) {
      throw new Error(`${kind}: crashed with ${(err as any)?.constructor?.name}: ${err?.message}\n${err?.stack}`);
    }
    if (bad.length === 0) throw new Error(`${kind}: valid props rejected:\n${err.message}`);
    const named = bad.some((names) => names.some((n) => err.message.includes(n)));
    if (!named) throw new Error(`${kind}: the error names none of the bad fields ${JSON.stringify(bad)}:\n${err.message}`);
    if (!FIX_WORDS.test(err.message)) throw new Error(`${kind}: the error does not say what to do:\n${err.message}`);
    return { accepted: false, detail: err.message };
  }
  const problems: string[] = [];
  for (const obj of objects) {
    garbage(obj, `${obj.kind}/${obj.metadata?.name}`, problems);
    const schema = SCHEMAS[obj.kind];
    if (schema && /agents\.x-k8s\.io/.test(obj.apiVersion)) {
      problems.push(...schemaValueErrors(schema.properties.spec, obj.spec, `${obj.kind}.spec`));
      const name = checkDns1123Subdomain(obj.metadata?.name);
      if (name) problems.push(`${obj.kind}.metadata.name: ${name}`);
    }
  }
  if (problems.length > 0) throw new Error(`${kind}: synth accepted props ${bad.length ? `with bad ${JSON.stringify(bad)} ` : ''}but produced garbage:\n${problems.join('\n')}`);
  if (bad.length > 0) throw new Error(`${kind}: bad props ${JSON.stringify(bad)} were accepted silently`);
  return { accepted: true, detail: '' };
}

function record(cls: string, outcome: Outcome): void {
  const c = (counts[cls] ??= { cases: 0, accepted: 0, rejected: 0 });
  c.cases++;
  if (outcome.accepted) c.accepted++;
  else c.rejected++;
}

function classOf(base: string, bad: readonly string[][]): string {
  return bad.length === 0 ? `${base} (valid)` : `${base} (invalid)`;
}

const params = { numRuns: RUNS, seed: SEED, endOnFailure: true };

afterAll(() => {
  const dir = path.join(__dirname, '..', '..', 'test-results');
  fs.mkdirSync(dir, { recursive: true });
  // One file for both fuzz suites (this one and the integration one), each under its own key.
  const file = path.join(dir, 'fuzz.json');
  const previous = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  fs.writeFileSync(file, JSON.stringify({ ...previous, constructs: { seed: SEED, runsPerProperty: RUNS, classes: counts } }, null, 2) + '\n');
  // eslint-disable-next-line no-console
  console.log(`construct fuzz (seed ${SEED}):\n${Object.entries(counts).map(([k, v]) => `  ${k}: ${v.cases} cases, ${v.accepted} accepted, ${v.rejected} rejected`).join('\n')}`);
});

describe('construct props fuzz', () => {
  test('Sandbox', () => {
    fc.assert(fc.property(G.sandboxProps, ({ v, bad }) => {
      const all = [...bad, ...conflicts(v)];
      record(classOf('Sandbox', all), judge('Sandbox', all, (chart) => new Sandbox(chart, 'sb', v as any)));
    }), params);
  });

  test('SandboxTemplate (with network policy options)', () => {
    fc.assert(fc.property(G.templateProps, ({ v, bad }) => {
      const all = [...bad, ...conflicts(v)];
      const net = v.network as any;
      if (net) {
        const custom = net.ingress !== undefined || net.egress !== undefined;
        const dnsFactory = net.dns;
        // Conflicting options: public resolvers need a Managed template without custom rules.
        if ((dnsFactory === undefined || dnsFactory.toString().includes('publicResolvers')) && (custom || net.management === NetworkPolicyManagement.UNMANAGED)) {
          all.push(['network.dns']);
        }
        if (dnsFactory === undefined) delete net.dns;
      }
      record(classOf('SandboxTemplate', all), judge('SandboxTemplate', all, (chart) => {
        const props: any = { ...v };
        if (net) {
          const build = (rules: any[] | undefined) => rules?.map((r) => ({
            peers: r.peers?.map((f: any) => f()), ports: r.ports?.map((f: any) => f()),
          }));
          props.network = { ...net, ingress: build(net.ingress), egress: build(net.egress), dns: net.dns?.() };
        }
        new SandboxTemplate(chart, 'tpl', props);
      }));
    }), params);
  });

  test('SandboxWarmPool (with autoscaling)', () => {
    fc.assert(fc.property(G.poolProps, ({ v, bad }) => {
      // The HPA owns the replica count: both together is a conflict.
      const all = [...bad, ...((v as any).replicas !== undefined && (v as any).autoscaling !== undefined ? [['replicas', 'autoscaling']] : [])];
      record(classOf('SandboxWarmPool', all), judge('SandboxWarmPool', all, (chart) => {
        const { templateName, autoscaling, ...rest } = v as any;
        const a = autoscaling && { ...autoscaling, metrics: autoscaling.metrics.map((f: any) => f()) };
        new SandboxWarmPool(chart, 'pool', { ...rest, autoscaling: a, template: SandboxTemplate.fromName(templateName) });
      }));
    }), params);
  });

  test('SandboxClaim', () => {
    const policies = [
      fc.constantFrom(...Object.values(EnvVarsInjectionPolicy)), fc.constantFrom(...Object.values(VolumeClaimTemplatesPolicy)),
    ] as const;
    fc.assert(fc.property(G.claimProps, ...policies,
      ({ v, bad }, envPolicy, vctPolicy) => {
        const all = [...bad];
        const p = v as any;
        if ((p.env ?? []).length > 0 && envPolicy === EnvVarsInjectionPolicy.DISALLOWED) all.push(['env']);
        if ((p.volumeClaimTemplates ?? []).length > 0 && vctPolicy === VolumeClaimTemplatesPolicy.DISALLOWED) all.push(['volumeClaimTemplates']);
        record(classOf('SandboxClaim', all), judge('SandboxClaim', all, (chart) => {
          const { poolName, ...rest } = p;
          const template = { name: 'tpl', envVarsInjectionPolicy: envPolicy, volumeClaimTemplatesPolicy: vctPolicy, knownContainerNames: ['sandbox'] };
          new SandboxClaim(chart, 'claim', { ...rest, warmPool: SandboxWarmPool.fromName(poolName, template) });
        }));
      }), params);
  });

  test('AgentSandboxSystem install options', () => {
    fc.assert(fc.property(G.systemProps, ({ v, bad }) => {
      record(classOf('AgentSandboxSystem', bad), judge('AgentSandboxSystem', bad, (chart) => new AgentSandboxSystem(chart, 'system', v as any)));
    }), { ...params, numRuns: Math.max(10, Math.round(RUNS / 3)) });
  });
});
