import fc from 'fast-check';
import { isDns1123Label, parsePort, parseTarget, parseTimeoutSeconds } from '../../src/router/addressing';
import { AddressGuard, DEFAULT_ALLOWED_POD_CIDRS, parseCidr } from '../../src/router/guard';

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);

describe('header addressing', () => {
  test('defaults: namespace default, port 8888', () => {
    expect(parseTarget('/x?y=1', { 'x-sandbox-id': 'sb' }, '')).toEqual({ namespace: 'default', id: 'sb', port: 8888, podIP: undefined, uid: undefined, timeoutMs: undefined, path: '/x?y=1' });
  });

  test('upstream error texts', () => {
    expect(parseTarget('/', {}, '')).toEqual({ status: 400, detail: 'X-Sandbox-ID header is required.' });
    expect(parseTarget('/', { 'x-sandbox-id': 'Bad_ID' }, '')).toEqual({ status: 400, detail: 'Invalid sandbox ID format.' });
    expect(parseTarget('/', { 'x-sandbox-id': 'a', 'x-sandbox-namespace': 'NS' }, '')).toEqual({ status: 400, detail: 'Invalid namespace format.' });
    expect(parseTarget('/', { 'x-sandbox-id': 'a', 'x-sandbox-port': '70000' }, '')).toEqual({ status: 400, detail: 'Invalid port format.' });
    expect(parseTarget('/', { 'x-sandbox-id': 'a', 'x-sandbox-pod-ip': 'nope' }, '')).toEqual({ status: 400, detail: 'Invalid target IP address.' });
  });

  test('any valid label/port combination parses back to itself, escapes preserved', () => {
    fc.assert(fc.property(label, label, fc.integer({ min: 1, max: 65535 }), fc.webPath(), (ns, id, port, path) => {
      const url = `${path || '/'}%2Fa`;
      const t = parseTarget(url, { 'x-sandbox-id': id, 'x-sandbox-namespace': ns, 'x-sandbox-port': String(port) }, '');
      expect(t).toMatchObject({ namespace: ns, id, port, path: url });
    }));
  });

  test('ports: only plain decimal 1..65535', () => {
    fc.assert(fc.property(fc.string(), (s) => {
      const p = parsePort(s);
      if (p !== undefined) expect(String(p)).toBe(s.replace(/^0+(?=\d)/, ''));
    }));
    expect(parsePort('0')).toBeUndefined();
    expect(parsePort('+80')).toBeUndefined();
    expect(parsePort('65535')).toBe(65535);
  });

  test('labels never accept uppercase, dots or edge dashes', () => {
    fc.assert(fc.property(fc.string({ maxLength: 70 }), (s) => {
      if (isDns1123Label(s)) expect(s).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      if (isDns1123Label(s)) expect(s.length).toBeLessThanOrEqual(63);
    }));
  });

  test('X-Sandbox-Timeout: positive finite float seconds, otherwise ignored', () => {
    expect(parseTimeoutSeconds('59.5')).toBe(59_500);
    expect(parseTimeoutSeconds('110.0')).toBe(110_000);
    for (const bad of ['0', '-1', 'inf', 'NaN', 'Infinity', 'abc', '']) expect(parseTimeoutSeconds(bad)).toBeUndefined();
  });
});

describe('path addressing', () => {
  test('<prefix>/<ns>/<id>/<port>/rest: prefix removed, rest and query kept byte for byte', () => {
    fc.assert(fc.property(label, label, fc.integer({ min: 1, max: 65535 }), fc.webPath(), fc.webQueryParameters(), (ns, id, port, rest, query) => {
      const upstream = `/seg${rest}%2F${query ? `?${query}` : ''}`;
      const t = parseTarget(`/router/${ns}/${id}/${port}${upstream}`, { 'x-sandbox-id': 'ignored' }, '/router');
      expect(t).toMatchObject({ namespace: ns, id, port, path: upstream });
    }));
  });

  test('errors', () => {
    expect(parseTarget('/router/ns/id', {}, '/router')).toEqual({ status: 400, detail: 'Path-routed request must have the form /router/<namespace>/<id>/<port>/...' });
    expect(parseTarget('/router/ns/%zz/80/', {}, '/router')).toEqual({ status: 400, detail: 'Invalid percent-encoding in path.' });
    expect(parseTarget('/router/ns/id/0/', {}, '/router')).toEqual({ status: 400, detail: 'Invalid port format.' });
  });

  test('other paths fall through to header routing', () => {
    expect(parseTarget('/routerx/a/b/1', { 'x-sandbox-id': 'sb' }, '/router')).toMatchObject({ id: 'sb', path: '/routerx/a/b/1' });
  });

  test('the sandbox port and path come from the URL, never from headers', () => {
    expect(parseTarget('/router/ns/sb/8080/', { 'x-sandbox-pod-ip': '10.0.0.1', 'x-sandbox-port': '22' }, '/router')).toEqual({ namespace: 'ns', id: 'sb', port: 8080, path: '/' });
  });
});

describe('address guard', () => {
  const guard = new AddressGuard(DEFAULT_ALLOWED_POD_CIDRS, ['10.9.9.9']);
  const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));

  test('never link-local, whatever the allowed CIDRs', () => {
    const everything = new AddressGuard(['0.0.0.0/0', '::/0']);
    fc.assert(fc.property(fc.nat(255), fc.nat(255), (a, b) => {
      expect(everything.check(`169.254.${a}.${b}`)).toMatch(/link-local/);
      expect(everything.check(`::ffff:169.254.${a}.${b}`)).toMatch(/link-local/);
    }));
    expect(everything.check('fe80::1')).toMatch(/link-local/);
    expect(everything.check('febf::1')).toMatch(/link-local/);
  });

  test('default allows exactly RFC1918, CGNAT and ULA', () => {
    fc.assert(fc.property(v4, (ip) => {
      const [a, b] = ip.split('.').map(Number);
      const inside = a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b < 128);
      expect(guard.check(ip) === undefined).toBe(inside && ip !== '10.9.9.9');
    }));
    expect(guard.check('fd00::1')).toBeUndefined();
    expect(guard.check('2001:db8::1')).toMatch(/outside/);
    expect(guard.check('127.0.0.1')).toMatch(/outside/);
  });

  test('the router\'s own addresses are refused', () => {
    expect(guard.check('10.9.9.9')).toMatch(/own/);
    expect(guard.check('::ffff:10.9.9.9')).toMatch(/own/);
  });

  test('CIDR parsing', () => {
    expect(parseCidr('127.64.0.0/12')).toEqual({ network: '127.64.0.0', prefix: 12, family: 'ipv4' });
    expect(() => parseCidr('10.0.0.0/33')).toThrow(/not a CIDR/);
    expect(() => parseCidr('host/8')).toThrow(/not a CIDR/);
  });
});
