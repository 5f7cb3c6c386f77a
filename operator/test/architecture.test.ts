/**
 * The operator's layering, checked on its sources (operator/README.md, Layout):
 * - runtime/ is Kubernetes machinery that knows nothing of sandboxes: no identifier of it speaks of
 *   sandboxes, claims, pools or templates, and it imports nothing of src/api, model/, the
 *   controllers, the router or the commands;
 * - no module of operator/src imports itself back, type-only imports included (ESLint's
 *   import/no-cycle, which lint runs on operator/src, skips `import type`: the loop claims-first
 *   used to make between runtime/claim-pressure.ts and runtime/context.ts was type-only).
 * Each check also runs on a fixture that must fail it, so neither can pass by finding nothing.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');
const RUNTIME = path.join(SRC, 'runtime');

/** Words of the domain above runtime/. The product's own name (`AGENT_SANDBOX_VERSION`, the build's environment) is not one. */
const DOMAIN_WORDS = /sandbox|claim|pool|template/i;
const PRODUCT_NAME = /agent_?sandbox/gi;
const speaksOfDomain = (name: string): boolean => DOMAIN_WORDS.test(name.replace(PRODUCT_NAME, ''));
/** Where runtime/ must not import from (as written, or resolved from `from`). */
const DOMAIN_MODULES = ['model', 'controllers', 'router', 'commands', 'sandboxd'].map((dir) => path.join(SRC, dir));

function sourceFile(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

/** Module specifiers of `import`/`export ... from` (type-only too), `import()` and `require()`. */
function specifiers(file: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0])
      && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/** What in `text` (the source of `fileName`) speaks of the domain: identifiers and imports. Comments and strings do not count. */
export function domainMentions(fileName: string, text: string): string[] {
  const file = sourceFile(fileName, text);
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    if ((ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && speaksOfDomain(node.text)) found.add(`identifier ${node.text}`);
    ts.forEachChild(node, visit);
  };
  visit(file);
  for (const spec of specifiers(file)) {
    const resolved = spec.startsWith('.') ? path.resolve(path.dirname(fileName), spec) : undefined;
    const intoDomain = resolved !== undefined && DOMAIN_MODULES.some((dir) => resolved === dir || resolved.startsWith(`${dir}${path.sep}`));
    if (spec.startsWith('#api/') || /(^|\/)src\/api(\/|$)/.test(spec) || intoDomain) found.add(`import ${spec}`);
  }
  return [...found];
}

/** The import loops among `sources` (file name -> text), each as the files around it; relative imports only. */
export function importLoops(sources: ReadonlyMap<string, string>): string[][] {
  const resolve = (from: string, spec: string): string | undefined => {
    if (!spec.startsWith('.')) return undefined;
    const base = path.resolve(path.dirname(from), spec);
    return [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => sources.has(candidate));
  };
  const edges = new Map([...sources].map(([name, text]) => [name, specifiers(sourceFile(name, text))
    .map((spec) => resolve(name, spec)).filter((to): to is string => to !== undefined)]));
  const loops: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string): void => {
    state.set(name, 'open');
    stack.push(name);
    for (const to of edges.get(name) ?? []) {
      if (state.get(to) === 'open') loops.push([...stack.slice(stack.indexOf(to)), to]);
      else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...sources.keys()].sort()) if (!state.has(name)) visit(name);
  return loops;
}

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('runtime/ knows nothing of sandboxes', () => {
  test('no runtime/ file names the domain or imports it', () => {
    const files = tsFiles(RUNTIME);
    expect(files.length).toBeGreaterThan(20);
    const found = Object.fromEntries(files
      .map((file) => [path.relative(SRC, file), domainMentions(file, fs.readFileSync(file, 'utf8'))] as const)
      .filter(([, mentions]) => mentions.length > 0));
    expect(found).toEqual({});
  });

  test('negative control: the check finds a claim type, a claim identifier and imports of the contract and a controller', () => {
    const fixture = [
      "import type { SandboxClaim } from '../model';",
      "import { KINDS } from '#api/groups';",
      "import { ClaimsFirst } from '../controllers/claims-first';",
      '// a sandbox in a comment and in a string do not count',
      "export const lanes = { claim: 16, normal: 'sandbox' };",
      'export function pressure(c: SandboxClaim): string { return KINDS.claim.kind + String(ClaimsFirst); }',
    ].join('\n');
    expect(domainMentions(path.join(RUNTIME, 'fixture.ts'), fixture).sort()).toEqual([
      'identifier ClaimsFirst', 'identifier SandboxClaim', 'identifier claim',
      'import #api/groups', 'import ../controllers/claims-first', 'import ../model',
    ]);
  });

  test('a file of generic machinery passes', () => {
    const fixture = [
      "import type { Clock } from './clock';",
      '/** Sandboxes wait here (a comment). */',
      "export const lane = (clock: Clock) => clock.now() > 0 ? 'urgent' : 'normal';",
      'export const version = process.env.AGENT_SANDBOX_VERSION;',
    ].join('\n');
    expect(domainMentions(path.join(RUNTIME, 'fixture.ts'), fixture)).toEqual([]);
  });
});

describe('no import loops in operator/src', () => {
  test('the module graph, type-only imports included, has no loop', () => {
    const sources = new Map(tsFiles(SRC).map((file) => [file, fs.readFileSync(file, 'utf8')]));
    expect(sources.size).toBeGreaterThan(100);
    expect(importLoops(sources).map((loop) => loop.map((file) => path.relative(SRC, file)).join(' -> '))).toEqual([]);
  });

  test('negative control: a type-only loop through an index file is found', () => {
    const sources = new Map([
      [path.join(SRC, 'runtime/context.ts'), "import type { Pressure } from '../controllers/claims-first';\nexport interface Context { p?: Pressure }"],
      [path.join(SRC, 'controllers/claims-first/index.ts'), "export { Pressure } from './pressure';"],
      [path.join(SRC, 'controllers/claims-first/pressure.ts'), "import type { Context } from '../../runtime/context';\nexport class Pressure { c?: Context }"],
    ]);
    expect(importLoops(sources).map((loop) => loop.map((file) => path.relative(SRC, file)))).toEqual([
      ['controllers/claims-first/index.ts', 'controllers/claims-first/pressure.ts', 'runtime/context.ts', 'controllers/claims-first/index.ts'],
    ]);
  });
});
