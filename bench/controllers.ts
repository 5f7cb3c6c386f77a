/**
 * The two controllers under test, started with equivalent settings, each as a plain child process
 * on loopback: our operator bundle (node) and the upstream Go controller built by
 * hack/build-upstream-controller.sh. The exact command lines go into the results.
 */
import { ChildProcess, execFileSync, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { freePort } from '../tools/control-plane/processes';
import { IMAGE_NODE_FLAGS, OPERATOR_BUNDLE } from '../tools/shared/operator-process';

export const ROOT = path.resolve(__dirname, '..');
export type ControllerName = 'ours' | 'upstream' | 'floor';

/** Settings both controllers get, spelled the same way (the flags are wire-identical). */
export interface ControllerSettings {
  sandboxWorkers: number;
  claimWorkers: number;
  poolWorkers: number;
  templateWorkers: number;
}

export const DEFAULT_SETTINGS: ControllerSettings = { sandboxWorkers: 100, claimWorkers: 50, poolWorkers: 1, templateWorkers: 1 };

export function sharedFlags(s: ControllerSettings, kubeconfig: string, metricsPort: number, healthPort: number): string[] {
  return [
    `--kubeconfig=${kubeconfig}`, '--extensions=true', '--leader-elect=false',
    `--metrics-bind-address=127.0.0.1:${metricsPort}`, `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    '--kube-api-qps=-1', '--kube-api-burst=1000',
    `--sandbox-concurrent-workers=${s.sandboxWorkers}`, `--sandbox-claim-concurrent-workers=${s.claimWorkers}`,
    `--sandbox-warm-pool-concurrent-workers=${s.poolWorkers}`, `--sandbox-template-concurrent-workers=${s.templateWorkers}`,
    '--sandbox-warm-pool-max-batch-size=300', '--sandbox-warm-pool-replenish-delay=0s', '--sandbox-warm-pool-max-refill-rate=0',
  ];
}

export interface RunningController {
  readonly name: ControllerName;
  readonly pid: number;
  readonly command: string[];
  readonly version: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

/**
 * Flags only the upstream binary gets: its webhook off, where it has one (v0.5.x has
 * --enable-webhook and --manage-webhook-certs; v1.0 dropped the webhook and refuses them).
 */
export function upstreamOnlyFlags(bin: string): string[] {
  const help = spawnSync(bin, ['--help'], { encoding: 'utf8', timeout: 10_000 });
  const text = `${help.stdout ?? ''}${help.stderr ?? ''}`;
  // Go's flag package lists each flag as `  -name` (then a value type or the end of the line).
  if (help.error || !/^\s+-kubeconfig\b/m.test(text)) throw new Error(`could not read the flags of ${bin} from its --help: ${help.error?.message ?? text.slice(0, 200)}`);
  return ['enable-webhook', 'manage-webhook-certs'].filter((f) => new RegExp(`^\\s+-${f}(?=\\s|$)`, 'm').test(text)).map((f) => `--${f}=false`);
}

/** Builds the upstream binary (cached) and returns its path. */
export function upstreamBinary(): string {
  const out = execFileSync(path.join(ROOT, 'hack', 'build-upstream-controller.sh'), { stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim().split('\n');
  return out[out.length - 1];
}

export interface StartOptions {
  kubeconfig: string;
  settings: ControllerSettings;
  logDir: string;
  upstreamBin?: string;
  /** Extra node flags for ours, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** Extra operator flags for ours (ours-only tuning; recorded in the run's command). */
  oursFlags?: string[];
  /** Extra flags for both controllers (flags both have, e.g. upstream's --disable-claim-events). */
  bothFlags?: string[];
}

export async function startController(name: 'ours' | 'upstream', o: StartOptions): Promise<RunningController> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const flags = [...sharedFlags(o.settings, o.kubeconfig, metricsPort, healthPort), ...(o.bothFlags ?? [])];
  let command: string[];
  let version: string;
  let started: (log: string) => boolean;
  if (name === 'ours') {
    command = [process.execPath, ...IMAGE_NODE_FLAGS, ...(o.nodeFlags ?? []), OPERATOR_BUNDLE, 'controller', ...flags, '--log-level=info', ...(o.oursFlags ?? [])];
    version = execFileSync(process.execPath, [OPERATOR_BUNDLE, '--version']).toString().trim().split('\n')[0];
    started = (log) => log.includes('caches synced; starting controllers');
  } else {
    const bin = o.upstreamBin ?? upstreamBinary();
    command = [bin, ...flags, ...upstreamOnlyFlags(bin)];
    version = execFileSync(bin, ['--version']).toString().trim().split('\n')[0];
    // controller-runtime logs "Starting workers" once per controller after its caches synced.
    started = (log) => (log.match(/Starting workers/g) ?? []).length >= 4;
  }
  fs.mkdirSync(o.logDir, { recursive: true });
  const logFile = path.join(o.logDir, `${name}-${Date.now()}.log`);
  const out = fs.openSync(logFile, 'w');
  const child: ChildProcess = spawn(command[0], command.slice(1), { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const kill = () => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.on('exit', kill);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const log = fs.readFileSync(logFile, 'utf8');
    if (started(log)) break;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited during start-up:\n${log.split('\n').slice(-30).join('\n')}`);
    if (Date.now() > deadline) {
      kill();
      throw new Error(`${name} did not start its controllers within 90 s:\n${log.split('\n').slice(-30).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name,
    pid: child.pid!,
    command,
    version,
    logFile,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(kill, 15_000);
        await exited;
        clearTimeout(t);
      }
      process.removeListener('exit', kill);
    },
  };
}
