import * as fc from 'fast-check';
import {
  CONTROLLER_FLAGS, controllerFlag, flagPropertyName, formatGoDuration, formatLabelList, parseControllerFlagValue, parseGoDuration,
  parseLabelList, portOfBindAddress, renderControllerArgs, validateControllerFlagValues,
} from '../../src/api/controller-flags';
import { PUBLIC_INTERNET_IPV4_EXCEPT, PUBLIC_INTERNET_IPV6_EXCEPT, defaultSandboxNetworkPolicySpec } from '../../src/api/network-policy-defaults';

function flag(name: string) {
  const found = controllerFlag(name);
  if (!found) throw new Error(`no flag ${name}`);
  return found;
}

describe('the controller flag table', () => {
  test('names, types and defaults match upstream where upstream has the flag', () => {
    const table = Object.fromEntries(CONTROLLER_FLAGS.map((f) => [f.flag, [f.type, f.default]]));
    expect(table).toEqual({
      'metrics-bind-address': ['string', ':8080'],
      'health-probe-bind-address': ['string', ':8081'],
      'leader-elect': ['bool', true],
      'leader-election-namespace': ['string', ''],
      'extensions': ['bool', false],
      'cluster-domain': ['string', 'cluster.local'],
      'kube-api-qps': ['float', -1],
      'kube-api-burst': ['int', 10],
      'kube-api-max-in-flight': ['int', 32],
      'sandbox-concurrent-workers': ['int', 100],
      'sandbox-claim-concurrent-workers': ['int', 50],
      'sandbox-warm-pool-concurrent-workers': ['int', 1],
      'sandbox-template-concurrent-workers': ['int', 1],
      'sandbox-progress-status-window': ['duration', 1000],
      'sandbox-warm-member-progress-window': ['duration', 10_000],
      'claims-first-max-defer': ['duration', 5000],
      'sandbox-warm-pool-max-batch-size': ['int', 300],
      'sandbox-warm-pool-replenish-delay': ['duration', 0],
      'sandbox-warm-pool-max-refill-rate': ['float', 0],
      'sandbox-warm-pool-status-window': ['duration', 1000],
      'sandbox-warm-pool-readiness-grace-period': ['duration', 300_000],
      'sandbox-warm-pool-unschedulable-recheck-interval': ['duration', 60_000],
      'enable-warm-pool-eviction': ['bool', true],
      'cache-label-selectors': ['bool', false],
      'disable-claim-events': ['bool', false],
      'disable-claim-observability-annotations': ['bool', false],
      'router-namespace': ['string', ''],
      'router-pod-labels': ['string', ''],
      'cluster-cidrs': ['string', ''],
      'log-level': ['string', 'info'],
      'kubeconfig': ['string', ''],
    });
  });

  test('no webhook flags: we serve v1beta1 only, without a conversion webhook', () => {
    expect(CONTROLLER_FLAGS.filter((f) => f.flag.includes('webhook'))).toEqual([]);
  });

  test('every default passes its own validation', () => {
    const defaults = Object.fromEntries(CONTROLLER_FLAGS.map((f) => [f.flag, f.default]));
    expect(validateControllerFlagValues(defaults)).toEqual([]);
    expect(renderControllerArgs(defaults)).toEqual([]);
  });

  test('property names are the camelCase of the flags', () => {
    expect(flagPropertyName('sandbox-warm-pool-max-refill-rate')).toBe('sandboxWarmPoolMaxRefillRate');
    expect(flagPropertyName('kubeconfig')).toBe('kubeconfig');
  });
});

describe('renderControllerArgs', () => {
  test('renders only non-default values, in table order, durations Go-style', () => {
    expect(renderControllerArgs({
      'log-level': 'debug',
      'sandbox-warm-pool-readiness-grace-period': 90_000,
      'extensions': true,
      'sandbox-concurrent-workers': 100,
      'kube-api-qps': 50.5,
      'leader-elect': false,
      'sandbox-warm-pool-replenish-delay': 1500,
    })).toEqual([
      '--leader-elect=false',
      '--extensions=true',
      '--kube-api-qps=50.5',
      '--sandbox-warm-pool-replenish-delay=1s500ms',
      '--sandbox-warm-pool-readiness-grace-period=1m30s',
      '--log-level=debug',
    ]);
  });

  test('throws on invalid values instead of rendering them', () => {
    expect(() => renderControllerArgs({ 'kube-api-burst': 0 })).toThrow('--kube-api-burst must be greater than 0');
    expect(() => renderControllerArgs({ 'webhook-port': 9443 })).toThrow('--webhook-port is not a flag of the operator');
  });

  test('render then parse gives the values back', () => {
    const values = {
      'sandbox-claim-concurrent-workers': 7,
      'sandbox-warm-pool-max-refill-rate': 12.5,
      'sandbox-warm-pool-unschedulable-recheck-interval': 3_723_004,
      'cache-label-selectors': true,
      'cluster-domain': 'corp.internal',
    };
    const parsed: { [flag: string]: unknown } = {};
    for (const arg of renderControllerArgs(values)) {
      const [, name, raw] = /^--([^=]+)=(.*)$/.exec(arg)!;
      parsed[name] = parseControllerFlagValue(flag(name), raw).value;
    }
    expect(parsed).toEqual(values);
  });
});

