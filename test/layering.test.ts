/**
 * Which tree may import which: tools/ (the local control plane, the demo and tools/shared/, what the
 * three share) imports nothing from bench/ or test/, and bench/ nothing from test/, so the demo and
 * the benchmarks run without the test suites and a helper has one home.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..');

/** What each tree must not import from. */
const FORBIDDEN: Record<string, readonly string[]> = { tools: ['bench', 'test'], bench: ['test'] };

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'results' ? [] : sourceFiles(full);
    return /\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The relative module specifiers of `source` (static and dynamic imports, re-exports, require). */
export function relativeImports(source: string): string[] {
  const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]);
  return specifiers.filter((s) => s.startsWith('.'));
}

/** `file`'s imports that land in a tree its own tree must not import from, as "file -> target". */
export function violations(file: string, source: string): string[] {
  const from = path.relative(ROOT, file).split(path.sep)[0];
  const forbidden = FORBIDDEN[from] ?? [];
  return relativeImports(source)
    .map((spec) => path.relative(ROOT, path.resolve(path.dirname(file), spec)))
    .filter((target) => forbidden.includes(target.split(path.sep)[0]))
    .map((target) => `${path.relative(ROOT, file)} -> ${target}`);
}

test('tools/ imports nothing from bench/ or test/, bench/ nothing from test/', () => {
  const files = Object.keys(FORBIDDEN).flatMap((tree) => sourceFiles(path.join(ROOT, tree)));
  expect(files.length).toBeGreaterThan(20);
  expect(files.flatMap((f) => violations(f, fs.readFileSync(f, 'utf8')))).toEqual([]);
});

test('the check sees every form of import (negative control)', () => {
  const file = path.join(ROOT, 'tools', 'demo', 'x.ts');
  const source = [
    "import { a } from '../../test/integration/a';",
    "import '../../bench/side-effect';",
    "export * from '../../bench/b';",
    "const c = require('../../test/c');",
    "const d = await import('../../bench/d');",
    "import { e } from '../shared/e';",
    "import * as fs from 'fs';",
  ].join('\n');
  expect(violations(file, source)).toEqual([
    'tools/demo/x.ts -> test/integration/a',
    'tools/demo/x.ts -> bench/side-effect',
    'tools/demo/x.ts -> bench/b',
    'tools/demo/x.ts -> test/c',
    'tools/demo/x.ts -> bench/d',
  ]);
  // bench/ may import tools/; test/ may import either.
  expect(violations(path.join(ROOT, 'bench', 'x.ts'), "import { f } from '../tools/shared/f';\nimport { g } from '../test/g';")).toEqual(['bench/x.ts -> test/g']);
  expect(violations(path.join(ROOT, 'test', 'x.ts'), "import { h } from '../bench/h';")).toEqual([]);
});
