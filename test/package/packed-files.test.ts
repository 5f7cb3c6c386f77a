/**
 * The npm tarball holds only the library. jsii-pacmak embeds this same tarball in the Python wheel,
 * the Java jar, the Go module and the NuGet package, so this check covers them too
 * (test/bindings/wheel_files.py checks the wheel itself).
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');

/** Exactly these files outside lib/; in lib/ only compiled JavaScript and declarations. */
const TOP_LEVEL = ['.jsii', 'API.md', 'LICENSE', 'README.md', 'package.json'];

test('npm pack ships lib/ (.js and .d.ts), .jsii, API.md, README.md, LICENSE and package.json, nothing else', () => {
  if (!fs.existsSync(path.join(root, 'lib', 'index.js'))) throw new Error('lib/ is missing: run `npx projen compile` first');
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const files: string[] = pack.files.map((f: { path: string }) => f.path).sort();
  expect(files.filter((f) => !f.startsWith('lib/'))).toEqual(TOP_LEVEL);
  const lib = files.filter((f) => f.startsWith('lib/'));
  expect(lib.filter((f) => !/\.(js|d\.ts)$/.test(f))).toEqual([]);
  expect(lib).toEqual(expect.arrayContaining(['lib/index.js', 'lib/index.d.ts', 'lib/version.js']));
  // Every compiled module is there with its declarations.
  const compiled = listFiles(path.join(root, 'lib')).filter((f) => /\.(js|d\.ts)$/.test(f)).map((f) => `lib/${f}`).sort();
  expect(lib).toEqual(compiled);
});

function listFiles(dir: string, prefix = ''): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]);
}