describe('validation', () => {
  test.each([
    ['sandbox-concurrent-workers', 0, 'must be greater than 0 (it is 0); use at least 1 worker'],
    ['sandbox-claim-concurrent-workers', -3, 'must be greater than 0'],
    ['sandbox-warm-pool-concurrent-workers', 1.5, 'must be a whole number'],
    ['sandbox-template-concurrent-workers', 0, 'use at least 1 worker'],
    ['sandbox-warm-pool-max-batch-size', 0, 'use a batch of at least 1'],
    ['kube-api-burst', 0, 'use a burst of at least 1'],
    ['kube-api-qps', Infinity, 'must be a finite number'],
    ['sandbox-warm-pool-max-refill-rate', -1, 'must be 0 (unpaced) or a positive rate'],
    ['sandbox-warm-pool-max-refill-rate', NaN, 'must be a finite number'],
    ['sandbox-warm-pool-replenish-delay', -1000, 'must not be negative (it is -1s); use 0s to disable'],
    ['sandbox-warm-pool-readiness-grace-period', 0, 'must be greater than 0s (it is 0s)'],
    ['sandbox-warm-pool-unschedulable-recheck-interval', 0.5, 'must be a whole number of milliseconds'],
    ['metrics-bind-address', '8080', 'must be [host]:port'],
    ['health-probe-bind-address', ':0', 'must be [host]:port'],
    ['leader-election-namespace', 'Kube_System', 'must consist of lowercase letters'],
    ['cluster-domain', 'bad domain', 'must consist of lowercase letters'],
    ['log-level', 'verbose', 'is not a log level; use one of debug, info, warn, error'],
    ['leader-elect', 'yes', 'must be true or false'],
    ['kubeconfig', 42, 'must be a string'],
  ] as Array<[string, never, string]>)('--%s=%p', (name, value, message) => {
    const problems = validateControllerFlagValues({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0].flag).toBe(name);
    expect(problems[0].message).toContain(message);
  });

  test('bind addresses accept hosts and IPv6 literals', () => {
    expect(portOfBindAddress(':8080')).toBe(8080);
    expect(portOfBindAddress('127.0.0.1:9090')).toBe(9090);
    expect(portOfBindAddress('[::1]:8443')).toBe(8443);
    expect(portOfBindAddress('localhost')).toBeUndefined();
    expect(portOfBindAddress(':70000')).toBeUndefined();
  });
});

describe('parseControllerFlagValue', () => {
  test('parses each type as the Go binary would', () => {
    expect(parseControllerFlagValue(flag('leader-elect'), 'F')).toEqual({ value: false });
    expect(parseControllerFlagValue(flag('kube-api-burst'), '25')).toEqual({ value: 25 });
    expect(parseControllerFlagValue(flag('kube-api-qps'), '-1')).toEqual({ value: -1 });
    expect(parseControllerFlagValue(flag('sandbox-warm-pool-readiness-grace-period'), '2m30s')).toEqual({ value: 150_000 });
    expect(parseControllerFlagValue(flag('sandbox-warm-pool-replenish-delay'), '0')).toEqual({ value: 0 });
    expect(parseControllerFlagValue(flag('log-level'), 'warn')).toEqual({ value: 'warn' });
  });

  test('rejects malformed and invalid values with the flag name', () => {
    expect(parseControllerFlagValue(flag('leader-elect'), 'yes').error).toBe('--leader-elect: "yes" is not a boolean; use true or false');
    expect(parseControllerFlagValue(flag('kube-api-burst'), '2.5').error).toContain('--kube-api-burst: must be a whole number');
    expect(parseControllerFlagValue(flag('kube-api-qps'), '').error).toContain('--kube-api-qps: must be a finite number');
    expect(parseControllerFlagValue(flag('sandbox-warm-pool-readiness-grace-period'), '5 minutes').error)
      .toContain('is not a duration; use a Go-style duration such as "30s", "5m" or "1h30m"');
    expect(parseControllerFlagValue(flag('sandbox-warm-pool-readiness-grace-period'), '0s').error)
      .toContain('must be greater than 0s');
    expect(parseControllerFlagValue(flag('sandbox-concurrent-workers'), '0').error).toContain('use at least 1 worker');
  });
});

