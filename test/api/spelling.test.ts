import * as fs from 'fs';
import * as path from 'path';
import { ApiObject, Chart, Duration, Testing } from 'cdk8s';
// jsii-pacmak's own rule for Python identifiers (a keyword gets a trailing "_").
import { toPythonIdentifier } from 'jsii-pacmak/lib/targets/python/util';
import * as ts from 'typescript';
import { EnvValue, ObjectRef, Sandbox, SandboxPeer, SandboxTemplate } from '../../src';
import { HostLanguage, hostLanguage, identifierIn, propName, staticMethodName } from '../../src/api/spelling';
import { ErrorList } from '../../src/api/validation';

// The snake_case that jsii-pacmak uses: codemaker, resolved from jsii-pacmak's own location.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { toSnakeCase } = require(require.resolve('codemaker', { paths: [path.dirname(require.resolve('jsii-pacmak/package.json'))] })) as {
  toSnakeCase: (name: string) => string;
};

// Strings as the jsii runtimes set them (python-runtime, java-runtime, dotnet-runtime, go-runtime).
const AGENTS: Array<[string | undefined, HostLanguage]> = [
  [undefined, 'typescript'],
  ['', 'typescript'],
  ['node.js/v20.11.0', 'typescript'],
  ['Python/3.12.1', 'python'],
  ['Java/21.0.2', 'java'],
  ['DotNet/8.0.1/.NETCoreApp,Version=v6.0/1.0.0.0', 'csharp'],
  ['go1.22.1/linux/amd64', 'go'],
];

const saved = process.env.JSII_AGENT;
afterEach(() => {
  if (saved === undefined) delete process.env.JSII_AGENT;
  else process.env.JSII_AGENT = saved;
});

describe('hostLanguage', () => {
  test.each(AGENTS)('JSII_AGENT %p is %s', (agent, language) => {
    expect(hostLanguage(agent)).toBe(language);
  });

  test('reads JSII_AGENT at each call', () => {
    process.env.JSII_AGENT = 'Python/3.11.7';
    expect(hostLanguage()).toBe('python');
    delete process.env.JSII_AGENT;
    expect(hostLanguage()).toBe('typescript');
  });
});

describe('propName', () => {
  test.each([
    ['typescript', 'idlePolicy.suspendAfter', 'idlePolicy.suspendAfter'],
    ['java', 'idlePolicy.suspendAfter', 'idlePolicy.suspendAfter'],
    ['python', 'idlePolicy.suspendAfter', 'idle_policy.suspend_after'],
    ['csharp', 'idlePolicy.suspendAfter', 'IdlePolicy.SuspendAfter'],
    ['go', 'idlePolicy.suspendAfter', 'IdlePolicy.SuspendAfter'],
    ['python', 'serviceAccount', 'service_account'],
    ['python', 'containers[0].envValues["API_KEY"].key', 'containers[0].env_values["API_KEY"].key'],
    ['go', 'containers[0].envValues["API_KEY"].key', 'Containers[0].EnvValues["API_KEY"].Key'],
    ['python', 'podLabels["app.kubernetes.io/myName"]', 'pod_labels["app.kubernetes.io/myName"]'],
    ['python', 'podLabels["a]b.cD"]', 'pod_labels["a]b.cD"]'],
    ['python', 'containers[].name', 'containers[].name'],
    ['python', 'volumes[].name (including volume claim templates)', 'volumes[].name (including volume claim templates)'],
    ['python', 'metadata.name', 'metadata.name'],
    ['python', 'mtlsCaSecretName', 'mtls_ca_secret_name'],
    ['python', 'podIPs', 'pod_i_ps'],
    ['python', 'limitGiB', 'limit_gib'],
    ['python', 'from', 'from_'],
  ] as Array<[HostLanguage, string, string]>)('%s: %s → %s', (language, input, output) => {
    expect(propName(input, language)).toBe(output);
    // Idempotent: a line already spelled (a nested list's lines) is not respelled again.
    expect(propName(output, language)).toBe(output);
  });

  test('follows JSII_AGENT when no language is given', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    expect(propName('serviceAccountName')).toBe('service_account_name');
    delete process.env.JSII_AGENT;
    expect(propName('serviceAccountName')).toBe('serviceAccountName');
  });

  test('static methods: Python snake_case, C# PascalCase, Go Type_Method', () => {
    expect(staticMethodName('ObjectRef', 'fromName', 'typescript')).toBe('ObjectRef.fromName');
    expect(staticMethodName('ObjectRef', 'fromName', 'java')).toBe('ObjectRef.fromName');
    expect(staticMethodName('ObjectRef', 'fromName', 'python')).toBe('ObjectRef.from_name');
    expect(staticMethodName('ObjectRef', 'fromName', 'csharp')).toBe('ObjectRef.FromName');
    expect(staticMethodName('ObjectRef', 'fromName', 'go')).toBe('ObjectRef_FromName');
  });
});

