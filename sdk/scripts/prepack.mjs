// Runs before `npm pack` and `npm publish` in sdk/ (the prepack script, then `npm run build`).
// The SDK has no node_modules of its own: it builds with the repository root's dev dependencies
// (typescript, @types/node), its own dependency (@kubernetes/client-node) and the optional peers
// whose types the tools adapters import (ai in src/tools/ai.ts, @langchain/core in
// src/tools/langchain.ts), all installed by `npm ci` in the repository root and found by Node's and
// TypeScript's lookup up the directory tree.
// Without them this stops with what to do, rather than with `tsc: not found`. It then empties dist/,
// so a file whose source is gone is not packed.
// The MCP server's prepack (mcp/scripts/prepack.mjs) does the same with its own list, through prepack().
import { existsSync, realpathSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Stops the process (exit code 1, saying what to do) unless each of `needed` is in a node_modules
 * at or above `packageDir`, then empties its dist/. An entry of `needed` is a package name, or a
 * file in a package (`name/dist/index.d.ts`: that package built); `hints` says, by entry, how to
 * get one that is missing (by default: `npm ci` in the repository root).
 *
 * @param {{ packageDir: string, packageName: string, needed: readonly string[], hints?: Readonly<Record<string, string>> }} options
 */
export function prepack({ packageDir, packageName, needed, hints = {} }) {
  const missing = needed.filter((entry) => !installed(packageDir, entry));
  if (missing.length > 0) {
    const ways = [...new Set(missing.map((entry) => hints[entry] ?? 'run `npm ci` in the repository root'))];
    console.error(`${packageName}: cannot build: ${missing.join(', ')} not found in any node_modules above ${packageDir}.\n`
      + `It builds with the repository root's dependencies: ${ways.join('; ')}, then \`npm pack\` here again.`);
    process.exit(1);
  }
  rmSync(path.join(packageDir, 'dist'), { recursive: true, force: true });
}

function installed(from, entry) {
  const scoped = entry.startsWith('@');
  const parts = entry.split('/');
  const name = parts.slice(0, scoped ? 2 : 1).join('/');
  const file = parts.slice(scoped ? 2 : 1).join('/') || 'package.json';
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return existsSync(path.join(dir, 'node_modules', name, file));
    if (path.dirname(dir) === dir) return false;
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  prepack({
    packageDir: path.dirname(path.dirname(fileURLToPath(import.meta.url))),
    packageName: '@cdk8s-agent-sandbox/sdk',
    needed: ['typescript', '@types/node', '@kubernetes/client-node', 'ai', '@langchain/core'],
  });
}
