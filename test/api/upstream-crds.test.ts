/**
 * Our four CRDs against upstream's own, field path by field path: kubernetes-sigs/agent-sandbox
 * v1.0.1's k8s/crds/, read from the Go module cache (hack/fetch-upstream-crds.sh puts the module
 * there; .ci/run runs it). Every field upstream declares under spec and status, in every version
 * both serve, must be in ours with the same type, format, enum, default and required list; every
 * field only ours has must be on OUR_EXTENSIONS with its reason.
 *
 * The module is looked up with GOPROXY=off; when it is not in the cache, the test runs the fetch
 * script once (the Go module proxy this machine is configured with, like any `go` build here), so
 * `npm run test:all` and the projen build work on a fresh clone. When it is still not there the test
 * fails (never skips) and names the command that fetches it.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Testing } from 'cdk8s';
import * as YAML from 'yaml';
import { compareFieldPaths, fieldPaths, servedVersions, versionSchema, type FieldPaths } from './crd-field-paths';
import { SandboxCrds } from '../../src/crds';

const MODULE = 'sigs.k8s.io/agent-sandbox';
const VERSION = 'v1.0.1';
const FETCH_SCRIPT = path.join(__dirname, '..', '..', 'hack', 'fetch-upstream-crds.sh');

const KINDS = ['Sandbox', 'SandboxTemplate', 'SandboxWarmPool', 'SandboxClaim'] as const;
type Kind = typeof KINDS[number];

/** Fields only ours has, per kind: the path (covering everything beneath it) and why. */
const OUR_EXTENSIONS: Record<Kind, Record<string, string>> = {
  Sandbox: {
    'spec.idlePolicy': 'suspend a Sandbox nobody uses and resume it on the next request through the router; upstream has no idle lifecycle',
  },
  SandboxTemplate: {
    'spec.idlePolicy': 'the idle policy Sandboxes built from the template get',
    'status': 'templates have a status subresource here, for their NetworkPolicyReady and PodLabelsAllowed conditions; upstream templates have no status',
  },
  SandboxWarmPool: {
    'spec.scaleToZeroAfterSeconds': 'keep no warm members after that long without a claim; the next claim starts cold and refills the pool',
    'status.lastClaimTime': 'when a claim last drew on the pool, the clock scaleToZeroAfterSeconds counts from',
    'status.conditions': 'TemplateReady and ScaledToZero; upstream pools report no conditions',
  },
  SandboxClaim: {
    'spec.idlePolicy': 'the claimed Sandbox\'s idle policy instead of its template\'s',
  },
};

/** Upstream's CRDs from the Go module cache, by kind; throws, naming the fetch command, when they are not there. */
function upstreamCrds(version: string): Record<string, any> {
  let dir: string | undefined;
  let why = '';
  try {
    const out = execFileSync('go', ['mod', 'download', '-json', `${MODULE}@${version}`], {
      cwd: os.tmpdir(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off' },
    });
    dir = JSON.parse(out).Dir;
  } catch (e: any) {
    why = (e.stdout ? (() => { try { return JSON.parse(e.stdout).Error; } catch { return e.stdout; } })() : undefined) ?? e.message;
  }
  const crdDir = dir ? path.join(dir, 'k8s', 'crds') : undefined;
  if (!crdDir || !fs.existsSync(crdDir)) {
    throw new Error(`upstream's CRDs (${MODULE}@${version}, k8s/crds/) are not in the Go module cache${why ? ` (${why.trim()})` : ''}; `
      + `fetch them with \`hack/fetch-upstream-crds.sh ${version}\` (go mod download ${MODULE}@${version}), then run this test again`);
  }
  const byKind: Record<string, any> = {};
  for (const file of fs.readdirSync(crdDir).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const doc of YAML.parseAllDocuments(fs.readFileSync(path.join(crdDir, file), 'utf8'))) {
      const crd = doc.toJSON();
      if (crd?.kind === 'CustomResourceDefinition') byKind[crd.spec.names.kind] = crd;
    }
  }
  return byKind;
}

function ourCrds(): Record<string, any> {
  const chart = Testing.chart();
  new SandboxCrds(chart, 'crds');
  return Object.fromEntries(Testing.synth(chart).map((crd) => [crd.spec.names.kind, crd]));
}

let upstream: Record<string, any>;
let ours: Record<string, any>;

