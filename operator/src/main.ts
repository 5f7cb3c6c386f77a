/**
 * `agent-sandbox-operator <command> [flags]`: the one binary of the operator image.
 * Commands: `controller` (reconcile the agents.x-k8s.io resources), `router` (the data-plane proxy
 * to the sandboxes), `runtime` (the daemon inside a sandbox Pod), `install-runtime` (copy node and this
 * bundle into a volume, so the runtime runs in a user's own image). `--version` prints the version.
 */
import { buildInfo } from './runtime/build-info';
import { ConfigError } from './runtime/connection';
import { UsageError } from './runtime/flags';

/**
 * Each command is imported when it runs: the bundle keeps each in a chunk of its own
 * (operator/build.mjs), so the runtime in a sandbox never evaluates the controllers or the
 * Kubernetes client, and the router never evaluates the controllers.
 */
const COMMANDS: { readonly [name: string]: (args: readonly string[]) => Promise<number> } = {
  'controller': async (args) => (await import('./commands/controller')).runController(args),
  'router': async (args) => (await import('./commands/router')).runRouter(args),
  'runtime': async (args) => (await import('./commands/runtime')).runRuntime(args),
  'install-runtime': async (args) => (await import('./commands/install-runtime')).runInstallRuntime(args),
};

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === '--version' || command === 'version') {
    const build = buildInfo();
    process.stdout.write(`agent-sandbox-operator ${build.version} (commit ${build.gitCommit}, built ${build.buildDate}, node ${process.version})\n`);
    return 0;
  }
  const run = command === undefined ? undefined : COMMANDS[command];
  if (!run) {
    const known = Object.keys(COMMANDS).join(', ');
    process.stderr.write(command === undefined || command === '--help' || command === '-h'
      ? `Usage: agent-sandbox-operator <command> [flags]\nCommands: ${known}\n`
      : `unknown command "${command}"; commands are: ${known}\n`);
    return command === '--help' || command === '-h' ? 0 : 2;
  }
  try {
    return await run(args);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`agent-sandbox-operator ${command}: ${err.message}\nRun "agent-sandbox-operator ${command} --help" for the flags.\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`agent-sandbox-operator ${command}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`${JSON.stringify({ level: 'error', time: new Date().toISOString(), msg: 'unhandled promise rejection', err: String((reason as Error)?.stack ?? reason) })}\n`);
  process.exit(1);
});

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`${JSON.stringify({ level: 'error', time: new Date().toISOString(), msg: 'the operator failed', err: err.stack ?? String(err) })}\n`);
    process.exit(1);
  },
);
