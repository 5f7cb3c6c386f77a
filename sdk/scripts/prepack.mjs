// Runs before `npm pack` and `npm publish` in sdk/ (the prepack script, then `npm run build`).
// The SDK has no node_modules of its own: it builds with the repository root's dev dependencies
// (typescript, @types/node), its own dependency (@kubernetes/client-node) and the optional peers
// whose types the tools adapters import (ai in src/tools/ai.ts, @langchain/core in
// src/tools/langchain.ts), all installed by `npm ci` in the repository root and found by Node's and
// TypeScript's lookup up the directory tree.
// Without them this stops with what to do, rather than with `tsc: not found`. It then empties dist/,
// so a file whose source is gone is not packed.
import { existsSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const sdkDir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const needed = ['typescript', '@types/node', '@kubernetes/client-node', 'ai', '@langchain/core'];

function installed(name) {
  for (let dir = sdkDir; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

const missing = needed.filter((name) => !installed(name));
if (missing.length > 0) {
  console.error(`@cdk8s-agent-sandbox/sdk: cannot build: ${missing.join(', ')} not found in any node_modules above ${sdkDir}.\n`
    + 'The SDK builds with the repository root\'s dependencies: run `npm ci` in the repository root, then `npm pack` here again.');
  process.exit(1);
}
rmSync(path.join(sdkDir, 'dist'), { recursive: true, force: true });
