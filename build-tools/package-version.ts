/**
 * Gives a package of this repository released beside the library (sdk/, mcp/) the version of the
 * root package.json, and pins its dependencies on the others to that same version. The release's
 * bump runs it after giving the library its new version, and unbump after setting that back to
 * 0.0.0: each package is packed (sdk:pack, mcp:pack, in the package task) and published with the
 * release's version, the MCP server depending on exactly the SDK of its release, and the release
 * task's closing `git diff --exit-code` finds the checkout as it was. Only the values change; every
 * other byte of the file is kept, whoever formatted it.
 *
 * Usage: ts-node build-tools/package-version.ts <folder> [dependency...]
 *   e.g. `mcp @cdk8s-agent-sandbox/sdk`: mcp/package.json's version, and its dependency on the SDK.
 */
import * as fs from 'fs';
import * as path from 'path';

/**
 * Sets `<root>/<folder>/package.json`'s version to `<root>/package.json`'s, and each of `pinned` in
 * its top-level "dependencies" to the same; returns that version.
 */
export function setPackageVersion(root: string, folder: string, pinned: readonly string[] = []): string {
  const version: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
  const file = path.join(root, folder, 'package.json');
  const text = fs.readFileSync(file, 'utf8');
  // Top-level fields are two spaces in, and their entries four, as npm and projen write package.json.
  let next = text.replace(/^( {2}"version":\s*)"[^"]*"/m, (_, key: string) => `${key}${JSON.stringify(version)}`);
  if (JSON.parse(next).version !== version) throw new Error(`${file}: found no top-level "version" field to set to ${version}`);
  for (const name of pinned) {
    const entry = new RegExp(`^( {4}${escapeRegExp(JSON.stringify(name))}:\\s*)"[^"]*"`, 'm');
    // Within the top-level "dependencies" object (which holds no nested object), not peer or dev dependencies.
    next = next.replace(/^ {2}"dependencies":\s*\{[^}]*\}/m, (block) => block.replace(entry, (_, key: string) => `${key}${JSON.stringify(version)}`));
    if (JSON.parse(next).dependencies?.[name] !== version) throw new Error(`${file}: found no top-level "dependencies" entry "${name}" to pin to ${version}`);
  }
  if (next !== text) fs.writeFileSync(file, next);
  return version;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

if (require.main === module) {
  const [folder, ...pinned] = process.argv.slice(2);
  if (!folder) throw new Error('usage: package-version.ts <folder> [dependency...]');
  const version = setPackageVersion(path.join(__dirname, '..'), folder, pinned);
  console.log(`${folder}/package.json: version ${version}${pinned.map((name) => `, ${name} ${version}`).join('')}`);
}
