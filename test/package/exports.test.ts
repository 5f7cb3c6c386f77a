/**
 * What the package exports at run time: the jsii assembly's classes and enums (what every language
 * gets), plus the few TypeScript-only values listed below, and none of the helpers the constructs
 * share among themselves (validation, rendering to Kubernetes JSON). Tests, the operator and tools
 * import those from their modules under src/.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const root = path.join(__dirname, '..', '..');
const src = path.join(root, 'src');

/** TypeScript-only values users may need: wire names with no jsii form (a constant is not a jsii type). */
const ALLOWED = [
  // RBAC: the subresource an agent needs `create` on to use a sandbox through the router.
  'SANDBOX_CONNECT_SUBRESOURCE',
  // The audience of the tokens an agent mints for the router.
  'SANDBOX_ROUTER_AUDIENCE',
];

interface JsiiType { readonly name: string; readonly kind: 'class' | 'enum' | 'interface' }
const assembly: { types: Record<string, JsiiType> } = JSON.parse(fs.readFileSync(path.join(root, '.jsii'), 'utf8'));
/** Interfaces are types only: nothing of them exists at run time. */
const runtimeTypes = Object.values(assembly.types).filter((t) => t.kind !== 'interface').map((t) => t.name);

/** The names a module exports that are neither jsii classes or enums nor allowed. */
function leaks(exports: object): string[] {
  const expected = new Set([...runtimeTypes, ...ALLOWED]);
  return Object.keys(exports).filter((name) => !expected.has(name)).sort();
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const pkg: object = require('../../src');

test('the package exports at run time exactly the jsii classes and enums and the allowed values', () => {
  expect(runtimeTypes.length).toBeGreaterThan(30);
  // A stale .jsii (a class added since the last compile) shows here too: run `npx projen compile`.
  expect(leaks(pkg)).toEqual([]);
  expect(Object.keys(pkg).sort()).toEqual([...runtimeTypes, ...ALLOWED].sort());
});

test('negative control: a module that also holds helpers would leak them if re-exported in full', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const container: object = require('../../src/container');
  expect(leaks(container)).toEqual(expect.arrayContaining(['_containerToKube', 'dropUndefined']));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect(leaks(require('../../src/api/labels'))).toEqual(expect.arrayContaining(['isReservedLabelKey', 'DEFAULT_SYSTEM_NAMESPACE']));
});

/**
 * Modules re-exported by name can hide a new class: one added to such a module and not to index.ts
 * would be left out of the assembly without an error. Every class and enum exported by a module of
 * src/ must be in the package, except src/api/'s (the contract shared with the operator; only the
 * api modules index.ts names are public) and names starting with `_`.
 */
test('every exported class and enum of the library\'s modules is exported by the package', () => {
  const publicApi = [...fs.readFileSync(path.join(src, 'index.ts'), 'utf8').matchAll(/from '\.\/(api\/[^']+)'/g)].map((m) => `${m[1]}.ts`);
  expect(publicApi).toEqual(expect.arrayContaining(['api/enums.ts', 'api/labels.ts']));
  const declared = sourceFiles(src)
    .filter((file) => !file.startsWith('api/') || publicApi.includes(file))
    .flatMap((file) => exportedClassesAndEnums(path.join(src, file)).map((name) => `${file}: ${name}`));
  expect(declared.length).toBeGreaterThan(30);
  expect(declared.filter((entry) => !(entry.split(': ')[1] in pkg))).toEqual([]);
});

test('negative control: the declaration scan finds classes and enums, also the internal ones', () => {
  expect(exportedClassesAndEnums(path.join(src, 'api', 'validation.ts'))).toContain('ErrorList');
  expect(exportedClassesAndEnums(path.join(src, 'container.ts'))).toEqual(expect.arrayContaining(['Protocol', 'ImagePullPolicy']));
});

function sourceFiles(dir: string, prefix = ''): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory()
    ? sourceFiles(path.join(dir, e.name), `${prefix}${e.name}/`)
    : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [`${prefix}${e.name}`] : []);
}

/** The classes and enums a file declares with `export` (syntax only), without `_`-prefixed names. */
function exportedClassesAndEnums(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  return source.statements
    .filter((s): s is ts.ClassDeclaration | ts.EnumDeclaration => (ts.isClassDeclaration(s) || ts.isEnumDeclaration(s))
      && !!s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
    .map((s) => s.name?.text ?? '')
    .filter((name) => name !== '' && !name.startsWith('_'));
}
