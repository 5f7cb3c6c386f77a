/**
 * Keep a local control plane running between commands, for development and demos:
 *
 *   npx ts-node --transpile-only tools/control-plane/cli.ts up [--nodes N] [--pod-ready-delay-ms MS] [--benchmark] [--no-apf] [--no-pod-runner] [--real-nodes 1] [--manifest FILE]...
 *   npx ts-node --transpile-only tools/control-plane/cli.ts status
 *   npx ts-node --transpile-only tools/control-plane/cli.ts down
 *
 * `--real-nodes 1` adds a real node (kubelet, containerd, runc, gVisor; see real-node.ts); it needs root.
 *
 * `up` starts the processes detached, records them in ~/.cache/cdk8s-agent-sandbox/cluster.json
 * and exits; `down` stops exactly those pids and removes the files.
 */
import * as path from 'path';
import { ControlPlaneOptions, knownKubeconfigPath, startControlPlane, stopRecorded } from './control-plane';
import { isRunning } from './processes';
import { ClusterState, readState, removeState, stateFile, writeState } from './state';

const log = (m: string) => process.stderr.write(`[control-plane] ${m}\n`);

function parseUpArgs(argv: string[]): ControlPlaneOptions {
  const manifests: string[] = [];
  let opts: ControlPlaneOptions = { detached: true, log, manifests };
  for (let i = 0; i < argv.length; i++) {
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${argv[i - 1]} needs a value`);
      return v;
    };
    const num = (flag: string, v: string) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} expects a non-negative number, got ${v}`);
      return n;
    };
    switch (argv[i]) {
      case '--nodes': opts = { ...opts, nodes: num('--nodes', next()) }; break;
      case '--pod-ready-delay-ms': opts = { ...opts, podReadyDelayMs: num('--pod-ready-delay-ms', next()) }; break;
      case '--pod-cidr': opts = { ...opts, podCidr: next() }; break;
      case '--benchmark': opts = { ...opts, benchmarkMode: true }; break;
      case '--no-apf': opts = { ...opts, priorityAndFairness: false }; break;
      case '--no-pod-runner': opts = { ...opts, podRunner: false }; break;
      case '--real-nodes': opts = { ...opts, realNodes: num('--real-nodes', next()) }; break;
      case '--bin-dir': opts = { ...opts, binDir: next() }; break;
      case '--manifest': manifests.push(path.resolve(next())); break;
      default: throw new Error(`unknown option ${argv[i]}`);
    }
  }
  return opts;
}

async function up(argv: string[]): Promise<void> {
  const existing = readState();
  if (existing?.processes.some(isRunning)) {
    throw new Error(`a control plane is already running (${stateFile()}); run "down" first`);
  }
  const cp = await startControlPlane(parseUpArgs(argv));
  const state: ClusterState = {
    workDir: cp.workDir,
    kubeconfig: cp.kubeconfig,
    server: cp.server,
    binDir: cp.binDir,
    nodeBinDir: cp.realNodes?.artifacts.nodeBinDir,
    images: cp.realNodes?.artifacts.images.refs,
    startedAt: new Date().toISOString(),
    processes: cp.processes,
  };
  writeState(state);
  process.stdout.write([
    `control plane up in ${(cp.timings.totalMs / 1000).toFixed(1)} s: ${cp.server}`,
    `kubeconfig: ${knownKubeconfigPath()}`,
    `state: ${stateFile()}`,
    `export KUBECONFIG=${knownKubeconfigPath()}`,
    `export PATH=${cp.binDir}:$PATH`,
    '',
  ].join('\n'));
}

async function down(): Promise<void> {
  const state = readState();
  if (!state) {
    log(`no ${stateFile()}: nothing to stop`);
    return;
  }
  await stopRecorded(state, log);
  removeState();
  log(`stopped ${state.processes.length} processes and removed ${state.workDir}`);
}

function status(): void {
  const state = readState();
  if (!state) {
    process.stdout.write('no control plane recorded\n');
    return;
  }
  const lines = state.processes.map((p) => `  ${p.name.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${isRunning(p) ? 'running' : 'GONE'}`);
  process.stdout.write([`${state.server} (started ${state.startedAt}, ${state.workDir})`, ...lines, ''].join('\n'));
}

async function main(): Promise<void> {
  const [cmd, ...rest] = process.argv.slice(2);
  switch (cmd) {
    case 'up': return up(rest);
    case 'down': return down();
    case 'status': return status();
    default: throw new Error('usage: cli.ts up [options] | status | down');
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
});
