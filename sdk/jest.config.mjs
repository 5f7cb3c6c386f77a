// Unit tests of the SDK, in ESM (the SDK is an ESM package; @kubernetes/client-node 1.x is ESM-only).
// Run: npx projen sdk:test  (NODE_OPTIONS=--experimental-vm-modules npx jest -c sdk/jest.config.mjs)
// The runtime tests start the real runtime from operator/dist on 127.0.0.1; build it first
// (`npx projen operator:build`). Tests against the local control plane are in test/integration/sdk/.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const sdkDir = path.dirname(fileURLToPath(import.meta.url));
const rootDir = path.resolve(sdkDir, '..');

export default {
  rootDir,
  testMatch: ['<rootDir>/sdk/test/**/*.test.ts'],
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  // The SDK's sources import './x.js' (Node ESM); jest resolves those to the .ts files.
  // Some tests drive the operator's router and runtime from operator/src, whose imports use the
  // `#api/<module>` alias for src/api (tsconfig.operator.json declares it).
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1', '^#api/(.*)$': '<rootDir>/src/api/$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: path.join(sdkDir, 'test', 'tsconfig.json') }],
  },
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-sdk.xml' }]],
};
