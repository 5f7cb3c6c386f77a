// Unit tests of the MCP server, in ESM (the server and the SDK are ESM packages).
// Run: npx projen mcp:test  (builds the SDK and the server first)
// The tools run against the real runtime process from operator/dist on 127.0.0.1 (`npx projen
// operator:build`), through the SDK's test handle; the end-to-end tests on the local control plane,
// with real claims, are test/integration/mcp/.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const mcpDir = path.dirname(fileURLToPath(import.meta.url));
const rootDir = path.resolve(mcpDir, '..');

export default {
  rootDir,
  testMatch: ['<rootDir>/mcp/test/**/*.test.ts'],
  testEnvironment: 'node',
  testTimeout: 30_000,
  extensionsToTreatAsEsm: ['.ts'],
  // The sources import './x.js' (Node ESM); jest resolves those to the .ts files.
  // The SDK from its sources, as the test handle (sdk/test/handle.ts) is: one copy of its classes.
  moduleNameMapper: {
    '^@cdk8s-agent-sandbox/sdk$': '<rootDir>/sdk/src/index.ts',
    '^@cdk8s-agent-sandbox/sdk/tools$': '<rootDir>/sdk/src/tools/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: path.join(mcpDir, 'test', 'tsconfig.json') }],
  },
  reporters: ['default', ['jest-junit', { outputDirectory: path.join(rootDir, 'test-reports'), outputName: 'junit-mcp.xml' }]],
};