/** Every property of an exported interface and every method of an exported class in src/ (not the generated L1s). */
function apiNames(): string[] {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'generated') walk(file);
      } else if (entry.name.endsWith('.ts')) {
        const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
        const visit = (node: ts.Node): void => {
          if ((ts.isPropertySignature(node) || ts.isMethodDeclaration(node)) && node.name && ts.isIdentifier(node.name)) {
            names.add(node.name.text);
          }
          ts.forEachChild(node, visit);
        };
        visit(source);
      }
    }
  };
  walk(path.join(__dirname, '..', '..', 'src'));
  return [...names].filter((n) => !n.startsWith('_'));
}

describe('spellings agree with what jsii-pacmak generates', () => {
  const names = apiNames();

  test('the library has props to check', () => {
    expect(names).toEqual(expect.arrayContaining(['serviceAccount', 'idlePolicy', 'suspendAfter', 'imagePullSecrets', 'fromName']));
  });

  test('Python: toPythonIdentifier(toSnakeCase(name)) for every prop and method', () => {
    const wrong = names.filter((n) => identifierIn(n, 'python') !== toPythonIdentifier(toSnakeCase(n)));
    expect(wrong).toEqual([]);
  });

  test('C# and Go: the first letter capitalized; Java: as in TypeScript', () => {
    for (const n of names) {
      expect(identifierIn(n, 'csharp')).toBe(n.charAt(0).toUpperCase() + n.slice(1));
      expect(identifierIn(n, 'go')).toBe(n.charAt(0).toUpperCase() + n.slice(1));
      expect(identifierIn(n, 'java')).toBe(n);
    }
  });
});

describe('ErrorList', () => {
  test('prop paths follow the language; manifest fields are kept as YAML', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    const errors = new ErrorList();
    errors.prop('idlePolicy.suspendAfter', 'is required');
    errors.check('serviceAccountName', 'is bad');
    errors.field('spec.podTemplate.spec.serviceAccountName', 'is bad too');
    errors.prop('ignored', undefined);
    expect(errors.all).toEqual([
      'idle_policy.suspend_after: is required',
      'service_account_name: is bad',
      'spec.podTemplate.spec.serviceAccountName: is bad too',
    ]);
  });

  test('without JSII_AGENT the lines are as in TypeScript (negative control)', () => {
    delete process.env.JSII_AGENT;
    const errors = new ErrorList();
    errors.prop('idlePolicy.suspendAfter', 'is required');
    errors.field('spec.podTemplate.spec.serviceAccountName', 'is bad too');
    expect(errors.all).toEqual(['idlePolicy.suspendAfter: is required', 'spec.podTemplate.spec.serviceAccountName: is bad too']);
  });
});

