// Runs before `npm pack` and `npm publish` in mcp/ (the prepack script, then `npm run build`).
// As the SDK (sdk/scripts/prepack.mjs, whose check this uses): mcp/ has no node_modules of its own
// and builds with the repository root's (typescript, @types/node, its dependencies), installed by
// `npm ci` there. It imports the SDK by its package name, which the root's node_modules links to
// sdk/: that must be built (sdk/dist), as the package task's sdk:pack does before mcp:pack.
// Without them this stops with what to do; it then empties dist/, so a file whose source is gone is not packed.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepack } from '../../sdk/scripts/prepack.mjs';

const sdkBuilt = '@cdk8s-agent-sandbox/sdk/dist/index.d.ts';
prepack({
  packageDir: path.dirname(path.dirname(fileURLToPath(import.meta.url))),
  packageName: '@cdk8s-agent-sandbox/mcp',
  needed: ['typescript', '@types/node', '@kubernetes/client-node', '@modelcontextprotocol/sdk', 'zod', '@cdk8s-agent-sandbox/sdk', sdkBuilt],
  hints: { [sdkBuilt]: 'build the SDK (`npx projen sdk:build` in the repository root, or `npm pack` in sdk/)' },
});
