/**
 * build-tools/package-version.ts, which the release's bump and unbump run for sdk/ and mcp/: each
 * package.json gets the version of the root package.json, the MCP server's dependency on the SDK is
 * pinned to it, and nothing else of the files changes, so unbump leaves them byte for byte.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { setPackageVersion } from '../../build-tools/package-version';

const read = (folder: string) => fs.readFileSync(path.join(__dirname, '..', '..', folder, 'package.json'), 'utf8');
const sdkPackageJson = read('sdk');
const mcpPackageJson = read('mcp');
const SDK = '@cdk8s-agent-sandbox/sdk';

function repo(version: string, packages: Record<string, string> = { sdk: sdkPackageJson, mcp: mcpPackageJson }): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'package-version-'));
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'cdk8s-agent-sandbox', version }, null, 2));
  for (const [folder, text] of Object.entries(packages)) {
    fs.mkdirSync(path.join(root, folder));
    fs.writeFileSync(path.join(root, folder, 'package.json'), text);
  }
  return root;
}

const setRootVersion = (root: string, version: string) => fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'cdk8s-agent-sandbox', version }));
const packageJson = (root: string, folder: string) => fs.readFileSync(path.join(root, folder, 'package.json'), 'utf8');

test('the checkout has both at 0.0.0, the MCP server on the SDK of the same version', () => {
  expect(JSON.parse(sdkPackageJson).version).toBe('0.0.0');
  expect(JSON.parse(mcpPackageJson)).toMatchObject({ version: '0.0.0', dependencies: { [SDK]: '0.0.0' } });
});

test('bump then unbump: the SDK gets the release version, then the file as it was', () => {
  const root = repo('0.3.0');
  expect(setPackageVersion(root, 'sdk')).toBe('0.3.0');
  expect(JSON.parse(packageJson(root, 'sdk'))).toEqual({ ...JSON.parse(sdkPackageJson), version: '0.3.0' });
  setRootVersion(root, '0.0.0');
  setPackageVersion(root, 'sdk');
  expect(packageJson(root, 'sdk')).toBe(sdkPackageJson);
});

test('bump then unbump: the MCP server gets the release version and depends on exactly that SDK, then the file as it was', () => {
  const root = repo('0.3.0');
  expect(setPackageVersion(root, 'mcp', [SDK])).toBe('0.3.0');
  const bumped = JSON.parse(packageJson(root, 'mcp'));
  const before = JSON.parse(mcpPackageJson);
  expect(bumped).toEqual({ ...before, version: '0.3.0', dependencies: { ...before.dependencies, [SDK]: '0.3.0' } });
  setRootVersion(root, '0.0.0');
  setPackageVersion(root, 'mcp', [SDK]);
  expect(packageJson(root, 'mcp')).toBe(mcpPackageJson);
  // Negative control: without the pin only the version moves.
  const unpinned = repo('0.3.0');
  setPackageVersion(unpinned, 'mcp');
  expect(JSON.parse(packageJson(unpinned, 'mcp'))).toEqual({ ...before, version: '0.3.0' });
});

test('only the top-level version and dependencies: nested "version" keys and other dependency lists are left alone', () => {
  const text = [
    '{',
    '  "name": "@cdk8s-agent-sandbox/mcp",',
    '  "publishConfig": {',
    '    "version": "9.9.9"',
    '  },',
    '  "version": "0.0.0",',
    '  "peerDependencies": {',
    `    "${SDK}": "0.0.0"`,
    '  },',
    '  "dependencies": {',
    '    "@cdk8s-agent-sandbox/sdk-extra": "1.0.0",',
    `    "${SDK}": "0.0.0",`,
    '    "zod": "^4.6.7"',
    '  }',
    '}',
    '',
  ].join('\n');
  const root = repo('1.2.3', { mcp: text });
  setPackageVersion(root, 'mcp', [SDK]);
  expect(packageJson(root, 'mcp')).toBe(text
    .replace('  "version": "0.0.0"', '  "version": "1.2.3"')
    .replace(`    "${SDK}": "0.0.0",`, `    "${SDK}": "1.2.3",`));
});

test('a file without a version, or without the dependency to pin, is an error', () => {
  expect(() => setPackageVersion(repo('1.2.3', { x: '{\n  "name": "x"\n}\n' }), 'x')).toThrow(/no top-level "version" field/);
  const peerOnly = `{\n  "name": "x",\n  "version": "0.0.0",\n  "peerDependencies": {\n    "${SDK}": "0.0.0"\n  }\n}\n`;
  expect(() => setPackageVersion(repo('1.2.3', { x: peerOnly }), 'x', [SDK])).toThrow(/no top-level "dependencies" entry "@cdk8s-agent-sandbox\/sdk"/);
});
