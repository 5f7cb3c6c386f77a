import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Duration, Testing } from 'cdk8s';
import * as ts from 'typescript';
import { EXAMPLES } from '../../examples';
import { OUT_FILE, generateOperatorTypes } from '../../hack/gen-operator-types';
import { KINDS } from '../../src/api/groups';
import { ImagePullPolicy } from '../../src/container';
import { Sandbox } from '../../src/sandbox';
import { SandboxTemplate } from '../../src/template';
import { fullSandboxProps } from '../fixtures/full-sandbox';

/** The operator's own module resolution (its `#api/*` alias), as tsconfig.operator.json sets it. */
const OPERATOR_CONFIG = (() => {
  const root = path.resolve(__dirname, '../..');
  const file = path.join(root, 'tsconfig.operator.json');
  const { options } = ts.parseJsonConfigFileContent(ts.readConfigFile(file, ts.sys.readFile).config, ts.sys, root);
  return { paths: options.paths, pathsBasePath: options.pathsBasePath };
})();

/** The generated type each kind's objects must satisfy. */
const TYPE_OF_KIND: Record<string, string> = {
  [KINDS.sandbox.kind]: 'Sandbox',
  [KINDS.template.kind]: 'SandboxTemplate',
  [KINDS.warmPool.kind]: 'SandboxWarmPool',
  [KINDS.claim.kind]: 'SandboxClaim',
};

/** The examples hold no bare Sandbox: one with every field set. */
function bareSandbox(app: ReturnType<typeof Testing.app>): void {
  const chart = new Chart(app, 'bare');
  new Sandbox(chart, 'full', fullSandboxProps());
}

/** A template with every runtime option, so each field the injection writes is type-checked. */
function runtimeTemplate(app: ReturnType<typeof Testing.app>): void {
  const chart = new Chart(app, 'runtime');
  new SandboxTemplate(chart, 'agent', {
    metadata: { name: 'agent' },
    containers: [{ image: 'busybox', name: 'sidecar', command: ['sleep', 'infinity'] }, { image: 'python:3.12-slim', name: 'agent', security: { runAsUser: 1000 } }],
    volumeClaimTemplates: [{ name: 'work', storage: '1Gi' }],
    runtime: {
      container: 'agent',
      port: 7777,
      filesPort: 8080,
      grpcPort: 9090,
      execTimeout: Duration.minutes(2),
      token: { secretName: 'runtime-token', key: 'token' },
      workspacePath: '/work',
      workspaceVolume: 'work',
      image: 'registry.example.com/agent-sandbox-operator:dev',
      imagePullPolicy: ImagePullPolicy.ALWAYS,
      allowRoot: true,
    },
  });
}

/** Objects of the four kinds that the examples' constructs (and a full bare Sandbox and runtime template) emit. */
function emittedObjects(): Array<{ where: string; type: string; json: unknown }> {
  const out: Array<{ where: string; type: string; json: unknown }> = [];
  for (const [name, build] of [...Object.entries(EXAMPLES), ['sandbox', bareSandbox] as const, ['runtime', runtimeTemplate] as const]) {
    const app = Testing.app();
    build(app);
    for (const chart of app.charts) {
      for (const json of Testing.synth(chart) as Array<{ kind: string; metadata: { name: string } }>) {
        const type = TYPE_OF_KIND[json.kind];
        if (type) out.push({ where: `${name}/${chart.node.id}/${json.kind}/${json.metadata.name}`, type, json });
      }
    }
  }
  return out;
}

/**
 * Type-checks `objects` as literals of their generated types, with the compiler's excess-property
 * checks: a field the constructs emit and the wire type lacks, or a wrong value type, is an error.
 */
function typeCheck(objects: Array<{ where: string; type: string; json: unknown }>): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-types-'));
  try {
    const file = path.join(dir, 'emitted.ts');
    const types = [...new Set(objects.map((o) => o.type))].join(', ');
    const lines = [`import type { ${types} } from ${JSON.stringify(OUT_FILE.replace(/\.ts$/, ''))};`];
    objects.forEach((o, i) => lines.push(`// ${o.where}`, `export const o${i}: ${o.type} = ${JSON.stringify(o.json)};`));
    fs.writeFileSync(file, lines.join('\n'));
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      types: [],
      ...OPERATOR_CONFIG,
    });
    return ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      if (!d.file || d.start === undefined) return text;
      const line = d.file.getLineAndCharacterOfPosition(d.start).line;
      return `${d.file.text.split('\n')[line - 1] ?? ''}: ${text}`;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the operator model (operator/src/model/generated.ts)', () => {
  test('is what hack/gen-operator-types.ts generates from src/api/schema.ts', () => {
    expect(fs.readFileSync(OUT_FILE, 'utf8')).toEqual(generateOperatorTypes());
  });

  test('types every object of the four kinds the constructs emit (examples)', () => {
    const objects = emittedObjects();
    expect(new Set(objects.map((o) => o.type))).toEqual(new Set(Object.values(TYPE_OF_KIND)));
    expect(typeCheck(objects)).toEqual([]);
  }, 60_000);

  test('the check fails on a field the wire type lacks or a value outside an enum', () => {
    const sandbox = emittedObjects().find((o) => o.type === 'Sandbox')!;
    const json = sandbox.json as { spec: Record<string, unknown> };
    const errors = typeCheck([
      { ...sandbox, json: { ...json, spec: { ...json.spec, podTemplateX: {} } } },
      { ...sandbox, json: { ...json, spec: { ...json.spec, operatingMode: 'Paused' } } },
    ]);
    expect(errors).toEqual([
      expect.stringMatching(/podTemplateX/),
      expect.stringMatching(/"Paused"/),
    ]);
  }, 60_000);
});
