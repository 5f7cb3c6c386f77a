/**
 * API + operator fuzz on the real local control plane: generated Sandbox, SandboxTemplate,
 * SandboxWarmPool and SandboxClaim objects (valid and invalid mixes: random strings, huge values,
 * unknown fields, wrong types, boundary lengths, odd label keys, odd timestamps) go through
 * server-side dry-run (dryRun=All) against the real CRDs. Every rejection must name a field; no
 * request may fail with a server error. A sample of the admitted ones is then created for real with
 * the operator running: it must stay up, and its reconcile errors must stay bounded.
 *
 * Bounded by default (fixed seed); FUZZ_RUNS and FUZZ_SEED scale it up or replay a failure.
 * Counts per input class are merged into test-results/fuzz.json (key `api`).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as fc from 'fast-check';
import { ApiClient, connectionFromKubeconfig } from '../../../tools/control-plane/api';
import { Kube } from '../../../tools/control-plane/kube';
import { OperatorProcess, ensureOperatorBundle } from '../../../tools/shared/operator-process';
import { BundleRbac } from '../operator/bundle-rbac';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
const kube = Kube.fromEnv();
const api = new ApiClient(connectionFromKubeconfig(kube.kubeconfig));
let ns: string;
const counts: Record<string, { cases: number; admitted: number; rejected: number }> = {};
const admitted: Array<{ plural: string; group: string; body: any }> = [];

const KINDS = {
  Sandbox: { group: 'agents.x-k8s.io', plural: 'sandboxes' },
  SandboxTemplate: { group: 'extensions.agents.x-k8s.io', plural: 'sandboxtemplates' },
  SandboxWarmPool: { group: 'extensions.agents.x-k8s.io', plural: 'sandboxwarmpools' },
  SandboxClaim: { group: 'extensions.agents.x-k8s.io', plural: 'sandboxclaims' },
} as const;

const weird = fc.oneof(
  fc.string({ maxLength: 20 }), fc.constantFrom('', ' ', 'x'.repeat(64), 'x'.repeat(254), 'Ünïcode', '-a', 'a_b', '0'),
  fc.integer(), fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e300, 0.5), fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([]),
);
const name = fc.oneof({ weight: 6, arbitrary: fc.stringMatching(/^[a-z]([-a-z0-9]{0,10}[a-z0-9])?$/) }, { weight: 1, arbitrary: weird });
const timestamp = fc.oneof(fc.constantFrom('2030-01-01T00:00:00Z', '2020-01-01T00:00:00Z'), fc.constantFrom('tomorrow', '2026-13-01T00:00:00Z', '', '1700000000'), weird);
const labelKey = fc.oneof(fc.constantFrom('app', 'sandbox.users.io/team', 'example.com/x'), fc.constantFrom('bad key', '/x', 'a/b/c', 'x'.repeat(64), ''));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
const podTemplate = fc.record({
  metadata: maybe(fc.record({ labels: maybe(fc.dictionary(labelKey, fc.oneof(fc.string({ maxLength: 10 }), weird), { maxKeys: 2 })) })),
  spec: fc.oneof(
    { weight: 5, arbitrary: fc.record({ containers: fc.array(fc.record({ name: name, image: fc.oneof(fc.constant('busybox'), weird) }), { minLength: 0, maxLength: 2 }) }) },
    { weight: 1, arbitrary: weird },
  ),
}, { requiredKeys: [] });
const unknown = fc.dictionary(fc.constantFrom('extra', 'replicas ', 'spec2', 'podtemplate'), weird, { maxKeys: 1 });

const specs: Record<keyof typeof KINDS, fc.Arbitrary<any>> = {
  Sandbox: fc.tuple(fc.record({
    podTemplate,
    service: maybe(fc.oneof(fc.boolean(), weird)),
    shutdownTime: maybe(timestamp),
    operatingMode: maybe(fc.oneof(fc.constantFrom('Running', 'Suspended'), weird)),
    shutdownPolicy: maybe(fc.oneof(fc.constantFrom('Delete', 'Retain'), weird)),
  }, { requiredKeys: [] }), unknown).map(([s, u]) => ({ ...s, ...u })),
  SandboxTemplate: fc.tuple(fc.record({
    podTemplate,
    networkPolicyManagement: maybe(fc.oneof(fc.constantFrom('Managed', 'Unmanaged'), weird)),
    envVarsInjectionPolicy: maybe(fc.oneof(fc.constantFrom('Allowed', 'Disallowed', 'Overrides'), weird)),
  }, { requiredKeys: [] }), unknown).map(([s, u]) => ({ ...s, ...u })),
  SandboxWarmPool: fc.tuple(fc.record({
    replicas: maybe(fc.oneof(fc.integer({ min: 0, max: 2 }), weird)),
    sandboxTemplateRef: maybe(fc.oneof(fc.record({ name }), weird)),
    updateStrategy: maybe(fc.record({ type: fc.oneof(fc.constantFrom('Recreate', 'OnReplenish'), weird) })),
  }, { requiredKeys: [] }), unknown).map(([s, u]) => ({ ...s, ...u })),
  SandboxClaim: fc.tuple(fc.record({
    warmPoolRef: maybe(fc.oneof(fc.record({ name }), weird)),
    lifecycle: maybe(fc.record({
      shutdownTime: maybe(timestamp),
      ttlSecondsAfterFinished: maybe(fc.oneof(fc.integer({ min: 0, max: 600 }), weird)),
    }, { requiredKeys: [] })),
    env: maybe(fc.array(fc.record({ name: fc.oneof(fc.constant('A'), weird), value: fc.oneof(fc.constant('b'), weird) }), { maxLength: 2 })),
  }, { requiredKeys: [] }), unknown).map(([s, u]) => ({ ...s, ...u })),
};

let seq = 0;
async function dryRun(kind: keyof typeof KINDS, spec: unknown, objName: unknown): Promise<void> {
  const { group, plural } = KINDS[kind];
  const body = { apiVersion: `${group}/v1beta1`, kind, metadata: { name: typeof objName === 'string' ? objName : objName, namespace: ns }, spec };
  const res = await api.request<any>('POST', `/apis/${group}/v1beta1/namespaces/${ns}/${plural}?dryRun=All&fieldValidation=Strict`, body);
  const c = (counts[kind] ??= { cases: 0, admitted: 0, rejected: 0 });
  c.cases++;
  if (res.status === 201 || res.status === 200) {
    c.admitted++;
    if (typeof objName === 'string') admitted.push({ plural, group, body: { ...body, metadata: { name: `${objName}-${++seq}`.slice(0, 60).replace(/-+$/, '') } } });
    return;
  }
  c.rejected++;
  // A client error that says which field; never a server error, never a silent hang.
  expect([400, 409, 422]).toContain(res.status);
  const message = String(res.body?.message ?? res.body);
  const causes: any[] = res.body?.details?.causes ?? [];
  const named = causes.some((cause) => typeof cause.field === 'string' && cause.field.length > 0) || /(spec|metadata)\.|body|json|name/i.test(message);
  if (!named) throw new Error(`${kind}: rejection names no field (HTTP ${res.status}): ${message}`);
}

beforeAll(async () => {
  ns = await kube.createNamespace('fuzz-api');
}, 60_000);

afterAll(async () => {
  if (ns) await kube.deleteNamespace(ns);
  const dir = path.join(__dirname, '..', '..', '..', 'test-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'fuzz.json');
  const previous = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  fs.writeFileSync(file, JSON.stringify({ ...previous, api: { seed: SEED, runsPerKind: RUNS, classes: counts, createdForReal: created, explainedByConditionOrEvent: explainedCount } }, null, 2) + '\n');
  // eslint-disable-next-line no-console
  console.log(`API fuzz (seed ${SEED}): ${JSON.stringify(counts)}; created for real: ${created}`);
}, 120_000);

let created = 0;
let explainedCount = 0;

describe('server-side dry-run of generated objects', () => {
  test.each(Object.keys(KINDS) as Array<keyof typeof KINDS>)('%s: every rejection names a field, nothing errors on the server', async (kind) => {
    const property = fc.asyncProperty(specs[kind], name, async (spec, objName) => dryRun(kind, spec, objName));
    await fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: true });
    expect(counts[kind].cases).toBe(RUNS);
  });
});

describe('admitted objects with the operator running', () => {
  test('the operator stays up, its reconcile errors stay bounded, and no Sandbox or claim is left unexplained', async () => {
    await ensureOperatorBundle();
    const rbac = await BundleRbac.apply(kube, api, { namespace: ns, extensions: true });
    const op = await OperatorProcess.start({ kubeconfig: rbac.kubeconfig, args: ['--extensions=true', '--leader-elect=false'] });
    try {
      const sample = admitted.slice(0, 16);
      for (const obj of sample) {
        const res = await api.request('POST', `/apis/${obj.group}/v1beta1/namespaces/${ns}/${obj.plural}`, obj.body);
        if (res.status === 201) created++;
      }
      // Settle window: long enough for several requeues with backoff, short enough for the suite.
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      const first = op.errors().length;
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      const second = op.errors().length;
      expect(op.alive).toBe(true);
      // Bounded retries: exponential backoff means far fewer errors in the second window than one per
      // object per second (what a hot loop would log).
      expect(second - first).toBeLessThanOrEqual(Math.max(10, created * 5));
      expect(created).toBeGreaterThan(0);
      // No silence: every created Sandbox and SandboxClaim has a condition or an Event that explains it.
      const events: any[] = (await api.call('GET', `/api/v1/namespaces/${ns}/events`)).items;
      for (const obj of sample.filter((o) => o.plural === 'sandboxes' || o.plural === 'sandboxclaims')) {
        const res = await api.request<any>('GET', `/apis/${obj.group}/v1beta1/namespaces/${ns}/${obj.plural}/${obj.body.metadata.name}`);
        if (res.status !== 200) continue;
        const conditions = res.body.status?.conditions ?? [];
        const explained = conditions.length > 0 || events.some((e) => e.involvedObject?.name === obj.body.metadata.name);
        if (!explained) throw new Error(`${obj.plural}/${obj.body.metadata.name} has neither a condition nor an Event after the settle window`);
        explainedCount++;
      }
    } finally {
      const code = await op.stop();
      expect(code === 0 || code === 'SIGTERM').toBe(true);
      for (const kind of Object.values(KINDS)) await api.request('DELETE', `/apis/${kind.group}/v1beta1/namespaces/${ns}/${kind.plural}`);
      await rbac.remove();
    }
  }, 240_000);
});
