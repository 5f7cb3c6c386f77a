// The fault suite: its own real local control plane (started by the test file, since faults kill
// and restart its processes), the built operator bundle. Run: npx projen test:faults
const path = require('path');

const rootDir = path.resolve(__dirname, '..', '..');

module.exports = {
  rootDir,
  testMatch: ['<rootDir>/test/faults/**/*.test.ts'],
  // Node's environment; kills an operator or router a file left running (test/process-environment.cjs).
  testEnvironment: '<rootDir>/test/process-environment.cjs',
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: path.join(__dirname, '..', 'tsconfig.json') }],
  },
  maxWorkers: 1,
  testTimeout: 300_000,
  collectCoverage: false,
  // Its own junit file beside the other suites', so .ci/run counts it.
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-faults.xml' }]],
};
