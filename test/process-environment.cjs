// The jest environment of the suites that start operator and router processes (integration, faults,
// real nodes): jest's node environment, plus a last net for a test file that left one running
// (a beforeAll that threw before the file kept a handle to stop it). Such a process watches every
// namespace, so the next files' objects would be reconciled by two operators, and its open pipes
// keep jest from exiting. tools/shared/operator-process.ts records every live child under
// CHILDREN_KEY on the test file's global; this kills what is left once the file's own afterAll
// hooks have run, and says so.
const { TestEnvironment } = require('jest-environment-node');

const CHILDREN_KEY = '__agentSandboxOperatorChildren';

class ProcessEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

  async teardown() {
    // A child whose spawn failed has no pid and never exits: nothing to kill.
    const left = [...(this.global[CHILDREN_KEY] ?? [])].filter((c) => c.pid !== undefined && c.exitCode === null && c.signalCode === null);
    if (left.length) {
      process.stderr.write(`${this.testPath}: ${left.length} operator/router process(es) still running after the file's afterAll (pids ${left.map((c) => c.pid).join(', ')}); killing them\n`);
      await Promise.all(left.map((c) => new Promise((resolve) => {
        // SIGKILL cannot be refused; the bound only keeps a lost 'exit' event from holding the run.
        const timer = setTimeout(resolve, 10_000);
        c.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        c.kill('SIGKILL');
      })));
    }
    await super.teardown();
  }
}

module.exports = ProcessEnvironment;