describe('Go durations', () => {
  test.each([
    ['0s', 0], ['5m', 300_000], ['30s', 30_000], ['1h30m', 5_400_000], ['250ms', 250], ['1.5h', 5_400_000],
    ['.5s', 500], ['-2s', -2000], ['1m0s', 60_000], ['500us', 0.5], ['1000000ns', 1],
  ])('parses %s', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  test.each(['', '5', 'm', '1d', '5 m', '1h-30m', '--1s'])('rejects %p', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });

  test('formats compactly', () => {
    expect(formatGoDuration(0)).toBe('0s');
    expect(formatGoDuration(300_000)).toBe('5m');
    expect(formatGoDuration(3_723_004)).toBe('1h2m3s4ms');
    expect(formatGoDuration(-1000)).toBe('-1s');
  });

  test('format then parse is the identity on whole milliseconds', () => {
    fc.assert(fc.property(fc.integer({ min: -1e12, max: 1e12 }), (ms) => parseGoDuration(formatGoDuration(ms)) === ms));
  });
});

describe('label lists (--router-pod-labels)', () => {
  test('any valid labels format and parse back to themselves', () => {
    const name = fc.stringMatching(/^[a-z0-9]([-a-z0-9_.]{0,20}[a-z0-9])?$/);
    const key = fc.tuple(fc.option(fc.stringMatching(/^[a-z]([a-z0-9-]{0,8}[a-z0-9])?(\.[a-z]{2,5})?$/), { nil: undefined }), name)
      .map(([prefix, n]) => (prefix ? `${prefix}/${n}` : n));
    fc.assert(fc.property(fc.dictionary(key, fc.oneof(fc.constant(''), name), { maxKeys: 4 }), (labels) => {
      expect(parseLabelList(formatLabelList(labels))).toEqual(labels);
    }));
  });

  test.each([['app', 'is not key=value'], ['a=b,', 'is not key=value'], ['a b=c', 'key "a b" must be a name'], ['a=b c', 'value "b c" must be']])('%j is refused: %s', (text, problem) => {
    const result = parseLabelList(text);
    expect(typeof result).toBe('string');
    expect(result).toContain(problem);
    expect(result).toContain('write labels as key=value,key2=value2');
  });
});

describe('--cluster-cidrs', () => {
  test.each([
    ['198.18.0.0/15', undefined],
    ['198.18.0.0/15,fd00:10::/56', undefined],
    ['', undefined],
    ['198.18.0.1/15', 'has host bits set; give the network address of the block'],
    ['198.18.0.0', 'is not a network CIDR'],
    ['0.0.0.0/0', 'is every address'],
    ['198.18.0.0/15, fd00:10::/56', undefined],
    ['198.18.0.0/15,nope', '"nope" is not a network CIDR'],
  ])('%j', (value, problem) => {
    const problems = validateControllerFlagValues({ 'cluster-cidrs': value });
    if (problem === undefined) expect(problems).toEqual([]);
    else expect(problems).toEqual([{ flag: 'cluster-cidrs', message: expect.stringContaining(problem) }]);
  });

  test('the default egress leaves the cluster\'s ranges out as well, per address family, without repeating a private one', () => {
    const spec = defaultSandboxNetworkPolicySpec('t', 'ns', undefined, ['198.18.0.0/15', '10.0.0.0/8', 'fd00:10::/56']);
    const [v4, v6] = spec.egress![0].to!.map((p) => p.ipBlock!);
    expect(v4.except).toEqual([...PUBLIC_INTERNET_IPV4_EXCEPT, '198.18.0.0/15']);
    expect(v6.except).toEqual([...PUBLIC_INTERNET_IPV6_EXCEPT, 'fd00:10::/56']);
    expect(defaultSandboxNetworkPolicySpec('t').egress![0].to![0].ipBlock!.except).toEqual([...PUBLIC_INTERNET_IPV4_EXCEPT]);
  });
});