/** The cached CRDs, fetched first when the cache does not have them. */
function upstreamCrdsFetchingOnce(version: string): Record<string, any> {
  try {
    return upstreamCrds(version);
  } catch {
    // Its stderr says what it did; a failure leaves the lookup's own error (naming the script) below.
    spawnSync(FETCH_SCRIPT, [version], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
    return upstreamCrds(version);
  }
}

beforeAll(() => {
  upstream = upstreamCrdsFetchingOnce(VERSION);
  ours = ourCrds();
}, 300_000);

const commonVersions = (kind: Kind) => servedVersions(ours[kind]).filter((v) => servedVersions(upstream[kind]).includes(v));

test(`upstream ${VERSION} has a CRD for each of our four kinds, and each pair serves a version in common`, () => {
  expect(Object.keys(upstream).sort()).toEqual([...KINDS].sort());
  for (const kind of KINDS) expect([kind, commonVersions(kind)]).toEqual([kind, expect.arrayContaining(['v1beta1'])]);
});

test.each(KINDS)(`%s: every upstream ${VERSION} field is in ours with the same shape; fields only ours has are allow-listed`, (kind) => {
  for (const version of commonVersions(kind)) {
    const theirs = fieldPaths(versionSchema(upstream[kind], version));
    const mine = fieldPaths(versionSchema(ours[kind], version));
    // A vacuous pass (no paths read) would hide a broken reader.
    expect(theirs.size).toBeGreaterThan(kind === 'SandboxWarmPool' ? 5 : 20);
    expect([kind, version, compareFieldPaths(theirs, mine, OUR_EXTENSIONS[kind])]).toEqual([kind, version, []]);
  }
});

test('the claim\'s status.sandbox.serviceFQDN is upstream\'s (a string next to name and podIPs)', () => {
  const claim = fieldPaths(versionSchema(upstream.SandboxClaim, 'v1beta1'));
  expect(claim.get('status.sandbox.serviceFQDN')).toEqual({ type: 'string' });
  expect(fieldPaths(versionSchema(ours.SandboxClaim, 'v1beta1')).get('status.sandbox.serviceFQDN')).toEqual({ type: 'string' });
});

test('CRDs missing from the module cache: an error naming the command that fetches them (no network: GOPROXY=off)', () => {
  expect(() => upstreamCrds('v0.0.1-never-published')).toThrow(
    /not in the Go module cache .*; fetch them with `hack\/fetch-upstream-crds\.sh v0\.0\.1-never-published`/);
});

test(`the fetch script's default version is the one compared here (${VERSION})`, () => {
  expect(fs.readFileSync(FETCH_SCRIPT, 'utf8')).toMatch(new RegExp(`UPSTREAM_CRDS_VERSION:-${VERSION.replace(/\./g, '\\.')}\\}`));
});

describe('compareFieldPaths finds what differs (negative controls)', () => {
  const without = (paths: FieldPaths, drop: string): FieldPaths => new Map([...paths].filter(([p]) => p !== drop));
  const withShape = (paths: FieldPaths, at: string, shape: object): FieldPaths =>
    new Map([...paths].map(([p, s]) => [p, p === at ? { ...s, ...shape } : s]));

  test('ours without a field upstream has (the claim\'s serviceFQDN, as before it was added): reported by path', () => {
    const theirs = fieldPaths(versionSchema(upstream.SandboxClaim, 'v1beta1'));
    const mine = without(fieldPaths(versionSchema(ours.SandboxClaim, 'v1beta1')), 'status.sandbox.serviceFQDN');
    expect(compareFieldPaths(theirs, mine, OUR_EXTENSIONS.SandboxClaim)).toEqual([
      'status.sandbox.serviceFQDN: upstream declares it (string), ours lacks it; add it to src/api/schema.ts',
    ]);
  });

  test('a different type, format, enum, default or required list, each reported', () => {
    const theirs = fieldPaths(versionSchema(upstream.Sandbox, 'v1beta1'));
    const base = fieldPaths(versionSchema(ours.Sandbox, 'v1beta1'));
    const cases: Array<[string, object, string]> = [
      ['spec.service', { type: 'string' }, 'spec.service: type is "string" in ours, "boolean" upstream'],
      ['spec.shutdownTime', { format: undefined }, 'spec.shutdownTime: format is unset in ours, "date-time" upstream'],
      ['spec.operatingMode', { enum: ['Running'] }, 'spec.operatingMode: enum is ["Running"] in ours, ["Running","Suspended"] upstream'],
      ['spec.shutdownPolicy', { default: 'Delete' }, 'spec.shutdownPolicy: default is "Delete" in ours, "Retain" upstream'],
      ['spec', { required: ['podTemplate', 'service'] }, 'spec: required is ["podTemplate","service"] in ours, ["podTemplate"] upstream'],
    ];
    for (const [at, shape, message] of cases) {
      expect(compareFieldPaths(theirs, withShape(base, at, shape), OUR_EXTENSIONS.Sandbox)).toEqual([`${message}; make src/api/schema.ts match`]);
    }
  });

  test('a field only ours has, without an allow-list entry; an entry that covers nothing; an entry without a reason', () => {
    const theirs = fieldPaths(versionSchema(upstream.SandboxWarmPool, 'v1beta1'));
    const mine = fieldPaths(versionSchema(ours.SandboxWarmPool, 'v1beta1'));
    const { ['status.lastClaimTime']: _dropped, ...rest } = OUR_EXTENSIONS.SandboxWarmPool;
    expect(compareFieldPaths(theirs, mine, rest)).toEqual([
      'status.lastClaimTime: only ours has it and no allow-list entry covers it; add it, with its reason, to the allow-list or remove the field',
    ]);
    expect(compareFieldPaths(theirs, mine, { ...OUR_EXTENSIONS.SandboxWarmPool, 'spec.replicas': 'stale' })).toEqual([
      'spec.replicas: allow-list entry covers no field only ours has (upstream has it now, or ours dropped it); remove the entry',
    ]);
    expect(compareFieldPaths(theirs, mine, { ...OUR_EXTENSIONS.SandboxWarmPool, 'status.lastClaimTime': ' ' })).toEqual([
      'status.lastClaimTime: allow-list entry without a reason; say why ours has the field',
    ]);
  });

  test('paths step into array items and map values', () => {
    const paths = fieldPaths({
      properties: {
        spec: { type: 'object', properties: { env: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } }, labels: { type: 'object', additionalProperties: { type: 'string' } }, port: { 'x-kubernetes-int-or-string': true } } },
        metadata: { type: 'object', properties: { name: { type: 'string' } } },
      },
    });
    expect(Object.fromEntries(paths)).toEqual({
      'spec': { type: 'object' },
      'spec.env': { type: 'array' },
      'spec.env[]': { type: 'object', required: ['name'] },
      'spec.env[].name': { type: 'string' },
      'spec.labels': { type: 'object' },
      'spec.labels{}': { type: 'string' },
      'spec.port': { type: 'int-or-string' },
    });
  });
});
