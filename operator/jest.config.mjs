// Unit tests of the operator, in ESM (the operator is an ESM app).
// Run: NODE_OPTIONS=--experimental-vm-modules npx jest -c operator/jest.config.mjs  (or `npx projen test:operator`)
// Behaviour against a real control plane is tested black-box in test/integration/operator/.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export default {
  rootDir,
  testMatch: ['<rootDir>/operator/test/**/*.test.ts'],
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  // `#api/<module>`: the v1beta1 contract in src/api (the alias tsconfig.operator.json declares).
  moduleNameMapper: { '^#api/(.*)$': '<rootDir>/src/api/$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: path.join(rootDir, 'tsconfig.operator.json') }],
  },
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-operator.xml' }]],
};
