#!/usr/bin/env node
/** The `agent-sandbox-mcp` command. See README.md, or run it with --help. */
import { FlagError } from './flags.js';
import { main } from './main.js';

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`agent-sandbox-mcp: ${err instanceof FlagError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exit(err instanceof FlagError ? 2 : 1);
});
