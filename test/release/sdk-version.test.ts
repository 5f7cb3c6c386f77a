/**
 * build-tools/sdk-version.ts, which the release's bump and unbump run: sdk/package.json gets the
 * version of package.json, and nothing else of the file changes, so unbump leaves it byte for byte.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { setSdkVersion } from '../../build-tools/sdk-version';

const sdkPackageJson = fs.readFileSync(path.join(__dirname, '..', '..', 'sdk', 'package.json'), 'utf8');

function repo(version: string, sdk = sdkPackageJson): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-version-'));
  fs.mkdirSync(path.join(root, 'sdk'));
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'cdk8s-agent-sandbox', version }, null, 2));
  fs.writeFileSync(path.join(root, 'sdk', 'package.json'), sdk);
  return root;
}

test('bump then unbump: the release version, then the file as it was', () => {
  const root = repo('0.3.0');
  expect(setSdkVersion(root)).toBe('0.3.0');
  const bumped = fs.readFileSync(path.join(root, 'sdk', 'package.json'), 'utf8');
  expect(JSON.parse(bumped)).toEqual({ ...JSON.parse(sdkPackageJson), version: '0.3.0' });
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'cdk8s-agent-sandbox', version: '0.0.0' }));
  setSdkVersion(root);
  expect(fs.readFileSync(path.join(root, 'sdk', 'package.json'), 'utf8')).toBe(sdkPackageJson);
});

test('only the top-level version: a nested "version" key is left alone, and a file without one is an error', () => {
  const nested = '{\n  "name": "@cdk8s-agent-sandbox/sdk",\n  "publishConfig": {\n    "version": "9.9.9"\n  },\n  "version": "0.0.0"\n}\n';
  const root = repo('1.2.3', nested);
  setSdkVersion(root);
  expect(fs.readFileSync(path.join(root, 'sdk', 'package.json'), 'utf8')).toBe(nested.replace('"version": "0.0.0"', '"version": "1.2.3"'));
  expect(() => setSdkVersion(repo('1.2.3', '{\n  "name": "x"\n}\n'))).toThrow(/no top-level "version" field/);
});
