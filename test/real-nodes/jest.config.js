// The real-node suite: ONE local control plane with a real node (kubelet, containerd, runc,
// gVisor, a bridge pod network, kube-proxy, kube-router) shared by all files, the install bundle
// applied as a user applies it, from the locally built operator image (setup/global-setup.ts).
// Run: npx jest -c test/real-nodes/jest.config.js --runInBand   (as root)
const path = require('path');

const rootDir = path.resolve(__dirname, '..', '..');

module.exports = {
  rootDir,
  testMatch: ['<rootDir>/test/real-nodes/**/*.test.ts'],
  // Node's environment; kills an operator or router a file left running (test/process-environment.cjs).
  testEnvironment: '<rootDir>/test/process-environment.cjs',
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: path.join(__dirname, '..', 'tsconfig.json') }],
  },
  globalSetup: '<rootDir>/test/real-nodes/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/real-nodes/setup/global-teardown.ts',
  // One operator and one node for all files: one file at a time.
  maxWorkers: 1,
  testTimeout: 240_000,
  collectCoverage: false,
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-real-nodes.xml' }]],
};
