// Integration tests against ONE real local control plane shared by all test files
// (started in setup/global-setup.ts, stopped in setup/global-teardown.ts).
// Run: npx jest -c test/integration/jest.config.js
const path = require('path');

const rootDir = path.resolve(__dirname, '..', '..');

module.exports = {
  rootDir,
  testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
  // Node's environment; kills an operator or router a file left running (test/process-environment.cjs).
  testEnvironment: '<rootDir>/test/process-environment.cjs',
  transform: {
    // The SDK's sources are ES modules (sdk/package.json): the tests that load its process.v1 codec
    // (data-plane/process-proto.ts) get it compiled to CommonJS, as jest runs them.
    '^.+/sdk/src/.+\\.ts$': path.join(__dirname, 'setup', 'sdk-commonjs-transform.js'),
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: path.join(__dirname, '..', 'tsconfig.json') }],
  },
  // The operator's `#api/<module>` alias (tsconfig.operator.json): the router tests import operator/src.
  moduleNameMapper: { '^#api/(.*)$': '<rootDir>/src/api/$1' },
  globalSetup: '<rootDir>/test/integration/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/integration/setup/global-teardown.ts',
  // Test files share one cluster and each uses its own namespace, but the operator each operator
  // test starts watches every namespace: two files at once would have two operators reconciling
  // each other's objects, so a crash test's restart, a write count or a denied permission could pass
  // or fail because of the other one. One file at a time, as `projen test:integration` runs them.
  maxWorkers: 1,
  testTimeout: 180_000,
  collectCoverage: false,
  // Its own file next to the unit run's junit.xml, so .ci/run counts both.
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-integration.xml' }]],
};
