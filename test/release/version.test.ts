/**
 * The install bundle's default operator image follows the package version, which projen's release
 * writes to package.json before it builds (a checkout says 0.0.0): nothing here depends on 0.0.0.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Testing } from 'cdk8s';
import { AgentSandboxSystem } from '../../src';
import { OPERATOR_IMAGE_REPOSITORY } from '../../src/install/operator-deployment';
import { LIBRARY_VERSION } from '../../src/version';

const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

test('the library version is package.json\'s', () => {
  expect(LIBRARY_VERSION).toBe(packageJson.version);
  expect(LIBRARY_VERSION).toMatch(/^\d+\.\d+\.\d+/);
});

test('the default operator image is tagged v<package version>', () => {
  expect(AgentSandboxSystem.DEFAULT_IMAGE).toBe(`${OPERATOR_IMAGE_REPOSITORY}:v${packageJson.version}`);
  const chart = Testing.chart();
  new AgentSandboxSystem(chart, 'system');
  const deployment = Testing.synth(chart).find((o) => o.kind === 'Deployment' && o.metadata.name === 'agent-sandbox-controller');
  expect(deployment.spec.template.spec.containers[0].image).toBe(`${OPERATOR_IMAGE_REPOSITORY}:v${packageJson.version}`);
});

test.each(['0.1.0', '0.1.7', '1.0.0-rc.1'])('a release build of %s installs the image of that release', (version) => {
  jest.isolateModules(() => {
    jest.doMock('../../package.json', () => ({ ...packageJson, version }));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { AgentSandboxSystem: System } = require('../../src') as typeof import('../../src');
    expect(System.DEFAULT_IMAGE).toBe(`ghcr.io/cdk8s-agent-sandbox/agent-sandbox-operator:v${version}`);
  });
  jest.dontMock('../../package.json');
});

test('the compiled library (lib/, what every jsii language runs) reads the same package.json', () => {
  const compiled = path.join(__dirname, '..', '..', 'lib', 'version.js');
  if (!fs.existsSync(compiled)) throw new Error('lib/version.js is missing: run `npx projen compile` first');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect(require(compiled).LIBRARY_VERSION).toBe(packageJson.version);
});
