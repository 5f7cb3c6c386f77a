/**
 * The `controller` command line, parsed from the single flag table in src/api/controller-flags.ts
 * (the same table the install construct renders Deployment args from), with Go flag-package
 * spelling so upstream-style args work: `--name=value`, `--name value`, a bare `--bool`, one or two
 * leading dashes; a repeated flag takes its last value. The controllers read the result through
 * runtime/flags.ts's `Flags`.
 */
import {
  CONTROLLER_FLAGS, ControllerFlagValue, ControllerFlagValues, controllerFlag, formatGoDuration, parseControllerFlagValue,
} from '#api/controller-flags';
import { type Flags, UsageError } from '../runtime/flags';

/** Every flag, typed, with defaults filled in. Getters throw on a name the table does not have. */
export class OperatorFlags implements Flags {
  private readonly values: Map<string, ControllerFlagValue>;

  public constructor(given: ControllerFlagValues = {}) {
    this.values = new Map(CONTROLLER_FLAGS.map((f) => [f.flag, given[f.flag] ?? f.default]));
  }

  public number(flag: string): number {
    return this.typed(flag, 'number') as number;
  }

  /** A duration flag in milliseconds. */
  public duration(flag: string): number {
    return this.typed(flag, 'number') as number;
  }

  public boolean(flag: string): boolean {
    return this.typed(flag, 'boolean') as boolean;
  }

  public string(flag: string): string {
    return this.typed(flag, 'string') as string;
  }

  /** The flags that differ from their defaults, for the start-up log line. */
  public nonDefaults(): Record<string, ControllerFlagValue> {
    const out: Record<string, ControllerFlagValue> = {};
    for (const f of CONTROLLER_FLAGS) if (this.values.get(f.flag) !== f.default) out[f.flag] = this.values.get(f.flag)!;
    return out;
  }

  private typed(flag: string, type: 'number' | 'boolean' | 'string'): ControllerFlagValue {
    const value = this.values.get(flag);
    if (value === undefined) throw new Error(`--${flag} is not a flag of the operator`);
    if (typeof value !== type) throw new Error(`--${flag} is a ${typeof value} flag, not a ${type}`);
    return value;
  }
}

export interface ParsedCommandLine {
  readonly flags: OperatorFlags;
  readonly version: boolean;
  readonly help: boolean;
}

const BIND_ADDRESS_FLAGS = new Set(['metrics-bind-address', 'health-probe-bind-address']);

/** Parse the args after `controller`. Throws UsageError naming the bad flag and the fix. */
export function parseControllerArgs(args: readonly string[]): ParsedCommandLine {
  const given: Record<string, ControllerFlagValue> = {};
  let version = false;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const match = /^--?([^=]+)(?:=([\s\S]*))?$/.exec(arg);
    if (!match || arg === '-' || arg === '--') {
      throw new UsageError(`unexpected argument "${arg}": the controller command takes only flags (--name=value)`);
    }
    const [, name, inline] = match;
    if (name === 'version') { version = true; continue; }
    if (name === 'help' || name === 'h') { help = true; continue; }
    const flag = controllerFlag(name);
    if (!flag) {
      throw new UsageError(`unknown flag --${name}; valid flags are ${[...CONTROLLER_FLAGS.map((f) => `--${f.flag}`), '--version', '--help'].join(', ')}`);
    }
    let raw = inline;
    if (raw === undefined) {
      // As in Go, a bool flag takes its value only as --flag=false; bare means true.
      if (flag.type === 'bool') raw = 'true';
      else if (i + 1 < args.length) raw = args[++i];
      else throw new UsageError(`flag --${name} needs a value (--${name}=<${flag.type}>)`);
    }
    given[name] = parseValue(name, raw);
  }
  return { flags: new OperatorFlags(given), version, help };
}

function parseValue(name: string, raw: string): ControllerFlagValue {
  // The binary accepts two bind addresses the install manifest must not render: "0" turns the
  // endpoint off (as upstream's controller-runtime does) and port 0 takes any free port (tests).
  if (BIND_ADDRESS_FLAGS.has(name) && (raw === '0' || /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*):0$/.test(raw))) return raw;
  const { value, error } = parseControllerFlagValue(controllerFlag(name)!, raw);
  if (error !== undefined) throw new UsageError(error);
  return value!;
}

/** `--help` text, generated from the flag table. */
export function usage(): string {
  const lines = ['Usage: agent-sandbox-operator controller [flags]', '', 'Flags:'];
  for (const f of CONTROLLER_FLAGS) {
    // Durations are shown as they are written on the command line and in docs/operator.md's flag table (`5m`).
    const value = f.type === 'duration' ? formatGoDuration(f.default as number) : f.default;
    const shown = f.default === '' ? '' : ` (default ${JSON.stringify(value)})`;
    lines.push(`  --${f.flag} ${f.type}`, `      ${f.description}${shown}`);
  }
  lines.push('  --version', '      Print the version and exit.');
  return lines.join('\n');
}

/** Warnings upstream prints at start-up for settings that are valid but likely wrong. */
export function startupWarnings(flags: OperatorFlags): string[] {
  const warnings: string[] = [];
  const workers = totalWorkers(flags);
  if (workers > 1000) warnings.push(`${workers} workers in total is more than 1000; expect API server pressure`);
  const qps = flags.number('kube-api-qps');
  const burst = flags.number('kube-api-burst');
  if (qps > 0 && workers > burst) warnings.push(`${workers} workers share a client burst of ${burst}; most writes will wait for the rate limiter`);
  return warnings;
}

/** Workers of the controllers that run: sandbox always, the rest only with --extensions. */
export function totalWorkers(flags: OperatorFlags): number {
  let total = flags.number('sandbox-concurrent-workers');
  if (flags.boolean('extensions')) {
    for (const f of ['sandbox-claim-concurrent-workers', 'sandbox-warm-pool-concurrent-workers', 'sandbox-template-concurrent-workers']) {
      total += flags.number(f);
    }
  }
  return total;
}
