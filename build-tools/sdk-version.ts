/**
 * Gives sdk/package.json the version of package.json. The release's bump runs it after giving the
 * library its new version, and unbump after setting that back to 0.0.0: the SDK is packed (sdk:pack,
 * in the package task) and published with the release's version, and the release task's closing
 * `git diff --exit-code` finds the checkout as it was. Only the version's value is rewritten; every
 * other byte of the file is kept, whoever formatted it.
 *
 * Usage: ts-node build-tools/sdk-version.ts [root]   (root: the repository, by default this one)
 */
import * as fs from 'fs';
import * as path from 'path';

export function setSdkVersion(root: string): string {
  const version: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
  const file = path.join(root, 'sdk', 'package.json');
  const text = fs.readFileSync(file, 'utf8');
  // The top-level field: two spaces in, as npm and projen write package.json.
  const next = text.replace(/^( {2}"version":\s*)"[^"]*"/m, (_, key: string) => `${key}${JSON.stringify(version)}`);
  if (JSON.parse(next).version !== version) throw new Error(`${file}: found no top-level "version" field to set to ${version}`);
  if (next !== text) fs.writeFileSync(file, next);
  return version;
}

if (require.main === module) {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
  console.log(`sdk/package.json: version ${setSdkVersion(root)}`);
}
