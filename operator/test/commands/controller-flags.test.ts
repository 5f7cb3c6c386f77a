import { CONTROLLER_FLAGS } from '#api/controller-flags';
import { OperatorFlags, parseControllerArgs, startupWarnings, totalWorkers, usage } from '../../src/commands/controller-flags';
import { UsageError } from '../../src/runtime/flags';

test('defaults come from the flag table', () => {
  const { flags, version, help } = parseControllerArgs([]);
  expect([version, help]).toEqual([false, false]);
  for (const f of CONTROLLER_FLAGS) {
    const value = f.type === 'bool' ? flags.boolean(f.flag) : f.type === 'string' ? flags.string(f.flag) : flags.number(f.flag);
    expect(value).toBe(f.default);
  }
  expect(flags.nonDefaults()).toEqual({});
});

test('Go flag spellings: =value, separate value, bare bool, single dash, last one wins', () => {
  const { flags } = parseControllerArgs([
    '--kube-api-qps=50', '-kube-api-burst', '100', '--leader-elect=false', '--extensions', '--sandbox-warm-pool-replenish-delay=1m30s',
    '--log-level=debug', '--log-level', 'warn',
  ]);
  expect(flags.number('kube-api-qps')).toBe(50);
  expect(flags.number('kube-api-burst')).toBe(100);
  expect(flags.boolean('leader-elect')).toBe(false);
  expect(flags.boolean('extensions')).toBe(true);
  expect(flags.duration('sandbox-warm-pool-replenish-delay')).toBe(90_000);
  expect(flags.string('log-level')).toBe('warn');
});

test('--version and --help', () => {
  expect(parseControllerArgs(['--version']).version).toBe(true);
  expect(parseControllerArgs(['-h']).help).toBe(true);
  expect(usage()).toContain('--sandbox-concurrent-workers int');
});

test('--help shows durations the way they are written on the command line', () => {
  expect(usage()).toContain('replaced. (default "5m")');
  expect(usage()).toContain('(default "0s")');
  expect(usage()).not.toMatch(/\d ms\)/);
});

test.each([
  [['--zap-log-level=debug'], /unknown flag --zap-log-level; valid flags are --metrics-bind-address, .*--kubeconfig, --version, --help/],
  [['controller'], /unexpected argument "controller"/],
  [['--leader-elect', 'false'], /unexpected argument "false"/],
  [['--kube-api-burst'], /needs a value/],
  [['--kube-api-burst=0'], /--kube-api-burst: must be greater than 0/],
  [['--sandbox-warm-pool-replenish-delay=soon'], /is not a duration/],
  [['--log-level=trace'], /not a log level/],
  [['--metrics-bind-address=8080'], /must be \[host\]:port/],
])('%j is rejected', (args, message) => {
  expect(() => parseControllerArgs(args)).toThrow(UsageError);
  expect(() => parseControllerArgs(args)).toThrow(message);
});

test('bind addresses: "0" disables, port 0 picks a free port (the binary accepts what manifests must not render)', () => {
  const { flags } = parseControllerArgs(['--metrics-bind-address=0', '--health-probe-bind-address=127.0.0.1:0']);
  expect(flags.string('metrics-bind-address')).toBe('0');
  expect(flags.string('health-probe-bind-address')).toBe('127.0.0.1:0');
});

test('typed getters refuse unknown names and wrong types', () => {
  const flags = new OperatorFlags();
  expect(() => flags.number('nope')).toThrow(/not a flag/);
  expect(() => flags.number('leader-elect')).toThrow(/boolean flag, not a number/);
});

test('total workers and the start-up warnings upstream prints', () => {
  expect(totalWorkers(parseControllerArgs([]).flags)).toBe(100);
  expect(totalWorkers(parseControllerArgs(['--extensions']).flags)).toBe(152);
  expect(startupWarnings(parseControllerArgs([]).flags)).toEqual([]);
  expect(startupWarnings(parseControllerArgs(['--kube-api-qps=20', '--kube-api-burst=30']).flags)).toEqual([expect.stringMatching(/100 workers share a client burst of 30/)]);
  expect(startupWarnings(parseControllerArgs(['--sandbox-concurrent-workers=1001']).flags)).toEqual([expect.stringMatching(/more than 1000/)]);
});