/** The message of what synthesizing `build`'s chart throws. */
function synthError(build: (chart: Chart) => void): string {
  const chart = new Chart(Testing.app(), 'c', { namespace: 'agents' });
  build(chart);
  try {
    Testing.synth(chart);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('synth did not fail');
}

/** Bad props of several kinds, each reported under its prop name. */
function badSandbox(chart: Chart): void {
  const config = new ApiObject(chart, 'config', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' } });
  new Sandbox(chart, 'sb', {
    containers: [{ image: 'python:3.12-slim', envValues: { API_KEY: EnvValue.fromSecretKey(config, 'key') } }],
    serviceAccount: config,
    serviceAccountName: 'other',
    idlePolicy: { suspendAfter: Duration.millis(1500) },
    terminationGracePeriod: Duration.millis(1500),
  });
}

describe('synth errors from Python name props as Python spells them', () => {
  test('Python: snake_case props, keys kept, the fix spelled for Python', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    const message = synthError(badSandbox);
    expect(message).toMatch(/service_account: construct c\/config is a ConfigMap \(v1\) but a ServiceAccount is expected; .*ObjectRef\.from_name/);
    expect(message).toMatch(/service_account: and service_account_name are both set/);
    expect(message).toMatch(/idle_policy\.suspend_after: must be whole seconds/);
    expect(message).toMatch(/termination_grace_period: must be a whole number of seconds/);
    expect(message).toMatch(/containers\[0\]\.env_values\["API_KEY"\]: .* but a Secret is expected/);
    expect(message).not.toMatch(/serviceAccount|idlePolicy|envValues|suspendAfter/);
  });

  test('TypeScript (no JSII_AGENT) and Java: camelCase, as before (negative control)', () => {
    for (const agent of [undefined, 'Java/21.0.2']) {
      if (agent === undefined) delete process.env.JSII_AGENT;
      else process.env.JSII_AGENT = agent;
      const message = synthError(badSandbox);
      expect(message).toMatch(/serviceAccount: construct c\/config is a ConfigMap \(v1\) but a ServiceAccount is expected; .*ObjectRef\.fromName/);
      expect(message).toMatch(/serviceAccount: and serviceAccountName are both set/);
      expect(message).toMatch(/idlePolicy\.suspendAfter: must be whole seconds/);
      expect(message).toMatch(/containers\[0\]\.envValues\["API_KEY"\]: .* but a Secret is expected/);
      expect(message).not.toMatch(/service_account|idle_policy|env_values/);
    }
  });

  test('Go and C#: PascalCase props', () => {
    process.env.JSII_AGENT = 'go1.22.1/linux/amd64';
    const message = synthError(badSandbox);
    expect(message).toMatch(/ServiceAccount: and ServiceAccountName are both set/);
    expect(message).toMatch(/IdlePolicy\.SuspendAfter: must be whole seconds/);
    expect(message).toMatch(/ObjectRef_FromName/);
  });

  test('a manifest field keeps its YAML spelling under Python', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    // A value only the CRD schema catches, reported by its manifest field.
    const message = synthError((chart) => new SandboxTemplate(chart, 't', { containers: [{ image: 'x', workingDir: 42 as any }] }));
    expect(message).toContain('spec.podTemplate.spec.containers[0].workingDir: must be a string');
  });

  test('argument errors name the method as Python spells it', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    const chart = Testing.chart();
    const sa = new ApiObject(chart, 'sa', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'x' } });
    expect(() => SandboxPeer.namespaceOf(sa)).toThrow(/^SandboxPeer\.namespace_of\(\): invalid arguments:\n {2}- namespace: .* but a Namespace is expected; .*ObjectRef\.from_name/);
    expect(() => SandboxPeer.namespaceLabels({ myTeam: '!' })).toThrow(/labels\["myTeam"\]: value "!"/);
  });

  test('a resolve-time error names the prop as Python spells it', () => {
    process.env.JSII_AGENT = 'Python/3.12.1';
    const chart = Testing.chart();
    const config = new ApiObject(chart, 'config', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' } });
    const ref = ObjectRef.fromConstruct(config);
    expect(() => ref._resolve('imagePullSecrets[0]', { kind: 'Secret', group: '', namespaced: true }, undefined))
      .toThrow(/^image_pull_secrets\[0\]: construct test\/config is a ConfigMap/);
  });
});
